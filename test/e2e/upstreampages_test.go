package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// onePerPageUpstream is the seed's "pages" upstream: a go-sdk server with
// tool change_tools, which adds tool added, and a tools/list that answers
// one tool per page in the order the tools were added, nextCursor being the
// next offset. Like the go-sdk's own lists, its pages are not cacheable
// (ttlMs 0). It records the cursors tools/list was asked with.
type onePerPageUpstream struct {
	url     string
	listens atomic.Int64 // subscriptions/listen requests in flight
	mu      sync.Mutex
	cursors []string
}

func startOnePerPageUpstream(t *testing.T) *onePerPageUpstream {
	t.Helper()
	up := &onePerPageUpstream{}
	srv := sdk.NewServer(&sdk.Implementation{Name: "subscription-peer", Version: "1"}, nil)
	var order []string // guarded by up.mu
	text := func(s string) *sdk.CallToolResult {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: s}}}
	}
	add := func(name string, h sdk.ToolHandler) {
		up.mu.Lock()
		order = append(order, name)
		up.mu.Unlock()
		srv.AddTool(&sdk.Tool{Name: name, InputSchema: map[string]any{"type": "object"}}, h)
	}
	add("change_tools", func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		add("added", func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) { return text("new tool"), nil })
		return text("changed"), nil
	})
	srv.AddReceivingMiddleware(func(next sdk.MethodHandler) sdk.MethodHandler {
		return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
			p, ok := req.GetParams().(*sdk.ListToolsParams)
			if method != "tools/list" || !ok {
				return next(ctx, method, req)
			}
			up.mu.Lock()
			up.cursors = append(up.cursors, p.Cursor)
			names := slices.Clone(order)
			up.mu.Unlock()
			offset, _ := strconv.Atoi(p.Cursor)
			p.Cursor = ""
			res, err := next(ctx, method, req)
			if err != nil {
				return res, err
			}
			out := &sdk.ListToolsResult{Tools: []*sdk.Tool{}}
			for _, tool := range res.(*sdk.ListToolsResult).Tools {
				if offset < len(names) && tool.Name == names[offset] {
					out.Tools = append(out.Tools, tool)
				}
			}
			if offset+1 < len(names) {
				out.NextCursor = strconv.Itoa(offset + 1)
			}
			return out, nil
		}
	})
	mcpHandler := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv },
		&sdk.StreamableHTTPOptions{Stateless: true, JSONResponse: true})
	h := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Mcp-Method") == "subscriptions/listen" {
			up.listens.Add(1)
			defer up.listens.Add(-1)
		}
		mcpHandler.ServeHTTP(w, r)
	}))
	t.Cleanup(h.Close)
	up.url = h.URL + "/mcp"
	return up
}

// drainCursors returns the cursors tools/list was asked with since the last
// call.
func (up *onePerPageUpstream) drainCursors() []string {
	up.mu.Lock()
	defer up.mu.Unlock()
	out := up.cursors
	up.cursors = nil
	return out
}

