package gateway

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpgw/mcpgw/internal/fakemcp"
	"github.com/mcpgw/mcpgw/internal/fault"
	"github.com/mcpgw/mcpgw/internal/jsonrpc"
	"github.com/mcpgw/mcpgw/internal/mcp"
)

// Many listens following one upstream, one change announced on each of
// their upstream listens: every listen is told, and the views they compare
// cost one upstream tools/list walk between them, not one each (the walks
// that overlap are shared; a listen comparing later finds the list the
// walk cached).
func TestOneChangeSeenByManyListensCostsOneUpstreamList(t *testing.T) {
	const n = 20
	var lists atomic.Int64
	var tools atomic.Value
	tools.Store([]string{"a"})
	lister := func(json.RawMessage) (json.RawMessage, *jsonrpc.Error) {
		b, _ := json.Marshal(map[string]any{"resultType": "complete", "ttlMs": 60000, "cacheScope": "public", "tools": fakemcp.Tools(tools.Load().([]string)...)})
		return b, nil
	}
	fake := fakemcp.New(t, fakemcp.Opts{Caps: `{"tools":{"listChanged":true}}`,
		Handlers: map[string]fakemcp.Handler{mcp.MethodToolsList: func(p json.RawMessage) (json.RawMessage, *jsonrpc.Error) {
			lists.Add(1)
			return lister(p)
		}}})
	up := controlledUpstream(t, fake, false, false)
	g := newTestGateway(t, Config{ListTimeout: 5 * time.Second}, upSpec{name: "p", fake: fake, url: up.url})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	events := make(chan string, 4*n)
	done := make(chan answered, n)
	for range n {
		acked := make(chan struct{})
		go func() {
			done <- listenRaw(g, ctx, Operation{Caller: alice, Surface: fault.Modern, Method: mcp.MethodSubscriptionsListen}, json.RawMessage(`{"toolsListChanged":true}`),
				func(json.RawMessage) { close(acked) }, func(m string, _ json.RawMessage) { events <- m })
		}()
		<-acked
	}
	before := settled(&lists) // the checks after each acknowledgement are done
	tools.Store([]string{"a", "added"})
	up.push(`{"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{}}`)
	for range n {
		select {
		case m := <-events:
			if m != mcp.NotifToolsListChanged {
				t.Fatalf("event %s", m)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("a listen was not told of the change")
		}
	}
	if got := settled(&lists) - before; got != 1 {
		t.Fatalf("%d listens, one upstream change: %d upstream tools/list walks, want 1", n, got)
	}
	cancel()
	for range n {
		<-done
	}
}

// settled waits until n has not changed for 300 ms (at most 10 s, for a loaded machine) and
// returns it.
func settled(n *atomic.Int64) int64 {
	deadline := time.Now().Add(10 * time.Second)
	for {
		v := n.Load()
		time.Sleep(300 * time.Millisecond)
		if n.Load() == v || time.Now().After(deadline) {
			return n.Load()
		}
	}
}
