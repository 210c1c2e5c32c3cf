package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
)

// twoPeerConfig serves servers a and b (each a stateless go-sdk peer,
// 2026-07-28) behind a master-key gateway; extraA is more of a's YAML, urlA
// replaces a's url when set.
func twoPeerConfig(a, b *listenPeer, urlA, extraA string) string {
	if urlA == "" {
		urlA = a.url
	}
	return fmt.Sprintf(`general_settings:
  master_key: %s
  mcp_advertised_versions: ["2025-11-25", "2026-07-28"]
mcp_servers:
  a:
    url: %s
    transport: http
    protocol_version: "2026-07-28"
%s  b:
    url: %s
    transport: http
    protocol_version: "2026-07-28"
`, testKey, urlA, extraA, b.url)
}

// applyYAML applies yaml to the running gateway, as a reload does.
func applyYAML(t *testing.T, gw *gatewayUnderTest, yaml string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	start := time.Now()
	if err := gw.app.Apply(ctx, loadConfig(t, yaml, func(string) (string, bool) { return "", false })); err != nil {
		t.Fatalf("apply: %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Apply took %v: it waited for a kept listen", d)
	}
}

// listenOn opens a tools listen on path and waits for its acknowledgement.
func listenOn(t *testing.T, gw *gatewayUnderTest, path string) <-chan string {
	t.Helper()
	_, events := listenWith(t, gw.url+path, modernHeaders("subscriptions/listen", ""), `{"toolsListChanged":true}`)
	if first := nextEvent(events, 15*time.Second); !strings.Contains(first, "notifications/subscriptions/acknowledged") {
		t.Fatalf("listen on %s: first event = %q", path, first)
	}
	return events
}

// quiet fails when the listen delivers anything or ends within d.
func quiet(t *testing.T, events <-chan string, d time.Duration, what string) {
	t.Helper()
	select {
	case ev, ok := <-events:
		if !ok {
			t.Fatalf("%s: the listen ended", what)
		}
		t.Fatalf("%s: unexpected event %s", what, ev)
	case <-time.After(d):
	}
}

// expectToolsChanged waits for a tools list change on the listen.
func expectToolsChanged(t *testing.T, events <-chan string, what string) {
	t.Helper()
	if ev := nextEvent(events, 10*time.Second); !strings.Contains(ev, "notifications/tools/list_changed") {
		t.Fatalf("%s: event = %q, want tools/list_changed", what, ev)
	}
}

// expectEnded waits for the listen's stream to end (after its final
// response, if any).
func expectEnded(t *testing.T, events <-chan string, within time.Duration, what string) {
	t.Helper()
	deadline := time.After(within)
	for {
		select {
		case ev, ok := <-events:
			if !ok {
				return
			}
			if strings.Contains(ev, "list_changed") {
				t.Fatalf("%s: a change was delivered instead of the end: %s", what, ev)
			}
		case <-deadline:
			t.Fatalf("%s: the listen did not end within %v", what, within)
		}
	}
}

// TestListenSurvivesMetadataOnlyApply: a config change that keeps a
// server's connection (its description, mcp_info, authorization_url) keeps
// the listens following it, on the same upstream listener, and later
// changes are still delivered.
func TestListenSurvivesMetadataOnlyApply(t *testing.T) {
	t.Parallel()
	a, b := startListenPeer(t, true), startListenPeer(t, true)
	gw := startGateway(t, twoPeerConfig(a, b, "", ""), nil)
	events := listenOn(t, gw, "/a/mcp/")
	waitOpen(t, &a.open, 1, 3*time.Second, "the acknowledged listen")
	applyYAML(t, gw, twoPeerConfig(a, b, "", "    description: changed\n    authorization_url: https://authorization.example/authorize\n    mcp_info:\n      server_name: renamed\n"))
	quiet(t, events, 500*time.Millisecond, "after a metadata-only apply")
	if n := a.open.Load(); n != 1 {
		t.Errorf("%d upstream listeners open after the apply, want the same 1", n)
	}
	triggerUpstream(t, a.url, 2)
	expectToolsChanged(t, events, "a change after the apply")
}

