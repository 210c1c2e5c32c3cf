package ui

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/mcpgw/mcpgw/internal/mcp"
)

// TestBuildMCPMakesAModernRequest: the page's request becomes a 2026-07-28 request whose _meta
// the UI sets (a progressToken only when asked, whatever _meta the page sent), with the headers
// the gateway checks: Mcp-Name encoded when it is not plain ASCII, and a tool's Mcp-Param-*
// from its x-mcp-header annotations.
func TestBuildMCPMakesAModernRequest(t *testing.T) {
	schema := `{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"}}}`
	body, h, err := buildMCP(mcpRequest{Method: "tools/call", Progress: true, InputSchema: json.RawMessage(schema),
		Params: json.RawMessage(`{"name":"srv-wetter_ü","arguments":{"region":"eu"},"_meta":{"progressToken":"theirs"}}`)})
	if err != nil {
		t.Fatal(err)
	}
	var msg struct {
		Method string `json:"method"`
		Params struct {
			Name string         `json:"name"`
			Meta map[string]any `json:"_meta"`
		} `json:"params"`
	}
	if err := json.Unmarshal(body, &msg); err != nil {
		t.Fatal(err)
	}
	if msg.Method != "tools/call" || msg.Params.Name != "srv-wetter_ü" {
		t.Errorf("message = %s", body)
	}
	meta := msg.Params.Meta
	if meta[mcp.MetaProtocolVersion] != mcp.V20260728 || meta[mcp.MetaProgressToken] != uiProgressToken || meta[mcp.MetaClientCapabilities] == nil {
		t.Errorf("_meta = %v", meta)
	}
	if name, err := mcp.DecodeHeaderValue(h.Get(mcp.HeaderName)); err != nil || name != "srv-wetter_ü" || !strings.HasPrefix(h.Get(mcp.HeaderName), "=?base64?") {
		t.Errorf("Mcp-Name = %q (%q, %v)", h.Get(mcp.HeaderName), name, err)
	}
	if h.Get(mcp.HeaderProtocolVersion) != mcp.V20260728 || h.Get(mcp.HeaderMethod) != "tools/call" || h.Get("Mcp-Param-Region") != "eu" {
		t.Errorf("headers = %v", h)
	}

	body, h, err = buildMCP(mcpRequest{Method: "prompts/list"})
	if err != nil || strings.Contains(string(body), mcp.MetaProgressToken) || h.Get(mcp.HeaderName) != "" {
		t.Errorf("a list without progress: %s %v %v", body, h, err)
	}
	for name, in := range map[string]mcpRequest{
		"a read naming no URI": {Method: "resources/read", Params: json.RawMessage(`{}`)},
		"a URI not a string":   {Method: "resources/read", Params: json.RawMessage(`{"uri":7}`)},
		"params not an object": {Method: "tools/list", Params: json.RawMessage(`"x"`)},
	} {
		if _, _, err := buildMCP(in); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}
