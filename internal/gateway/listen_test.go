package gateway

import (
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpgw/mcpgw/internal/fakemcp"
	"github.com/mcpgw/mcpgw/internal/jsonrpc"
	"github.com/mcpgw/mcpgw/internal/mcp"
	"github.com/mcpgw/mcpgw/internal/upstream"
)

func TestNotifyReachesOnlyTheSessionsCallers(t *testing.T) {
	g := &Gateway{ls: NewListens()}
	got := map[string]int{}
	all := &Filter{ToolsListChanged: true, ResourceSubscriptions: []string{"file:///dir/"}}
	for _, cred := range []string{"alice", "bob"} {
		g.ls.hub.add("fs", &hubSub{cred: cred, filter: all, emit: func(string, json.RawMessage) { got[cred]++ }})
	}
	g.Notify("fs", "alice", mcp.NotifToolsListChanged, json.RawMessage(`{}`))
	g.Notify("fs", "alice", mcp.NotifResourcesUpdated, json.RawMessage(`{"uri":"file:///dir/a.txt"}`))
	g.Notify("fs", "alice", mcp.NotifResourcesUpdated, json.RawMessage(`{"uri":"file:///other"}`))
	g.Notify("fs", "alice", mcp.NotifPromptsListChanged, json.RawMessage(`{}`))
	g.Notify("other", "alice", mcp.NotifToolsListChanged, json.RawMessage(`{}`))
	if got["alice"] != 2 || got["bob"] != 0 {
		t.Fatalf("deliveries = %v, want alice 2 (a subscribed list change and a sub-resource update), bob 0", got)
	}
}

func TestFilterWants(t *testing.T) {
	f := Filter{ResourceSubscriptions: []string{"file:///cfg.json", "file:///dir/"}}
	for uri, want := range map[string]bool{
		"file:///cfg.json": true, "file:///cfg.json.bak": false, "file:///dir/x": true, "file:///dirx": false, "": false,
	} {
		if got := f.wants(mcp.NotifResourcesUpdated, json.RawMessage(`{"uri":"`+uri+`"}`)); got != want {
			t.Errorf("wants(%q) = %v, want %v", uri, got, want)
		}
	}
}

func TestLegacySubscriptionsAreCounted(t *testing.T) {
	var mu sync.Mutex
	seen := map[string]int{}
	up := fakemcp.New(t, fakemcp.Opts{Legacy: true, Handlers: map[string]fakemcp.Handler{
		mcp.MethodResourcesSubscribe: func(json.RawMessage) (json.RawMessage, *jsonrpc.Error) {
			mu.Lock()
			seen["subscribe"]++
			mu.Unlock()
			return json.RawMessage(`{}`), nil
		},
		mcp.MethodResourcesUnsubscribe: func(json.RawMessage) (json.RawMessage, *jsonrpc.Error) {
			mu.Lock()
			seen["unsubscribe"]++
			mu.Unlock()
			return json.RawMessage(`{}`), nil
		},
	}})
	g := newTestGateway(t, Config{}, upSpec{name: "fs", fake: up})
	s := g.servers["fs"]
	endFirst, err := g.legacySubscribe(context.Background(), s, upstream.Options{}, "file:///x")
	if err != nil {
		t.Fatal(err)
	}
	endSecond, err := g.legacySubscribe(context.Background(), s, upstream.Options{}, "file:///x")
	if err != nil {
		t.Fatal(err)
	}
	endFirst()
	endFirst() // a second call gives nothing back twice
	time.Sleep(50 * time.Millisecond)
	mu.Lock()
	if seen["subscribe"] != 1 || seen["unsubscribe"] != 0 {
		mu.Unlock()
		t.Fatalf("after one of two listens ended: %v", seen)
	}
	mu.Unlock()
	endSecond()
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		mu.Lock()
		n := seen["unsubscribe"]
		mu.Unlock()
		if n == 1 {
			return
		}
	}
	t.Fatalf("the last listen to end did not unsubscribe: %v", seen)
}

