package e2e

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

// test_subscription_partial_setup_releases_upstream_capacity: with a
// listener limit of 1 per caller (alice), a listen needing two upstream
// listeners is refused with an MCP error, never acknowledged, and leaves no
// upstream listener open; a retry needing one succeeds; a listen asking for
// nothing honours nothing and holds no listener.
func TestSubscriptionPartialSetupReleasesUpstreamCapacity(t *testing.T) {
	t.Parallel()
	first, second := startListenPeer(t, true), startListenPeer(t, true)
	identity := aliceIdentity()
	identity["object_permission"] = map[string]any{"object_permission_id": "subscription-permission", "mcp_servers": []string{"subscription-server", "second-server"}}
	hook, _ := subscriptionAuth(t, identity)
	gw := subscriptionGateway(t, first.url, hook, fmt.Sprintf(`  second:
    server_id: second-server
    url: %s
    transport: http
    protocol_version: "2026-07-28"
`, second.url), "  max_listeners_per_caller: 1\n")
	hdr := subscriberHeaders(subscriptionKey, "subscriptions/listen")
	open := func() int64 { return first.open.Load() + second.open.Load() }

	status, events := listenWith(t, gw.url+"/mcp/", hdr, `{"toolsListChanged":true}`)
	answer := nextEvent(events, 15*time.Second)
	if status == 200 && !strings.Contains(answer, `"error"`) || strings.Contains(answer, "notifications/subscriptions/acknowledged") {
		t.Fatalf("a listen needing two listeners with room for one: %d %q, want an MCP error and no acknowledgement", status, answer)
	}
	if !strings.Contains(answer, `"error"`) || !strings.Contains(answer, `"id":"L1"`) {
		t.Fatalf("the refusal is not an MCP error: %d %q", status, answer)
	}
	for deadline := time.Now().Add(3 * time.Second); open() != 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d upstream listeners left open by the refused listen", open())
		}
	}

	status, events = listenWith(t, gw.url+"/peer/mcp", hdr, `{"toolsListChanged":true}`)
	if ack := nextEvent(events, 15*time.Second); status != 200 || !strings.Contains(ack, "notifications/subscriptions/acknowledged") || !strings.Contains(ack, `"toolsListChanged":true`) {
		t.Fatalf("a retry needing one listener: %d %q", status, ack)
	}
	if n := first.open.Load(); n != 1 {
		t.Fatalf("the retry holds %d upstream listeners, want 1", n)
	}
	// The one listener alice may hold is taken.
	if status, refused := listenWith(t, gw.url+"/second/mcp", hdr, `{"toolsListChanged":true}`); status == 200 {
		if ev := nextEvent(refused, 15*time.Second); !strings.Contains(ev, `"error"`) {
			t.Fatalf("a listen beyond alice's capacity: %d %q", status, ev)
		}
	}

	status, events = listenWith(t, gw.url+"/second/mcp", hdr, `{}`)
	ack := nextEvent(events, 15*time.Second)
	if status != 200 || !strings.Contains(ack, "notifications/subscriptions/acknowledged") || strings.Contains(ack, "toolsListChanged") {
		t.Fatalf("a listen asking for nothing: %d %q, want an acknowledgement honouring nothing", status, ack)
	}
	if n := second.open.Load(); n != 0 {
		t.Fatalf("a listen asking for nothing holds %d upstream listeners", n)
	}
}

// A legacy caller's GET stream needs one listener per upstream it follows:
// beyond the caller's capacity it is refused (503, Retry-After) rather than
// opened deaf, and within it, it opens.
func TestLegacyStreamBeyondListenerCapacityIsRefused(t *testing.T) {
	t.Parallel()
	first, second := startListenPeer(t, true), startListenPeer(t, true)
	identity := aliceIdentity()
	identity["object_permission"] = map[string]any{"object_permission_id": "subscription-permission", "mcp_servers": []string{"subscription-server", "second-server"}}
	hook, _ := subscriptionAuth(t, identity)
	gw := subscriptionGateway(t, first.url, hook, fmt.Sprintf(`  second:
    server_id: second-server
    url: %s
    transport: http
    protocol_version: "2026-07-28"
`, second.url), "  max_listeners_per_caller: 1\n")
	get := func(path string) *http.Response {
		status, hdr, body := rpc(t, gw.url+path, legacyHeaders(subscriptionKey, ""), `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
		sid := hdr.Get("Mcp-Session-Id")
		if status != 200 || sid == "" {
			t.Fatalf("initialize on %s: %d %v", path, status, body)
		}
		ctx, cancel := context.WithCancel(context.Background())
		t.Cleanup(cancel)
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, gw.url+path, nil)
		for k, v := range legacyHeaders(subscriptionKey, sid) {
			req.Header.Set(k, v)
		}
		req.Header.Set("Accept", "text/event-stream")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { resp.Body.Close() })
		return resp
	}
	if resp := get("/mcp/"); resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("a GET stream following two upstreams with room for one: %d", resp.StatusCode)
	}
	if n := first.open.Load() + second.open.Load(); n != 0 {
		t.Fatalf("the refused stream left %d upstream listeners open", n)
	}
	if resp := get("/peer/mcp"); resp.StatusCode != http.StatusOK {
		t.Fatalf("a GET stream following one upstream: %d", resp.StatusCode)
	}
	if n := first.open.Load(); n != 1 {
		t.Fatalf("the open stream follows with %d upstream listeners, want 1", n)
	}
}
