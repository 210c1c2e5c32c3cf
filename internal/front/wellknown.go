package front

import (
	"net/http"
	"net/url"
	"strings"
)

// wellKnownPR is RFC 9728's well-known path for OAuth protected-resource metadata.
const wellKnownPR = "/.well-known/oauth-protected-resource"

// ResourceMetadata serves the gateway's OAuth 2.0 protected-resource metadata (RFC 9728), the
// discovery document MCP clients read after a 401: which authorization servers issue tokens
// for this gateway and with which scopes. It also names the metadata URL that a 401 on an MCP
// route carries in WWW-Authenticate (resource_metadata).
type ResourceMetadata struct {
	// Public derives the gateway's public base URL.
	Public *PublicURL
	// AuthorizationServers are the issuers clients obtain tokens from (JWT_ISSUER).
	AuthorizationServers []string
	// Scopes are advertised as scopes_supported; empty omits the member.
	Scopes []string
	// Resolve maps a URL server segment to a server; false means 404.
	Resolve func(segment string) (string, bool)
	// ClientRun reports whether a server's clients run its OAuth flow through the gateway's
	// per-server authorization server (<base>/{server}); its /{server}/mcp document then names
	// that one. nil means none does.
	ClientRun func(server string) bool
}

// Register adds the metadata routes: the root document (the whole gateway), the one for
// /mcp and the one for each /{server}/mcp.
func (m *ResourceMetadata) Register(mux *http.ServeMux) {
	mux.HandleFunc("GET "+wellKnownPR, func(w http.ResponseWriter, r *http.Request) { m.serve(w, r, "") })
	mux.HandleFunc("GET "+wellKnownPR+"/mcp", func(w http.ResponseWriter, r *http.Request) { m.serve(w, r, "/mcp") })
	mux.HandleFunc("GET "+wellKnownPR+"/{server}/mcp", func(w http.ResponseWriter, r *http.Request) {
		seg, name := r.PathValue("server"), r.PathValue("server")
		if m.Resolve != nil {
			var ok bool
			if name, ok = m.Resolve(seg); !ok {
				http.Error(w, "no such MCP server", http.StatusNotFound)
				return
			}
		}
		if m.ClientRun != nil && m.ClientRun(name) {
			base := m.Public.Base(r)
			writeJSON(w, http.StatusOK, protectedResource{Resource: base + "/" + url.PathEscape(seg) + "/mcp",
				AuthorizationServers: []string{base + "/" + url.PathEscape(seg)}, BearerMethodsSupported: []string{"header"}, ResourceName: "mcpgw"})
			return
		}
		m.serve(w, r, "/"+url.PathEscape(seg)+"/mcp")
	})
}

// protectedResource is RFC 9728's metadata document.
type protectedResource struct {
	Resource               string   `json:"resource"`
	AuthorizationServers   []string `json:"authorization_servers,omitempty"`
	ScopesSupported        []string `json:"scopes_supported,omitempty"`
	BearerMethodsSupported []string `json:"bearer_methods_supported"`
	ResourceName           string   `json:"resource_name,omitempty"`
}

func (m *ResourceMetadata) serve(w http.ResponseWriter, r *http.Request, path string) {
	writeJSON(w, http.StatusOK, protectedResource{
		Resource: m.Public.Base(r) + path, AuthorizationServers: m.AuthorizationServers,
		ScopesSupported: m.Scopes, BearerMethodsSupported: []string{"header"}, ResourceName: "mcpgw",
	})
}

// URL returns the metadata URL for the MCP route r is on: /{server}/mcp's own, else /mcp's.
func (m *ResourceMetadata) URL(r *http.Request) string {
	if seg := r.PathValue("server"); seg != "" {
		return m.Public.Base(r) + wellKnownPR + "/" + url.PathEscape(seg) + "/mcp"
	}
	return m.Public.Base(r) + wellKnownPR + "/mcp"
}

// Resources returns the resource URLs a token for r may name as its audience (RFC 8707): the
// gateway's base, /mcp, and the /{server}/mcp r is on.
func (m *ResourceMetadata) Resources(r *http.Request) []string {
	base := m.Public.Base(r)
	out := []string{base, base + "/mcp"}
	if seg := r.PathValue("server"); seg != "" {
		out = append(out, base+"/"+url.PathEscape(seg)+"/mcp")
	}
	return out
}

// challenge adds resource_metadata to a Bearer challenge, keeping its other parameters.
func (m *ResourceMetadata) challenge(r *http.Request, c string) string {
	if m == nil {
		return c
	}
	rm := `resource_metadata="` + m.URL(r) + `"`
	if c == "" || strings.EqualFold(strings.TrimSpace(c), "bearer") {
		return "Bearer " + rm
	}
	return c + ", " + rm
}
