package front

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/mcpgw/mcpgw/internal/seal"
)

// Purposes of the client-run OAuth flow's sealed values; the Sealer given to ClientOAuth must
// know all three.
const (
	// ClientStatePurpose seals the state of one client-run authorization in flight.
	ClientStatePurpose = "oauth-client-state"
	// ClientCodePurpose seals the upstream's authorization code handed to the client.
	ClientCodePurpose = "oauth-client-code"
	// ClientRegPurpose seals a registered client (its redirect URIs) into its client_id.
	ClientRegPurpose = "oauth-client-reg"
)

// Client-run flow bounds.
const (
	// ClientFlowTTL bounds a client-run authorization: its state and the code handed back.
	ClientFlowTTL = 10 * time.Minute
	// ClientRegTTL is how long a registered client_id stays valid.
	ClientRegTTL = 365 * 24 * time.Hour
	// MaxClientBody bounds a registration or token request body.
	MaxClientBody = 64 << 10
	// maxRedirectURIs bounds a registration's redirect_uris.
	maxRedirectURIs = 8
)

// ClientOAuthServer is what the client-run flow needs of an authorization-code server.
type ClientOAuthServer struct {
	AuthorizationURL string
	ClientID         string
	Scopes           []string
}

// ClientGrant is an upstream token answer relayed to the MCP client.
type ClientGrant struct {
	Access, Refresh string
	ExpiresIn       int64 // seconds; 0 when the answer named none
}

// ClientGrantFunc posts form (grant_type and its parameters, no client credentials) to server's
// token endpoint with the server's configured client credentials; refused reports that the
// upstream refused the grant (RFC 6749 400/401/403), as opposed to failing.
type ClientGrantFunc func(ctx context.Context, server string, form url.Values) (g ClientGrant, refused bool, err error)

// ClientOAuth is the client-run OAuth flow: the MCP client discovers a per-server
// authorization server on the gateway and runs the authorization-code flow itself; the gateway
// relays it to the upstream's authorization server under the server's configured client, and
// the client then presents the upstream token on that server's route.
type ClientOAuth struct {
	Servers map[string]ClientOAuthServer
	Sealer  *seal.Sealer
	Grant   ClientGrantFunc
}

// clientState is a client-run authorization in flight, sealed into the upstream's state.
type clientState struct {
	Server    string `json:"s"`
	Redirect  string `json:"r"`
	State     string `json:"st,omitempty"`
	Challenge string `json:"c"`
}

// clientCode is the upstream's code as the client holds it, bound to server and redirect_uri.
type clientCode struct {
	Server   string `json:"s"`
	Redirect string `json:"r"`
	Code     string `json:"c"`
}

// clientReg is a registered client, sealed into its client_id: no state is kept.
type clientReg struct {
	Server    string   `json:"s"`
	Redirects []string `json:"r"`
}

// asMetadata is RFC 8414's authorization server metadata.
type asMetadata struct {
	Issuer                   string   `json:"issuer"`
	AuthorizationEndpoint    string   `json:"authorization_endpoint"`
	TokenEndpoint            string   `json:"token_endpoint"`
	RegistrationEndpoint     string   `json:"registration_endpoint"`
	ResponseTypes            []string `json:"response_types_supported"`
	GrantTypes               []string `json:"grant_types_supported"`
	CodeChallengeMethods     []string `json:"code_challenge_methods_supported"`
	TokenEndpointAuthMethods []string `json:"token_endpoint_auth_methods_supported"`
	ScopesSupported          []string `json:"scopes_supported,omitempty"`
}

// clientServer resolves the path's server to a client-run flow server, or answers 404.
func (o *OAuthFlowRoutes) clientServer(w http.ResponseWriter, r *http.Request) (string, ClientOAuthServer, bool) {
	c := o.cfg.Client
	if c != nil {
		if name, ok := o.cfg.Resolve(r.PathValue("server")); ok {
			if s, ok := c.Servers[name]; ok {
				return name, s, true
			}
		}
	}
	oauthError(w, http.StatusNotFound, "invalid_request", "no server here takes an OAuth authorization")
	return "", ClientOAuthServer{}, false
}

