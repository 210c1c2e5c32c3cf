package app

import (
	"fmt"
	"os"
	"strings"
	"sync"

	"github.com/mcpgw/mcpgw/internal/config"
	"github.com/mcpgw/mcpgw/internal/gateway"
	"github.com/mcpgw/mcpgw/internal/identity"
	"github.com/mcpgw/mcpgw/internal/upstreamid"
)

// ephemeralKey is the per-process identity signing key, generated once on
// first need and kept across generations.
type ephemeralKey struct {
	once sync.Once
	key  upstreamid.Key
	err  error
}

// identitySigner builds the signer of cfg's signed identities: nil when no
// key is configured and no server forwards identity. Without a configured
// key, a per-process key is generated (and a warning logged).
func (s *shared) identitySigner(cfg *config.Config) (*upstreamid.Signer, error) {
	ic := cfg.General.Identity
	forwards := false
	for _, sv := range cfg.Servers {
		forwards = forwards || sv.ForwardIdentity == config.ForwardIdentityJWT
	}
	var keys []upstreamid.Key
	switch pemText := strings.TrimSpace(ic.SigningKey.Reveal()); {
	case pemText != "":
		raw := []byte(pemText)
		if !strings.HasPrefix(pemText, "-----BEGIN") {
			b, err := os.ReadFile(pemText)
			if err != nil {
				return nil, fmt.Errorf("general_settings.mcp_identity_signing_key: cannot read the key file: %w", err)
			}
			raw = b
		}
		ks, err := upstreamid.ParseKeys(raw)
		if err != nil {
			return nil, fmt.Errorf("general_settings.mcp_identity_signing_key: %w", err)
		}
		keys = ks
	case forwards:
		s.ephemeral.once.Do(func() {
			s.ephemeral.key, s.ephemeral.err = upstreamid.GenerateKey()
			s.log.Warn("general_settings.mcp_identity_signing_key is not set: signed identities use a key made for this process, " +
				"unsuitable for several replicas or restarts (each replica publishes only its own key)")
		})
		if s.ephemeral.err != nil {
			return nil, s.ephemeral.err
		}
		keys = []upstreamid.Key{s.ephemeral.key}
	default:
		return nil, nil
	}
	issuer := ic.Issuer
	if issuer == "" {
		issuer = cfg.General.Public.BaseURL // mcp_public_base_url, else PROXY_BASE_URL
	}
	if issuer == "" {
		issuer = s.env.ProxyBaseURL
	}
	if issuer == "" && forwards {
		s.log.Warn("signed identities have no issuer: set general_settings.mcp_identity_issuer or mcp_public_base_url (or PROXY_BASE_URL) to the gateway's public URL")
	}
	return upstreamid.New(upstreamid.Config{Keys: keys, Issuer: issuer})
}

// identityHook is the gateway.Server.Identity of sv: a token for its URL
// (its name for stdio) in the configured header; nil when sv does not
// forward identity or there is no signer.
func (s *shared) identityHook(signer *upstreamid.Signer, cfg *config.Config, sv config.Server) func(*identity.Caller) (string, string) {
	if signer == nil || sv.ForwardIdentity != config.ForwardIdentityJWT {
		return nil
	}
	header := cfg.General.Identity.Header
	if header == "" {
		header = upstreamid.DefaultHeader
	}
	aud := sv.URL
	if aud == "" {
		aud = sv.Name
	}
	log := s.log
	return func(c *identity.Caller) (string, string) {
		tok, err := signer.Token(c, aud)
		if err != nil {
			log.Error("signing the caller's identity failed", "server", sv.Name, "error", err.Error())
			return "", ""
		}
		return header, tok
	}
}

// withIdentity sets the Identity hook of every gateway server that forwards
// identity.
func (s *shared) withIdentity(servers []*gateway.Server, signer *upstreamid.Signer, cfg *config.Config) {
	byName := make(map[string]config.Server, len(cfg.Servers))
	for _, sv := range cfg.Servers {
		byName[sv.Name] = sv
	}
	for _, gs := range servers {
		gs.Identity = s.identityHook(signer, cfg, byName[gs.Name])
	}
}
