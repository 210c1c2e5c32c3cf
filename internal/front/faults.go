package front

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"

	"github.com/mcpgw/mcpgw/internal/fault"
	"github.com/mcpgw/mcpgw/internal/gateway"
	"github.com/mcpgw/mcpgw/internal/identity"
	"github.com/mcpgw/mcpgw/internal/jsonrpc"
	"github.com/mcpgw/mcpgw/internal/mcp"
)

// answer is an outcome as one surface answers it: a fault encoded by the
// fault table (fault.Encode), or the result, with the headers to send
// (the challenge, Retry-After). Exactly one of err, detail and result is
// set.
type answer struct {
	status     int
	err        *jsonrpc.Error
	detail     string
	result     json.RawMessage
	challenge  string
	retryAfter int // seconds; 0 for none
}

// answerOf encodes out for surface s. Results that a fault turned into an
// in-band result are answered as any result is.
func answerOf(s fault.Surface, method string, out gateway.Outcome) answer {
	if out.Fault == nil {
		return answer{status: http.StatusOK, result: out.Result}
	}
	a := fault.Encode(s, method, out.Fault)
	return answer{status: a.Status, err: a.Err, detail: a.Detail, result: a.Result, challenge: a.Challenge, retryAfter: a.RetryAfter}
}

// writeDetail answers LiteLLM's refusal shape, {"detail": …}.
func writeDetail(w http.ResponseWriter, a answer) {
	writeJSONValue(w, a.status, map[string]string{"detail": a.detail})
}

// setFaultHeaders sends the headers a fault's answer carries: the
// upstream's WWW-Authenticate, and Retry-After when a limit refused it.
func setFaultHeaders(w http.ResponseWriter, a answer) {
	if a.challenge != "" {
		w.Header().Set("WWW-Authenticate", a.challenge)
	}
	if a.retryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(a.retryAfter))
	}
}

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
