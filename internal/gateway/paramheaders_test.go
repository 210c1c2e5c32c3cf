package gateway

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/mcpgw/mcpgw/internal/fakemcp"
	"github.com/mcpgw/mcpgw/internal/fault"
	"github.com/mcpgw/mcpgw/internal/mcp"
)

// A modern caller's Mcp-Param-* headers must agree with the arguments of a
// tools/call whose tool annotates them; the catalog's listing decides which
// arguments are annotated, and a refused call never reaches the upstream.
func TestCallerParamHeadersAreChecked(t *testing.T) {
	up := fakemcp.New(t, fakemcp.Opts{
		Lists: map[string][]json.RawMessage{mcp.MethodToolsList: {json.RawMessage(
			`{"name":"geo","inputSchema":{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"}}}}`)}},
		Handlers: map[string]fakemcp.Handler{mcp.MethodToolsCall: echo("s")},
	})
	g := newTestGateway(t, Config{}, upSpec{name: "s", fake: up})
	params := json.RawMessage(`{"name":"s-geo","arguments":{"region":"eu"}}`)
	for _, tc := range []struct {
		name    string
		surface fault.Surface
		headers map[string][]string
		refused bool
	}{
		{"modern, header agrees", fault.Modern, map[string][]string{"Mcp-Param-Region": {"eu"}}, false},
		{"modern, header missing", fault.Modern, nil, true},
		{"modern, header disagrees", fault.Modern, map[string][]string{"Mcp-Param-Region": {"us"}}, true},
		{"legacy callers send none", fault.Legacy, nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := up.Count(mcp.MethodToolsCall)
			out := do(t, g, Operation{Method: mcp.MethodToolsCall, Params: params, Surface: tc.surface, ParamHeaders: tc.headers})
			if !tc.refused {
				echoed(t, out, "s")
				return
			}
			wantError(t, out, mcp.CodeHeaderMismatch, http.StatusBadRequest)
			if up.Count(mcp.MethodToolsCall) != before {
				t.Fatal("a refused call reached the upstream")
			}
		})
	}
}
