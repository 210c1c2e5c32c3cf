package gateway

import (
	"net/http"
	"testing"

	"github.com/mcpgw/mcpgw/internal/fakemcp"
	"github.com/mcpgw/mcpgw/internal/jsonrpc"
	"github.com/mcpgw/mcpgw/internal/mcp"
)

// A single-server endpoint answers a list of a feature its server lacks as
// the server would (-32601); an aggregate, which advertises every feature,
// lists nothing for it; a feature the server has is listed.
func TestScopedListOfALackingFeature(t *testing.T) {
	tools := fakemcp.New(t, fakemcp.Opts{Legacy: true, Caps: `{"tools":{}}`})
	g := newTestGateway(t, Config{}, upSpec{name: "only", fake: tools})
	for _, tc := range []struct {
		name   string
		method string
		scope  []string
		absent bool
	}{
		{"scoped prompts", mcp.MethodPromptsList, []string{"only"}, true},
		{"scoped resources", mcp.MethodResourcesList, []string{"only"}, true},
		{"scoped templates", mcp.MethodResourcesTemplatesList, []string{"only"}, true},
		{"scoped tools", mcp.MethodToolsList, []string{"only"}, false},
		{"aggregate prompts", mcp.MethodPromptsList, nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := do(t, g, Operation{Method: tc.method, Scope: tc.scope})
			if tc.absent {
				wantError(t, out, jsonrpc.CodeMethodNotFound, http.StatusOK) // a legacy caller's error rides HTTP 200
				return
			}
			wantResult(t, out)
		})
	}
}
