package e2e

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// followPeer is a go-sdk library server speaking 2025-11-25 over
// streamable HTTP (/mcp, stateful sessions) and HTTP+SSE (/sse), with the
// tool change_tools, which adds the tool "added" (the server then sends
// notifications/tools/list_changed to its sessions). It counts the GET
// requests open on it: a streamable HTTP session's notification stream, or
// an HTTP+SSE connection.
type followPeer struct {
	url  string
	srv  *sdk.Server
	gets atomic.Int32
}

func newFollowPeer(t *testing.T) *followPeer {
	p := &followPeer{srv: sdk.NewServer(&sdk.Implementation{Name: "subscription-peer", Version: "1"}, nil)}
	p.srv.AddTool(&sdk.Tool{Name: "change_tools", InputSchema: map[string]any{"type": "object"}}, func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		p.change()
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "changed"}}}, nil
	})
	get := func(*http.Request) *sdk.Server { return p.srv }
	mux := http.NewServeMux()
	mux.Handle("/mcp", sdk.NewStreamableHTTPHandler(get, nil))
	mux.Handle("/sse", sdk.NewSSEHandler(get, nil))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			p.gets.Add(1)
			defer p.gets.Add(-1)
		}
		mux.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	p.url = srv.URL
	return p
}

// change adds the tool "added", as the tool change_tools does when called
// directly on the upstream.
func (p *followPeer) change() {
	p.srv.AddTool(&sdk.Tool{Name: "added", InputSchema: map[string]any{"type": "object"}}, func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "new tool"}}}, nil
	})
}

// waitUntil polls cond for up to d.
func waitUntil(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(d); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("after %v: %s", d, what)
		}
	}
}

// listenUntilLeft opens subscriptions/listen for tool changes and returns
// its SSE data lines and a function that leaves it; the channel closes when
// the stream ends.
func listenUntilLeft(t *testing.T, url string, hdr map[string]string) (<-chan string, func()) {
	ctx, cancel := context.WithCancel(context.Background())
	body := `{"jsonrpc":"2.0","id":"L1","method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true},` + modernMeta + `}}`
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	events := make(chan string, 16)
	done := make(chan struct{})
	leave := func() { cancel(); resp.Body.Close(); <-done }
	t.Cleanup(leave)
	go func() {
		defer close(done)
		defer close(events)
		var buf []byte
		tmp := make([]byte, 4096)
		for {
			n, err := resp.Body.Read(tmp)
			buf = append(buf, tmp[:n]...)
			for i := bytes.Index(buf, []byte("\n\n")); i >= 0; i = bytes.Index(buf, []byte("\n\n")) {
				for _, line := range strings.Split(string(buf[:i]), "\n") {
					if d, ok := strings.CutPrefix(line, "data: "); ok {
						select {
						case events <- d:
						case <-ctx.Done():
							return
						}
					}
				}
				buf = buf[i+2:]
			}
			if err != nil {
				return
			}
		}
	}()
	return events, leave
}

// A modern caller listens through the gateway to a 2025-11-25 upstream
// (the seed's "legacy" and "legacy-upstream-sse" cases): the gateway
// follows the upstream's session, which holds a notification stream (the
// session's GET stream, or the HTTP+SSE connection) only while someone
// follows it; the change arrives as a listen event; when the caller leaves,
// the upstream's notification stream closes within 3 s, and none remains
// after gateway shutdown.
func TestLegacyUpstreamFollowClosesWithItsLastListener(t *testing.T) {
	for _, transport := range []string{"http", "sse"} {
		t.Run(transport, func(t *testing.T) {
			t.Parallel()
			p := newFollowPeer(t)
			path := map[string]string{"http": "/mcp", "sse": "/sse"}[transport]
			hook, _ := subscriptionAuth(t, map[string]any{"api_key": subscriptionKey, "user_id": "alice", "user_role": "internal_user",
				"object_permission": map[string]any{"object_permission_id": "subscription-permission", "mcp_servers": []string{"subscription-server"}}})
			gw := startGateway(t, fmt.Sprintf(`model_list: []
mcp_servers:
  peer:
    server_id: subscription-server
    url: %s
    transport: %s
    protocol_version: "2025-11-25"
general_settings:
  master_key: %s
  custom_auth: %s
  store_model_in_db: false
  mcp_advertised_versions: ["2025-11-25", "2026-07-28"]
`, p.url+path, transport, subscriptionKey, hook), map[string]string{"LITELLM_SALT_KEY": "subscription-pagination-key", "LITELLM_DANGEROUSLY_PERMIT_WEAK_OR_UNSET_MASTER_KEY": "true"})
			hdr := func(method string) map[string]string {
				h := modernHeaders(method, "")
				h["Authorization"] = "Bearer " + subscriptionKey
				return h
			}
			tools := func() []string {
				t.Helper()
				status, _, body := rpc(t, gw.url+"/mcp/", hdr("tools/list"), `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{`+modernMeta+`}}`)
				if status != 200 {
					t.Fatalf("tools/list: %d %v", status, body)
				}
				return toolsOf(body)
			}
			if got := tools(); !slices.Contains(got, "peer-change_tools") || slices.Contains(got, "peer-added") {
				t.Fatalf("tools before the change: %v", got)
			}
			if transport == "http" && p.gets.Load() != 0 {
				t.Fatalf("%d notification streams open with nobody listening", p.gets.Load())
			}

			events, leave := listenUntilLeft(t, gw.url+"/mcp/", hdr("subscriptions/listen"))
			if first := <-events; !strings.Contains(first, "notifications/subscriptions/acknowledged") {
				t.Fatalf("first event = %s", first)
			}
			waitUntil(t, 3*time.Second, "no upstream notification stream for the listen", func() bool { return p.gets.Load() == 1 })
			p.change()
			select {
			case ev := <-events:
				if !strings.Contains(ev, "notifications/tools/list_changed") {
					t.Fatalf("event = %s", ev)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("no list change event within 5 s")
			}
			if got := tools(); !slices.Contains(got, "peer-added") {
				t.Fatalf("tools after the change: %v", got)
			}
			if n := p.gets.Load(); n != 1 {
				t.Fatalf("%d upstream notification streams for one listen, want 1", n)
			}
			leave()
			waitUntil(t, 3*time.Second, "the upstream notification stream outlived the listen", func() bool { return p.gets.Load() == 0 })

			// Listening again opens one again; shutting the gateway down
			// leaves none.
			events, _ = listenUntilLeft(t, gw.url+"/mcp/", hdr("subscriptions/listen"))
			if first := <-events; !strings.Contains(first, "notifications/subscriptions/acknowledged") {
				t.Fatalf("first event of the second listen = %s", first)
			}
			waitUntil(t, 3*time.Second, "no upstream notification stream for the second listen", func() bool { return p.gets.Load() == 1 })
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_ = gw.app.Close(ctx)
			waitUntil(t, 10*time.Second, "an upstream notification stream survived gateway shutdown", func() bool { return p.gets.Load() == 0 })
		})
	}
}
