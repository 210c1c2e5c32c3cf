package front

import (
	"net/http"
	"strings"

	"github.com/mcpgw/mcpgw/internal/gateway"
	"github.com/mcpgw/mcpgw/internal/mcp"
)

// credentials are the caller's credentials the core may forward: every
// header but the gateway's own credential (x-litellm-api-key, and
// Authorization when it carried the key), and the caller's own bearer token
// when Authorization did not carry the key. They share h (the gateway hides
// its credential in them) rather than copy it: a held stream keeps them.
func credentials(h http.Header, keyInAuth bool) gateway.Credentials {
	bearer := ""
	if !keyInAuth {
		if tok, ok := strings.CutPrefix(h.Get("Authorization"), "Bearer "); ok {
			bearer = strings.TrimSpace(tok)
		}
	}
	return gateway.NewCredentials(h, keyInAuth, bearer)
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
