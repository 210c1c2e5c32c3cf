package gateway

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpgw/mcpgw/internal/fault"
	"github.com/mcpgw/mcpgw/internal/identity"
	"github.com/mcpgw/mcpgw/internal/mcp"
)

// sharedListener is one listen a shared-listen test holds open.
type sharedListener struct {
	cancel context.CancelFunc
	events chan string
	done   chan answered
}

// openListener starts a tools listen for caller with the forwarded
// X-Upstream-Token token and waits for its acknowledgement.
func openListener(t *testing.T, g *Gateway, caller *identity.Caller, token string) *sharedListener {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	l := &sharedListener{cancel: cancel, events: make(chan string, 8), done: make(chan answered, 1)}
	acked := make(chan struct{})
	op := Operation{Caller: caller, Surface: fault.Modern, Method: mcp.MethodSubscriptionsListen,
		Credentials: NewCredentials(header("X-Upstream-Token", token), false, "")}
	go func() {
		l.done <- listenRaw(g, ctx, op, json.RawMessage(`{"toolsListChanged":true}`),
			func(json.RawMessage) { close(acked) }, func(m string, _ json.RawMessage) { l.events <- m })
	}()
	select {
	case <-acked:
	case out := <-l.done:
		t.Fatalf("listen ended unacknowledged: %+v", out)
	case <-time.After(10 * time.Second):
		t.Fatal("listen not acknowledged")
	}
	t.Cleanup(func() { cancel(); <-l.done })
	return l
}

// told waits for the listener to be told of a tools list change.
func (l *sharedListener) told(t *testing.T, who string) {
	t.Helper()
	select {
	case m := <-l.events:
		if m != mcp.NotifToolsListChanged {
			t.Fatalf("%s: event %s", who, m)
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("%s was not told of the change", who)
	}
}

// sharingGateway is a gateway over one modern upstream that forwards the
// caller's X-Upstream-Token, whose listens the test counts and drives.
func sharingGateway(t *testing.T, tools *atomic.Value) (*Gateway, *controlled) {
	t.Helper()
	tools.Store([]string{"a"})
	fake := listChangedFake(t, func() []string { return tools.Load().([]string) })
	up := controlledUpstream(t, fake, false, false)
	g := newTestGateway(t, Config{ListTimeout: 5 * time.Second},
		upSpec{name: "p", fake: fake, url: up.url, server: Server{ExtraHeaders: []string{"X-Upstream-Token"}}})
	return g, up
}

var bob = &identity.Caller{UserID: "bob", KeyHash: "hash-bob"}

// Two callers whose upstream credentials are the same share one upstream
// listen, and both hear what it carries; a third with another credential
// gets a listen of its own.
func TestListensWithOneCredentialShareOneUpstreamListen(t *testing.T) {
	var tools atomic.Value
	g, up := sharingGateway(t, &tools)
	a := openListener(t, g, alice, "team-1")
	b := openListener(t, g, bob, "team-1")
	if n := up.opened.Load(); n != 1 {
		t.Fatalf("two listens with one upstream credential opened %d upstream listens, want 1", n)
	}
	c := openListener(t, g, bob, "team-2")
	if n := up.opened.Load(); n != 2 {
		t.Fatalf("a listen with another upstream credential: %d upstream listens opened, want 2", n)
	}
	waitCount(t, &up.open, 2, 3*time.Second, "upstream listens open")
	tools.Store([]string{"a", "added"})
	up.push(`{"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{}}`)
	a.told(t, "alice")
	b.told(t, "bob")
	c.told(t, "bob on team-2")
}

// A listen leaving (its caller revoked, or gone) does not end the others
// on the same upstream listen; the upstream listen closes once the last
// one leaves (and TestMain's goleak finds nothing of it left).
func TestSharedUpstreamListenOutlivesAllButTheLastListen(t *testing.T) {
	var tools atomic.Value
	g, up := sharingGateway(t, &tools)
	a := openListener(t, g, alice, "team-1")
	b := openListener(t, g, bob, "team-1")
	a.cancel()
	if out := <-a.done; out.Err != nil {
		t.Fatalf("the leaving listen: %+v", out)
	}
	a.done <- answered{} // for its cleanup
	time.Sleep(100 * time.Millisecond)
	if n := up.open.Load(); n != 1 {
		t.Fatalf("after one of two listens left: %d upstream listens open, want 1", n)
	}
	tools.Store([]string{"a", "added"})
	up.push(`{"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{}}`)
	b.told(t, "the listen that stayed")
	// A listen joining late is acknowledged on the open upstream listen and
	// hears what comes after.
	c := openListener(t, g, alice, "team-1")
	if n := up.opened.Load(); n != 1 {
		t.Fatalf("a late listen opened another upstream listen: %d", n)
	}
	tools.Store([]string{"a", "added", "again"})
	up.push(`{"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{}}`)
	b.told(t, "the listen that stayed")
	c.told(t, "the late listen")
	b.cancel()
	c.cancel()
	waitCount(t, &up.open, 0, 3*time.Second, "upstream listens after the last listen left")
	g.ls.shared.mu.Lock()
	n := len(g.ls.shared.m)
	g.ls.shared.mu.Unlock()
	if n != 0 {
		t.Fatalf("%d shared listens remembered after the last left", n)
	}
}

// When the upstream ends the listen it ends for every listen hearing it,
// and the next listen opens a new one.
func TestUpstreamEndingASharedListenEndsEveryListen(t *testing.T) {
	var tools atomic.Value
	g, up := sharingGateway(t, &tools)
	a := openListener(t, g, alice, "team-1")
	b := openListener(t, g, bob, "team-1")
	up.push(endListen)
	for _, l := range []*sharedListener{a, b} {
		select {
		case out := <-l.done:
			l.done <- out
		case <-time.After(5 * time.Second):
			t.Fatal("a listen outlived the upstream listen it heard")
		}
	}
	openListener(t, g, alice, "team-1")
	if n := up.opened.Load(); n != 2 {
		t.Fatalf("upstream listens opened: %d, want 2 (the ended one and a new one)", n)
	}
}

// A listen whose caller does not keep up (its emit blocks) does not hold
// the others hearing the same upstream listen.
func TestSlowListenDoesNotHoldTheSharedUpstreamListen(t *testing.T) {
	var tools atomic.Value
	g, up := sharingGateway(t, &tools)
	stuck := make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	acked := make(chan struct{})
	done := make(chan answered, 1)
	op := Operation{Caller: alice, Surface: fault.Modern, Method: mcp.MethodSubscriptionsListen,
		Credentials: NewCredentials(header("X-Upstream-Token", "team-1"), false, "")}
	go func() {
		done <- listenRaw(g, ctx, op, json.RawMessage(`{"toolsListChanged":true}`),
			func(json.RawMessage) { close(acked) }, func(string, json.RawMessage) { <-stuck })
	}()
	<-acked
	defer func() { cancel(); close(stuck); <-done }()
	b := openListener(t, g, bob, "team-1")
	for i, names := range [][]string{{"a", "b"}, {"a", "b", "c"}, {"a", "b", "c", "d"}} {
		tools.Store(names)
		up.push(`{"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{}}`)
		b.told(t, "the listen keeping up, change "+string(rune('1'+i)))
	}
	if n := up.opened.Load(); n != 1 {
		t.Fatalf("upstream listens opened: %d, want 1", n)
	}
}