// TestAllowedToolsApplyTellsOnlyChangedViews: a tool filter changed on a
// kept server is a change of what its followers see: a follower whose view
// changed is told list_changed; one following another server is not, and
// both go on.
func TestAllowedToolsApplyTellsOnlyChangedViews(t *testing.T) {
	t.Parallel()
	a, b := startListenPeer(t, true), startListenPeer(t, true)
	gw := startGateway(t, twoPeerConfig(a, b, "", ""), nil)
	onA, onB := listenOn(t, gw, "/a/mcp/"), listenOn(t, gw, "/b/mcp/")
	// A filter that leaves every tool visible changes no view.
	applyYAML(t, gw, twoPeerConfig(a, b, "", "    allowed_tools: [test_simple_text, test_trigger_tool_change]\n"))
	quiet(t, onA, 500*time.Millisecond, "the follower of a, whose view is the same")
	applyYAML(t, gw, twoPeerConfig(a, b, "", "    allowed_tools: [test_simple_text]\n"))
	expectToolsChanged(t, onA, "the follower of a, whose view lost a tool")
	quiet(t, onB, 500*time.Millisecond, "the follower of b")
	quiet(t, onA, 300*time.Millisecond, "the follower of a, told once")
	triggerUpstream(t, b.url, 2)
	expectToolsChanged(t, onB, "a change on b after the apply")
}

// TestURLChangeEndsOnlyThatServersListens: a server whose url changed is a
// new target: the listens following it end, and a listen following only
// another server goes on.
func TestURLChangeEndsOnlyThatServersListens(t *testing.T) {
	t.Parallel()
	a, b := startListenPeer(t, true), startListenPeer(t, true)
	gw := startGateway(t, twoPeerConfig(a, b, "", ""), nil)
	onA, onB := listenOn(t, gw, "/a/mcp/"), listenOn(t, gw, "/b/mcp/")
	onBoth := listenOn(t, gw, "/mcp/")
	// The listens on /a/mcp/ and /mcp/ (one caller, one credential) share
	// one upstream listen on a.
	waitOpen(t, &a.open, 1, 3*time.Second, "a's listeners")
	applyYAML(t, gw, twoPeerConfig(a, b, a.url+"/changed", ""))
	expectEnded(t, onA, 5*time.Second, "the listen on a")
	expectEnded(t, onBoth, 5*time.Second, "the listen on both servers")
	waitOpen(t, &a.open, 0, 3*time.Second, "a's listeners after its url changed")
	quiet(t, onB, 300*time.Millisecond, "the listen on b")
	triggerUpstream(t, b.url, 2)
	expectToolsChanged(t, onB, "a change on b after the apply")
}

// TestRemovedServerListenEndsAndItsToolsAreUnknown: removing a server ends
// its listens, and a call to its tools afterwards is unknown.
func TestRemovedServerListenEndsAndItsToolsAreUnknown(t *testing.T) {
	t.Parallel()
	a, b := startListenPeer(t, true), startListenPeer(t, true)
	gw := startGateway(t, twoPeerConfig(a, b, "", ""), nil)
	onA := listenOn(t, gw, "/a/mcp/")
	applyYAML(t, gw, fmt.Sprintf("general_settings:\n  master_key: %s\n  mcp_advertised_versions: [\"2025-11-25\", \"2026-07-28\"]\nmcp_servers:\n  b:\n    url: %s\n    transport: http\n    protocol_version: \"2026-07-28\"\n", testKey, b.url))
	expectEnded(t, onA, 5*time.Second, "the listen on the removed server")
	status, _, body := rpc(t, gw.url+"/mcp/", modernHeaders("tools/call", "a-test_simple_text"),
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"a-test_simple_text","arguments":{},`+modernMeta+`}}`)
	if status != 400 || errCode(body) != -32602 {
		t.Fatalf("a call to the removed server's tool = %d %v, want 400 -32602 (unknown tool)", status, body)
	}
}