// TestSubscriptionPagesFollowUpstreamPages is the seed's "pages" case: the
// upstream pages tools/list one tool per page. After the upstream's tools
// change (announced on a subscriptions/listen through the gateway), the
// gateway's first page has a nextCursor and lacks peer-added, and following
// that sealed cursor returns it. The cursor stays bound to its caller's
// scope and method; a REST listing gets every tool at once.
func TestSubscriptionPagesFollowUpstreamPages(t *testing.T) {
	up := startOnePerPageUpstream(t)
	gw := startGateway(t, fmt.Sprintf(`model_list: []
mcp_servers:
  peer:
    server_id: subscription-server
    url: %s
    transport: http
    protocol_version: "2026-07-28"
general_settings:
  master_key: %s
  store_model_in_db: false
  mcp_advertised_versions: ["2025-11-25", "2026-07-28"]
`, up.url, subscriptionKey), map[string]string{"LITELLM_SALT_KEY": "subscription-pagination-key", "LITELLM_DANGEROUSLY_PERMIT_WEAK_OR_UNSET_MASTER_KEY": "true"})
	hdr := func(method, name string) map[string]string {
		h := modernHeaders(method, name)
		h["Authorization"] = "Bearer " + subscriptionKey
		return h
	}
	list := func(route, method, cursor string) (int, map[string]any) {
		t.Helper()
		params := modernMeta
		if cursor != "" {
			params = `"cursor":` + strconv.Quote(cursor) + `,` + params
		}
		status, _, body := rpc(t, gw.url+route, hdr(method, ""), `{"jsonrpc":"2.0","id":1,"method":"`+method+`","params":{`+params+`}}`)
		return status, body
	}
	nextOf := func(body map[string]any) string {
		res, _ := body["result"].(map[string]any)
		next, _ := res["nextCursor"].(string)
		return next
	}

	// Before the change: one upstream page, one gateway page.
	status, before := list("/mcp/", "tools/list", "")
	if status != 200 || !slices.Equal(toolsOf(before), []string{"peer-change_tools"}) || nextOf(before) != "" {
		t.Fatalf("tools/list before the change: %d %v", status, before)
	}

	events := openListen(t, gw.url+"/mcp/", hdr("subscriptions/listen", ""))
	if first := <-events; !strings.Contains(first, "notifications/subscriptions/acknowledged") {
		t.Fatalf("first event = %s", first)
	}
	for deadline := time.Now().Add(3 * time.Second); up.listens.Load() == 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the acknowledged subscription holds no upstream listener")
		}
	}
	// The upstream's tools change (called directly, not through the gateway).
	trigger := modernHeaders("tools/call", "change_tools")
	delete(trigger, "Authorization")
	if status, _, out := rpc(t, up.url, trigger, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"change_tools","arguments":{},`+modernMeta+`}}`); status != 200 {
		t.Fatalf("trigger upstream: %d %v", status, out)
	}
	select {
	case ev, ok := <-events:
		if !ok || !strings.Contains(ev, "notifications/tools/list_changed") {
			t.Fatalf("event = %q (open %v), want tools list_changed", ev, ok)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no tools list_changed within 5 s")
	}

	// After the change: page 1 has a cursor and lacks peer-added; the
	// cursor's page has it. The gateway walked both upstream pages.
	up.drainCursors()
	status, page1 := list("/mcp/", "tools/list", "")
	next := nextOf(page1)
	if status != 200 || next == "" || slices.Contains(toolsOf(page1), "peer-added") || !slices.Contains(toolsOf(page1), "peer-change_tools") {
		t.Fatalf("page 1 after the change: %d %v", status, page1)
	}
	if got := up.drainCursors(); !slices.Equal(got, []string{"", "1"}) {
		t.Fatalf("upstream tools/list cursors = %q, want a fresh walk of both pages", got)
	}
	if next == "1" || strings.Contains(next, `"1"`) || len(next) < 32 {
		t.Fatalf("the gateway's cursor %q is not a sealed token", next)
	}
	status, page2 := list("/mcp/", "tools/list", next)
	if status != 200 || !slices.Equal(toolsOf(page2), []string{"peer-added"}) || nextOf(page2) != "" {
		t.Fatalf("page 2 after the change: %d %v", status, page2)
	}

	// The cursor is bound: another scope (the server's own route) or
	// method, a tampered or an upstream cursor are refused.
	tampered := []byte(next)
	tampered[len(tampered)/2] ^= 1
	for _, tc := range []struct{ name, route, method, cursor string }{
		{"another scope", "/peer/mcp", "tools/list", next},
		{"another method", "/mcp/", "prompts/list", next},
		{"tampered", "/mcp/", "tools/list", string(tampered)},
		{"the upstream's cursor", "/mcp/", "tools/list", "1"},
	} {
		if status, body := list(tc.route, tc.method, tc.cursor); errCode(body) != -32602 {
			t.Fatalf("%s: %d %v, want -32602", tc.name, status, body)
		}
	}

	// A REST listing (no cursors) holds every tool.
	req, _ := http.NewRequest(http.MethodGet, gw.url+"/mcp-rest/tools/list", nil)
	req.Header.Set("Authorization", "Bearer "+subscriptionKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var rest struct {
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(raw, &rest); err != nil || resp.StatusCode != 200 || len(rest.Tools) != 2 {
		t.Fatalf("REST listing: %d %s", resp.StatusCode, raw)
	}
}