// A listen that ends while the upstream's resources/subscribe answer is still
// in flight must still unsubscribe: the upstream may have subscribed.
func TestLegacySubscribeEndedInFlightUnsubscribes(t *testing.T) {
	var mu sync.Mutex
	seen := map[string]int{}
	release := make(chan struct{})
	up := fakemcp.New(t, fakemcp.Opts{Legacy: true, Handlers: map[string]fakemcp.Handler{
		mcp.MethodResourcesSubscribe: func(json.RawMessage) (json.RawMessage, *jsonrpc.Error) {
			mu.Lock()
			seen["subscribe"]++
			mu.Unlock()
			<-release
			return json.RawMessage(`{}`), nil
		},
		mcp.MethodResourcesUnsubscribe: func(json.RawMessage) (json.RawMessage, *jsonrpc.Error) {
			mu.Lock()
			seen["unsubscribe"]++
			mu.Unlock()
			return json.RawMessage(`{}`), nil
		},
	}})
	t.Cleanup(func() {
		select {
		case <-release:
		default:
			close(release)
		}
	})
	g := newTestGateway(t, Config{}, upSpec{name: "fs", fake: up})
	ctx, end := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = g.legacySubscribe(ctx, g.servers["fs"], upstream.Options{}, "file:///x")
	}()
	for deadline := time.Now().Add(2 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		mu.Lock()
		n := seen["subscribe"]
		mu.Unlock()
		if n == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the upstream never saw resources/subscribe")
		}
	}
	end()
	close(release)
	<-done
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		mu.Lock()
		n := seen["unsubscribe"]
		mu.Unlock()
		if n == 1 {
			return
		}
	}
	t.Fatalf("a listen that ended during its subscribe left the upstream subscribed: %v", seen)
}

// A listen that joins a URI whose first upstream subscribe is still in
// flight waits for its outcome: when the upstream refuses it, the joiner
// fails too and holds nothing.
func TestLegacySubscribeJoinerSharesTheRefusal(t *testing.T) {
	var subs atomic.Int32
	gate := make(chan struct{})
	up := fakemcp.New(t, fakemcp.Opts{Legacy: true, Handlers: map[string]fakemcp.Handler{
		mcp.MethodResourcesSubscribe: func(json.RawMessage) (json.RawMessage, *jsonrpc.Error) {
			subs.Add(1)
			<-gate
			return nil, jsonrpc.Errorf(jsonrpc.CodeInternalError, "busy")
		},
		mcp.MethodResourcesUnsubscribe: func(json.RawMessage) (json.RawMessage, *jsonrpc.Error) {
			return json.RawMessage(`{}`), nil
		},
	}})
	var opened sync.Once
	open := func() { opened.Do(func() { close(gate) }) }
	t.Cleanup(open) // before the fake server closes
	g := newTestGateway(t, Config{}, upSpec{name: "fs", fake: up})
	s := g.servers["fs"]
	firstErr := make(chan error, 1)
	go func() {
		_, err := g.legacySubscribe(context.Background(), s, upstream.Options{}, "file:///x")
		firstErr <- err
	}()
	for deadline := time.Now().Add(2 * time.Second); subs.Load() == 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the upstream never saw resources/subscribe")
		}
	}
	secondErr := make(chan error, 1)
	go func() {
		end, err := g.legacySubscribe(context.Background(), s, upstream.Options{}, "file:///x")
		if err == nil {
			end()
		}
		secondErr <- err
	}()
	select {
	case err := <-secondErr:
		t.Fatalf("the joiner was answered (%v) before the upstream answered the subscribe", err)
	case <-time.After(200 * time.Millisecond):
	}
	open()
	if err := <-firstErr; err == nil {
		t.Fatal("the refused subscribe succeeded")
	}
	if err := <-secondErr; err == nil {
		t.Fatal("the joiner was told it is subscribed; the upstream refused the only subscribe")
	}
	g.ls.hub.mu.Lock()
	left := len(g.ls.hub.upstreamSubs)
	g.ls.hub.mu.Unlock()
	if left != 0 || subs.Load() != 1 {
		t.Fatalf("after the refusal: %d subscriptions held, %d upstream subscribes (want 0, 1)", left, subs.Load())
	}
}

// The upstream subscribe a listen's set-up sends is bounded by the listing
// timeout, not the (longer) request timeout.
func TestLegacySubscribeBoundedByListTimeout(t *testing.T) {
	gate := make(chan struct{})
	up := fakemcp.New(t, fakemcp.Opts{Legacy: true, Handlers: map[string]fakemcp.Handler{
		mcp.MethodResourcesSubscribe: func(json.RawMessage) (json.RawMessage, *jsonrpc.Error) {
			<-gate
			return json.RawMessage(`{}`), nil
		},
		mcp.MethodResourcesUnsubscribe: func(json.RawMessage) (json.RawMessage, *jsonrpc.Error) {
			return json.RawMessage(`{}`), nil
		},
	}})
	t.Cleanup(func() { close(gate) }) // before the fake server closes
	g := newTestGateway(t, Config{ListTimeout: 300 * time.Millisecond}, upSpec{name: "fs", fake: up})
	start := time.Now()
	_, err := g.legacySubscribe(context.Background(), g.servers["fs"], upstream.Options{}, "file:///x")
	if took := time.Since(start); err == nil || took > 3*time.Second {
		t.Fatalf("a hanging subscribe: err=%v after %v, want a failure within the 300 ms listing timeout", err, took)
	}
}
