package app

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/mcpgw/mcpgw/internal/config"
	"github.com/mcpgw/mcpgw/internal/front"
	"github.com/mcpgw/mcpgw/internal/gateway"
	"github.com/mcpgw/mcpgw/internal/identity"
	"github.com/mcpgw/mcpgw/internal/oauthvault"
	"github.com/mcpgw/mcpgw/internal/seal"
	"github.com/mcpgw/mcpgw/internal/secretbox"
	"github.com/mcpgw/mcpgw/internal/upstream/auth"
)

// newVault builds the per-user token vault over the servers whose credential is each user's
// own OAuth token (auth_type oauth2, oauth2_flow authorization_code); nil when there is none,
// or when tokens could not be kept safely (no store, or no LITELLM_SALT_KEY to encrypt them
// with): those servers then stay degraded for every caller, and a warning says why.
func (s *shared) newVault(servers []config.Server) *oauthvault.Vault {
	var vs []oauthvault.Server
	for _, sv := range servers {
		if sv.AuthType == config.AuthOAuth2 && sv.OAuth2Flow == config.OAuth2AuthorizationCode {
			vs = append(vs, oauthvault.Server{Name: sv.Name, ClientID: sv.ClientID, ClientSecret: sv.ClientSecret.Reveal(),
				AuthorizationURL: sv.AuthorizationURL, TokenURL: sv.TokenURL, Scopes: sv.Scopes})
		}
	}
	if len(vs) == 0 {
		return nil
	}
	if s.store == nil || strings.TrimSpace(s.env.SaltKey) == "" {
		s.log.Warn("servers with oauth2_flow authorization_code need a store (a data dir or database_url) and LITELLM_SALT_KEY " +
			"to keep users' tokens encrypted; no user can authorize them")
		return nil
	}
	box, err := secretbox.New(s.env.SaltKey)
	if err != nil {
		s.log.Warn("cannot build the token vault", "error", err)
		return nil
	}
	sealer, err := seal.New(s.env.SaltKey, oauthvault.StatePurpose, oauthvault.TicketPurpose)
	if err != nil {
		s.log.Warn("cannot build the token vault", "error", err)
		return nil
	}
	v, err := oauthvault.New(oauthvault.Config{Store: s.store, Box: box, Sealer: sealer, Servers: vs,
		HTTPClient: s.httpClient, Logger: s.log})
	if err != nil {
		s.log.Warn("cannot build the token vault", "error", err)
		return nil
	}
	return v
}

// callerTokens is the vault as the gateway asks it: by caller, whose user owns the tokens.
type callerTokens struct{ v *oauthvault.Vault }

func (c callerTokens) Token(ctx context.Context, caller *identity.Caller, server string) (string, error) {
	tok, err := c.v.Token(ctx, callerUser(caller), server)
	if errors.Is(err, oauthvault.ErrNoToken) {
		return "", fmt.Errorf("%w: %w", gateway.ErrCallerTokenAbsent, err)
	}
	return tok, err
}

func (c callerTokens) Refused(ctx context.Context, caller *identity.Caller, server, token string) (string, error) {
	return c.v.Refused(ctx, callerUser(caller), server, token)
}

func (c callerTokens) AuthorizeURL(ctx context.Context, caller *identity.Caller, server string) string {
	base, user := gateway.PublicBase(ctx), callerUser(caller)
	if base == "" || user == "" {
		return ""
	}
	link, err := c.v.AuthorizeLink(user, server)
	if err != nil {
		return ""
	}
	return strings.TrimRight(base, "/") + link
}

// callerUser is the user whose tokens a caller uses: its key's user; "" for none.
func callerUser(c *identity.Caller) string {
	if c == nil {
		return ""
	}
	return c.UserID
}

// registerOAuthFlow serves the flow endpoints on mux: the vault's and the client-run flow's
// (none when there is neither).
func registerOAuthFlow(mux *http.ServeMux, v *oauthvault.Vault, client *front.ClientOAuth, authn *identity.Authenticator,
	resolve func(string) (string, bool), base func(*http.Request) string, visible func(*identity.Caller) []string) {
	if v == nil && client == nil {
		return
	}
	cfg := front.OAuthFlowConfig{Client: client, Auth: authn, Resolve: resolve, PublicBase: base, Visible: visible}
	if v != nil {
		cfg.Flow = v
	}
	front.NewOAuthFlowRoutes(cfg).Register(mux)
}

// newClientOAuth builds the client-run OAuth flow over the authorization-code servers: MCP
// clients run the flow themselves through the gateway's per-server authorization server, under
// the server's configured client. nil when there is no such server or no LITELLM_SALT_KEY to
// seal the flow's state with.
func (s *shared) newClientOAuth(servers []config.Server) *front.ClientOAuth {
	byName := map[string]config.Server{}
	out := map[string]front.ClientOAuthServer{}
	for _, sv := range servers {
		if sv.AuthType == config.AuthOAuth2 && sv.OAuth2Flow == config.OAuth2AuthorizationCode {
			byName[sv.Name] = sv
			out[sv.Name] = front.ClientOAuthServer{AuthorizationURL: sv.AuthorizationURL, ClientID: sv.ClientID, Scopes: sv.Scopes}
		}
	}
	if len(out) == 0 || strings.TrimSpace(s.env.SaltKey) == "" {
		return nil
	}
	sealer, err := seal.New(s.env.SaltKey, front.ClientStatePurpose, front.ClientCodePurpose, front.ClientRegPurpose)
	if err != nil {
		s.log.Warn("cannot build the client-run OAuth flow", "error", err)
		return nil
	}
	client := s.httpClient
	grant := func(ctx context.Context, server string, form url.Values) (front.ClientGrant, bool, error) {
		sv := byName[server]
		form.Set("client_id", sv.ClientID)
		secret := sv.ClientSecret.Reveal()
		if secret != "" {
			form.Set("client_secret", secret)
		}
		redact := secret
		if redact == "" {
			redact = form.Get("code") + form.Get("refresh_token")
		}
		ctx, cancel := context.WithTimeout(ctx, oauthvault.DefaultGrantTimeout)
		defer cancel()
		t, err := auth.GrantToken(ctx, client, sv.TokenURL, form, redact, form.Get("refresh_token"))
		if err != nil {
			return front.ClientGrant{}, auth.Refused(err), err
		}
		g := front.ClientGrant{Access: t.Access, Refresh: t.Refresh}
		if !t.Expiry.IsZero() {
			g.ExpiresIn = int64(t.Expiry.Sub(t.Issued) / time.Second)
		}
		return g, false, nil
	}
	return &front.ClientOAuth{Servers: out, Sealer: sealer, Grant: grant}
}

// registerClientRunMetadata makes the protected-resource metadata of each client-run server's
// /{server}/mcp name the gateway's per-server authorization server; without JWT auth (md nil)
// it serves the metadata documents for that purpose alone.
func registerClientRunMetadata(mux *http.ServeMux, md *front.ResourceMetadata, client *front.ClientOAuth, public *front.PublicURL,
	resolve func(string) (string, bool)) {
	if client == nil {
		return
	}
	clientRun := func(server string) bool { _, ok := client.Servers[server]; return ok }
	if md != nil {
		md.ClientRun = clientRun
		return
	}
	(&front.ResourceMetadata{Public: public, Resolve: resolve, ClientRun: clientRun}).Register(mux)
}
