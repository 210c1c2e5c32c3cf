package front

import (
	"net/http"
	"strings"

	"github.com/mcpgw/mcpgw/internal/gateway"
	"github.com/mcpgw/mcpgw/internal/identity"
	"github.com/mcpgw/mcpgw/internal/mcp"
)

// credentials are the caller's credentials the core may forward: every
// header but the gateway's own credential (x-litellm-api-key, and
// Authorization when it carried the key), and the caller's own bearer token
// when Authorization did not carry the key.
func credentials(h http.Header, keyInAuth bool) gateway.Credentials {
	var c gateway.Credentials
	strip := keyInAuth || len(h.Values(identity.HeaderAPIKey)) > 0
	c.Header = h
	if strip {
		c.Header = make(map[string][]string, len(h))
		for k, v := range h {
			if k == http.CanonicalHeaderKey(identity.HeaderAPIKey) || (keyInAuth && k == "Authorization") {
				continue
			}
			c.Header[k] = v
		}
	}
	if !keyInAuth {
		if tok, ok := strings.CutPrefix(h.Get("Authorization"), "Bearer "); ok {
			c.Bearer = strings.TrimSpace(tok)
		}
	}
	return c
}

// paramHeaders are the caller's Mcp-Param-* headers; nil when none.
func paramHeaders(h http.Header) map[string][]string {
	var out map[string][]string
	for k, v := range h {
		if len(k) > len(mcp.HeaderParamPrefix) && strings.EqualFold(k[:len(mcp.HeaderParamPrefix)], mcp.HeaderParamPrefix) {
			if out == nil {
				out = map[string][]string{}
			}
			out[k] = v
		}
	}
	return out
}