// issuer is the per-server authorization server's issuer: the public base and the server segment.
func (o *OAuthFlowRoutes) issuer(r *http.Request, segment string) string {
	return strings.TrimRight(o.cfg.PublicBase(r), "/") + "/" + url.PathEscape(segment)
}

func (o *OAuthFlowRoutes) metadata(w http.ResponseWriter, r *http.Request) {
	_, s, ok := o.clientServer(w, r)
	if !ok {
		return
	}
	iss := o.issuer(r, r.PathValue("server"))
	writeJSON(w, http.StatusOK, asMetadata{Issuer: iss, AuthorizationEndpoint: iss + "/authorize", TokenEndpoint: iss + "/token",
		RegistrationEndpoint: iss + "/register", ResponseTypes: []string{"code"},
		GrantTypes: []string{"authorization_code", "refresh_token"}, CodeChallengeMethods: []string{"S256"},
		TokenEndpointAuthMethods: []string{"none"}, ScopesSupported: s.Scopes})
}

// oauthError answers an RFC 6749 error object; description never carries secrets.
func oauthError(w http.ResponseWriter, status int, code, description string) {
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, status, map[string]string{"error": code, "error_description": description})
}

// validRedirect accepts an absolute URI without a fragment (RFC 6749 3.1.2); custom schemes
// (native apps) are allowed, javascript/data/file are not.
func validRedirect(s string) bool {
	u, err := url.Parse(s)
	if err != nil || !u.IsAbs() || u.Fragment != "" || len(s) > 2048 {
		return false
	}
	switch strings.ToLower(u.Scheme) {
	case "javascript", "data", "file", "vbscript":
		return false
	case "http", "https":
		return u.Host != ""
	}
	return true
}

func (o *OAuthFlowRoutes) register(w http.ResponseWriter, r *http.Request) {
	server, _, ok := o.clientServer(w, r)
	if !ok {
		return
	}
	var req struct {
		RedirectURIs []string `json:"redirect_uris"`
		ClientName   string   `json:"client_name"`
	}
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, MaxClientBody)).Decode(&req); err != nil {
		oauthError(w, http.StatusBadRequest, "invalid_client_metadata", "the body must be a JSON client registration of at most 64 KiB")
		return
	}
	if len(req.RedirectURIs) == 0 || len(req.RedirectURIs) > maxRedirectURIs {
		oauthError(w, http.StatusBadRequest, "invalid_redirect_uri", "redirect_uris must name 1 to 8 URIs")
		return
	}
	for _, u := range req.RedirectURIs {
		if !validRedirect(u) {
			oauthError(w, http.StatusBadRequest, "invalid_redirect_uri", "a redirect_uri is not an absolute URI without a fragment")
			return
		}
	}
	b, _ := json.Marshal(clientReg{Server: server, Redirects: req.RedirectURIs})
	id, err := o.cfg.Client.Sealer.Seal(ClientRegPurpose, b, ClientRegTTL)
	if err != nil {
		oauthError(w, http.StatusBadRequest, "invalid_client_metadata", "the registration is too large")
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusCreated, map[string]any{"client_id": id, "client_id_issued_at": time.Now().Unix(),
		"redirect_uris": req.RedirectURIs, "client_name": req.ClientName, "token_endpoint_auth_method": "none",
		"grant_types": []string{"authorization_code", "refresh_token"}, "response_types": []string{"code"}})
}

// openReg returns the registered client a client_id names for server.
func (c *ClientOAuth) openReg(id, server string) (clientReg, bool) {
	var reg clientReg
	b, err := c.Sealer.Open(ClientRegPurpose, id)
	if err != nil || json.Unmarshal(b, &reg) != nil || reg.Server != server {
		return clientReg{}, false
	}
	return reg, true
}
