package e2e

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// listenPeer is a go-sdk library server over real HTTP (stateless: it
// speaks 2026-07-28; sessionful: 2025-11-25) for the subscription tests: tool
// test_trigger_tool_change adds a tool (added_N) and so publishes a tools
// list change, and every subscriptions/listen it holds is counted where it
// is served (no proxy between the gateway and the server).
type listenPeer struct {
	url    string
	open   atomic.Int64 // subscriptions/listen requests being served
	added  atomic.Int64
	server *sdk.Server
	// before, when set, sees each request before it is served.
	before atomic.Pointer[func(r *http.Request)]
}

func startListenPeer(t *testing.T, stateless bool) *listenPeer {
	t.Helper()
	p := &listenPeer{server: sdk.NewServer(&sdk.Implementation{Name: "listen-peer", Version: "1"}, nil)}
	schema := map[string]any{"type": "object"}
	p.server.AddTool(&sdk.Tool{Name: "test_trigger_tool_change", InputSchema: schema}, func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		p.addTool()
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "changed"}}}, nil
	})
	p.server.AddTool(&sdk.Tool{Name: "test_simple_text", InputSchema: schema}, func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "simple"}}}, nil
	})
	handler := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return p.server }, &sdk.StreamableHTTPOptions{Stateless: stateless})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if f := p.before.Load(); f != nil {
			(*f)(r)
		}
		if r.Header.Get("Mcp-Method") == "subscriptions/listen" {
			p.open.Add(1)
			defer p.open.Add(-1)
		}
		handler.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	p.url = srv.URL + "/mcp"
	return p
}

// addTool adds the next added_N tool: a tools list change.
func (p *listenPeer) addTool() {
	n := p.added.Add(1)
	p.server.AddTool(&sdk.Tool{Name: fmt.Sprintf("added_%d", n), InputSchema: map[string]any{"type": "object"}}, func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "new tool"}}}, nil
	})
}
