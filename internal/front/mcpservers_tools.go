package front

import (
	"encoding/json"
	"net/http"

	"github.com/mcpgw/mcpgw/internal/gateway"
	"github.com/mcpgw/mcpgw/internal/identity"
)

// V1Tools answers GET /v1/mcp/tools for c: every tool of the servers c may see, with its bare
// name and mcp_info.server_name, as the REST listing gathers them (MCPServersConfig.Tools).
func (h *MCP) V1Tools(w http.ResponseWriter, r *http.Request, c *identity.Caller) {
	servers := h.cfg.Gateway.Visible(gateway.Operation{Caller: c})
	results := h.restListEach(r, c, servers)
	tools := []json.RawMessage{}
	for _, res := range results {
		tools = append(tools, res.tools...)
	}
	writeJSONValue(w, http.StatusOK, map[string]any{"tools": tools})
}
