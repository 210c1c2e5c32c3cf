package e2e

import (
	"strings"
	"testing"
	"time"
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
