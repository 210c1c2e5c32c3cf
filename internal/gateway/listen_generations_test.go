package gateway

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/mcpgw/mcpgw/internal/fakemcp"
	"github.com/mcpgw/mcpgw/internal/mcp"
)

// TestOnlyTheNewestGatewayNotifies: gateways over one Listens share their
// followers, so only the newest to TakeOver delivers what the hub hears: a
// follower hears each notification once while both are subscribed.
func TestOnlyTheNewestGatewayNotifies(t *testing.T) {
	ls := NewListens()
	old, next := New(Config{Listens: ls}), New(Config{Listens: ls})
	old.TakeOver()
	got := 0
	defer ls.hub.add("fs", &hubSub{cred: "c", filter: &Filter{ToolsListChanged: true}, emit: func(string, json.RawMessage) { got++ }})()
	notifyBoth := func() {
		old.Notify("fs", "c", mcp.NotifToolsListChanged, json.RawMessage(`{}`))
		next.Notify("fs", "c", mcp.NotifToolsListChanged, json.RawMessage(`{}`))
	}
	notifyBoth()
	if got != 1 {
		t.Fatalf("before the take-over: %d deliveries, want 1 (the old gateway's)", got)
	}
	if kept, ended := next.TakeOver(); kept != 0 || ended != 0 {
		t.Fatalf("TakeOver with no listens = %d kept, %d ended", kept, ended)
	}
	notifyBoth()
	if got != 2 {
		t.Fatalf("after the take-over: %d deliveries in all, want 2", got)
	}
}

// TestTakeOverKeepsOnlyListensOnUnchangedClients: a listen moves to the new
// gateway when every server it follows has the same client there and its
// caller sees the same servers; a listen following a server whose client
// changed is ended. After End no listen may start.
func TestTakeOverKeepsOnlyListensOnUnchangedClients(t *testing.T) {
	ls := NewListens()
	fa, fb := fakemcp.New(t, fakemcp.Opts{}), fakemcp.New(t, fakemcp.Opts{})
	old := newTestGateway(t, Config{Listens: ls}, upSpec{name: "a", fake: fa}, upSpec{name: "b", fake: fb})
	old.TakeOver()
	fresh := newTestGateway(t, Config{Listens: ls}, upSpec{name: "b", fake: fb}) // b with a new client
	next := New(Config{Listens: ls, Servers: []*Server{old.servers["a"], fresh.servers["b"]},
		Policy: old.cfg.Policy, Catalog: old.cfg.Catalog, Info: testInfo})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	runs := map[string]*listenRun{}
	ended := map[string]bool{}
	for _, scope := range []string{"a", "b", "a,b"} {
		op := Operation{Caller: master, Scope: strings.Split(scope, ",")}
		servers := old.visible(&op)
		r := &listenRun{op: op, servers: servers, g: old, cancel: func() { ended[scope] = true },
			d: old.newDelivery(ctx, cancel, &op, servers, &Filter{ToolsListChanged: true}, &Listener{Emit: func(string, json.RawMessage, time.Time) bool { return true }})}
		if !ls.register(r) {
			t.Fatal("register refused before End")
		}
		runs[scope] = r
	}
	if kept, n := next.TakeOver(); kept != 1 || n != 2 {
		t.Fatalf("TakeOver = %d kept, %d ended; want 1, 2", kept, n)
	}
	if ended["a"] || !ended["b"] || !ended["a,b"] {
		t.Fatalf("ended = %v, want b and a,b (they follow b, whose client changed)", ended)
	}
	if g, _ := runs["a"].current(); g != next {
		t.Error("the kept listen does not run on the new gateway")
	}
	if cur, _ := runs["a"].d.current(); cur != next {
		t.Error("the kept listen's delivery does not read through the new gateway")
	}
	ls.End()
	if ls.register(&listenRun{g: next, cancel: func() {}}) {
		t.Fatal("register accepted after End")
	}
}
