package app

import (
	"context"
	"net/http"
	"strings"

	"github.com/mcpgw/mcpgw/internal/config"
	"github.com/mcpgw/mcpgw/internal/front"
	"github.com/mcpgw/mcpgw/internal/gateway"
	"github.com/mcpgw/mcpgw/internal/identity"
	"github.com/mcpgw/mcpgw/internal/oauthvault"
	"github.com/mcpgw/mcpgw/internal/seal"
	"github.com/mcpgw/mcpgw/internal/secretbox"
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
	return c.v.Token(ctx, callerUser(caller), server)
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

// registerOAuthFlow serves the vault's flow endpoints on mux (none without a vault).
func registerOAuthFlow(mux *http.ServeMux, v *oauthvault.Vault, authn *identity.Authenticator, resolve func(string) (string, bool),
	base func(*http.Request) string) {
	if v == nil {
		return
	}
	front.NewOAuthFlowRoutes(front.OAuthFlowConfig{Flow: v, Auth: authn, Resolve: resolve, PublicBase: base}).Register(mux)
}
