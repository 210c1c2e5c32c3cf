package e2e

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestSubscriptionUpstreamDeliversDirectly checks the seed upstream itself:
// a modern subscriptions/listen is acknowledged, counted with its
// Authorization, gets the tools list_changed published by change_tools, and
// is no longer counted once the caller leaves.
func TestSubscriptionUpstreamDeliversDirectly(t *testing.T) {
	up := startSubscriptionUpstream(t, subUpstreamOptions{Kind: "tools"})
	hdr := modernHeaders("subscriptions/listen", "")
	hdr["Authorization"] = "Bearer direct"
	events := openListen(t, up.MCPURL(), hdr)
	if first := <-events; !strings.Contains(first, "notifications/subscriptions/acknowledged") || !strings.Contains(first, `"toolsListChanged":true`) {
		t.Fatalf("first event = %s", first)
	}
	if got := up.ListenAuth(); len(got) != 1 || got[0] != "Bearer direct" || up.OpenListeners() != 1 {
		t.Fatalf("listen auth %q, open %d", got, up.OpenListeners())
	}
	up.Change(t)
	select {
	case ev := <-events:
		if !strings.Contains(ev, "notifications/tools/list_changed") {
			t.Fatalf("event = %s", ev)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no list_changed")
	}
	if got := up.Executions(); strings.Join(got, ",") != "change_tools" {
		t.Fatalf("executions %v", got)
	}
}

// TestSubscriptionUpstreamEndsListens checks CloseListensOnChange: change_tools
// ends the open listen with its result and the listener is no longer counted.
func TestSubscriptionUpstreamEndsListens(t *testing.T) {
	up := startSubscriptionUpstream(t, subUpstreamOptions{Kind: "tools", CloseListensOnChange: true})
	events := openListen(t, up.MCPURL(), modernHeaders("subscriptions/listen", ""))
	if first := <-events; !strings.Contains(first, "notifications/subscriptions/acknowledged") {
		t.Fatalf("first event = %s", first)
	}
	up.Change(t)
	deadline := time.After(5 * time.Second)
	for {
		select {
		case ev, ok := <-events:
			if !ok {
				up.WaitListenersClosed(t, 3*time.Second)
				return
			}
			if strings.Contains(ev, `"method":`) {
				t.Fatalf("event after the end: %s", ev)
			}
		case <-deadline:
			t.Fatal("the listen did not end")
		}
	}
}

// TestSubscriptionUpstreamProbeError checks that an armed probe answers -32603, an unarmed one succeeds.
func TestSubscriptionUpstreamProbeError(t *testing.T) {
	u := startSubscriptionUpstream(t, subUpstreamOptions{ProbeError: true})
	if body := directDiscover(t, u); body["result"] == nil {
		t.Fatalf("unarmed discover: %v", body)
	}
	u.ArmProbes(0)
	body := directDiscover(t, u)
	errObj, _ := body["error"].(map[string]any)
	if exercised, _ := u.DisarmProbes(); errObj == nil || errObj["code"] != float64(-32603) || !exercised {
		t.Fatalf("armed discover: %v (exercised %v)", body, exercised)
	}
}

// TestSubscriptionUpstreamProbeBarrierAndHang checks that armed probes wait for each other, or until released.
func TestSubscriptionUpstreamProbeBarrierAndHang(t *testing.T) {
	u := startSubscriptionUpstream(t, subUpstreamOptions{ProbeBarrier: newBarrier(2)})
	u.ArmProbes(0)
	done := make(chan map[string]any, 2)
	for range 2 {
		go func() {
			var body map[string]any
			defer func() { done <- body }() // also when rpc ends this goroutine with t.Fatal
			body = directDiscover(t, u)
		}()
	}
	for range 2 {
		if body := <-done; body["result"] == nil {
			t.Fatalf("barrier discover: %v", body)
		}
	}
	if exercised, arrivals := u.DisarmProbes(); !exercised || arrivals != 2 {
		t.Fatalf("barrier: exercised %v, %d arrivals", exercised, arrivals)
	}
	h := startSubscriptionUpstream(t, subUpstreamOptions{ProbeHang: true})
	h.ArmProbes(0)
	start := time.Now()
	time.AfterFunc(300*time.Millisecond, h.ReleaseProbes)
	if body := directDiscover(t, h); body["result"] == nil || time.Since(start) < 300*time.Millisecond {
		t.Fatalf("hanging discover returned after %s: %v", time.Since(start), body)
	}
}

// TestSubscriptionUpstreamPages checks that tools/list pages one tool at a time in insertion order.
func TestSubscriptionUpstreamPages(t *testing.T) {
	u := startSubscriptionUpstream(t, subUpstreamOptions{Pages: true})
	u.Change(t)
	hdr := modernHeaders("tools/list", "")
	delete(hdr, "Authorization")
	var names []string
	cursor := ""
	for range 3 {
		params := modernMeta
		if cursor != "" {
			params = `"cursor":"` + cursor + `",` + params
		}
		_, _, body := rpc(t, u.MCPURL(), hdr, `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{`+params+`}}`)
		names = append(names, toolsOf(body)...)
		res, _ := body["result"].(map[string]any)
		if cursor, _ = res["nextCursor"].(string); cursor == "" {
			break
		}
	}
	if strings.Join(names, ",") != "change_tools,added" {
		t.Fatalf("pages = %v, want change_tools then added", names)
	}
}

// TestSubscriptionUpstreamNoCapabilities checks that NoCapabilities strips discovery's capabilities and refuses listens with -32601.
func TestSubscriptionUpstreamNoCapabilities(t *testing.T) {
	u := startSubscriptionUpstream(t, subUpstreamOptions{NoCapabilities: true})
	res, _ := directDiscover(t, u)["result"].(map[string]any)
	if caps, _ := res["capabilities"].(map[string]any); len(caps) != 0 {
		t.Fatalf("capabilities %v, want none", caps)
	}
	hdr := modernHeaders("subscriptions/listen", "")
	delete(hdr, "Authorization")
	_, _, body := rpc(t, u.MCPURL(), hdr, `{"jsonrpc":"2.0","id":1,"method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true},`+modernMeta+`}}`)
	if !strings.Contains(fmt.Sprint(body), "-32601") || len(u.ListenAuth()) != 1 {
		t.Fatalf("listen: %v, listen calls %q", body, u.ListenAuth())
	}
}

// TestSubscriptionUpstreamToken checks that the token endpoint records forms and answers a failed renewal with 401.
func TestSubscriptionUpstreamToken(t *testing.T) {
	u := startSubscriptionUpstream(t, subUpstreamOptions{Renewal: "renewal-failed"})
	post := func() int {
		resp, err := http.PostForm(u.URL+"/token", url.Values{"grant_type": {"client_credentials"}, "client_id": {"subscription-service"}, "scope": {"read write"}})
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	first := post()
	u.StartRenewal()
	if second := post(); first != 200 || second != 401 || len(u.TokenForms()) != 2 || u.TokenForms()[1].Get("scope") != "read write" {
		t.Fatalf("token statuses %d %d, forms %v", first, second, u.TokenForms())
	}
}

// TestSubscriptionUpstreamLegacySession checks that a legacy session's GET stream is a listener that gets list_changed until the session ends.
func TestSubscriptionUpstreamLegacySession(t *testing.T) {
	u := startSubscriptionUpstream(t, subUpstreamOptions{})
	changed := make(chan struct{}, 4)
	client := mcp.NewClient(&mcp.Implementation{Name: "legacy", Version: "1"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} }})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: u.MCPURL()}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(3 * time.Second); u.OpenListeners() != 1; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("a legacy session with its GET stream counts %d listeners, want 1", u.OpenListeners())
		}
	}
	u.Change(t)
	select {
	case <-changed:
	case <-time.After(5 * time.Second):
		t.Fatal("the legacy session got no tools list_changed")
	}
	_ = cs.Close()
	u.WaitListenersClosed(t, 3*time.Second)
}

// directDiscover sends server/discover straight to the upstream.
func directDiscover(t *testing.T, u *subUpstream) map[string]any {
	t.Helper()
	hdr := modernHeaders("server/discover", "")
	delete(hdr, "Authorization")
	_, _, body := rpc(t, u.MCPURL(), hdr, `{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{`+modernMeta+`}}`)
	return body
}
