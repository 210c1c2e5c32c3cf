package gateway

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/mcpgw/mcpgw/internal/identity"
	"github.com/mcpgw/mcpgw/internal/jsonrpc"
	"github.com/mcpgw/mcpgw/internal/mcp"
	"github.com/mcpgw/mcpgw/internal/policy"
)

// A tool the caller cannot call is answered in the caller's era, and never
// reaches an upstream: a legacy caller gets an isError tool result (as
// LiteLLM answers), a modern caller -32602 with HTTP 400 for a name it
// cannot see (as 2026-07-28 says of unknown tools); a tool refused by the
// caller's permissions is LiteLLM's in-band refusal in both eras. A hidden
// tool reads exactly like an unknown one.
func TestUnknownHiddenAndForbiddenToolsPerEra(t *testing.T) {
	r := newRouted(t, policy.Server{DisallowedTools: []string{"web-fetch"}}, policy.Server{})
	onlyAlpha := &identity.Caller{KeyHash: "k-alpha", Servers: []string{"alpha"}}
	limited := &identity.Caller{KeyHash: "k-limited", Servers: []string{"alpha"}, ToolPermissions: map[string][]string{"alpha": {"search"}}}
	const (
		notFound   = "not found"
		notAllowed = "is not allowed"
	)
	for _, tc := range []struct {
		name, tool string
		modern     bool
		caller     *identity.Caller
		code       int64  // a JSON-RPC error, or
		text       string // an isError result containing this
	}{
		{"legacy, unknown tool of a visible server", "alpha-nonexistent", false, onlyAlpha, 0, notFound},
		{"legacy, unknown server prefix", "gamma-search", false, onlyAlpha, 0, notFound},
		{"legacy, no prefix", "search", false, onlyAlpha, 0, notFound},
		{"legacy, tool of a server the caller cannot see", "beta-search", false, onlyAlpha, 0, notFound},
		{"legacy, tool refused by the caller's permissions", "alpha-delete", false, limited, 0, notAllowed},
		{"legacy, tool in the server's disallowed_tools", "alpha-web-fetch", false, onlyAlpha, 0, notAllowed},
		{"modern, unknown tool of a visible server", "alpha-nonexistent", true, onlyAlpha, jsonrpc.CodeInvalidParams, ""},
		{"modern, unknown server prefix", "gamma-search", true, onlyAlpha, jsonrpc.CodeInvalidParams, ""},
		{"modern, no prefix", "search", true, onlyAlpha, jsonrpc.CodeInvalidParams, ""},
		{"modern, tool of a server the caller cannot see", "beta-search", true, onlyAlpha, jsonrpc.CodeInvalidParams, ""},
		{"modern, tool refused by the caller's permissions", "alpha-delete", true, limited, 0, notAllowed},
		{"modern, tool in the server's disallowed_tools", "alpha-web-fetch", true, onlyAlpha, 0, notAllowed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := r.alpha.Count(mcp.MethodToolsCall) + r.beta.Count(mcp.MethodToolsCall)
			out := do(t, r.g, Operation{Method: mcp.MethodToolsCall, Params: json.RawMessage(`{"name":"` + tc.tool + `","arguments":{}}`),
				Caller: tc.caller, Surface: era(tc.modern)})
			if after := r.alpha.Count(mcp.MethodToolsCall) + r.beta.Count(mcp.MethodToolsCall); after != before {
				t.Fatal("the call reached an upstream")
			}
			if tc.code != 0 {
				wantError(t, out, tc.code, http.StatusBadRequest)
				return
			}
			res := wantResult(t, out)
			text, _ := res["content"].([]any)[0].(map[string]any)["text"].(string)
			if res["isError"] != true || !strings.Contains(text, tc.text) {
				t.Fatalf("result %s, want isError with %q", out.Result, tc.text)
			}
			if tc.text == notFound && text != "Tool '"+tc.tool+"' not found" {
				t.Fatalf("text %q", text)
			}
		})
	}
	// A malformed call is still a protocol error for a legacy caller.
	wantError(t, do(t, r.g, Operation{Method: mcp.MethodToolsCall, Params: json.RawMessage(`{"arguments":{}}`)}), jsonrpc.CodeInvalidParams, http.StatusOK) // legacy: HTTP 200
}
