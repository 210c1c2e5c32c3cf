package gateway

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpgw/mcpgw/internal/fault"
	"github.com/mcpgw/mcpgw/internal/identity"
	"github.com/mcpgw/mcpgw/internal/mcp"
	"github.com/mcpgw/mcpgw/internal/shallow/shallowtest"
)

// heldListen runs a listen of bob's on a fresh upstream with l, in the background; it returns
// once the listen is acknowledged, with the upstream and a channel closed when it returns.
func heldListen(t *testing.T, l Listener) (*controlled, *atomic.Value, <-chan struct{}) {
	t.Helper()
	var tools atomic.Value
	tools.Store([]string{"a"})
	fake := listChangedFake(t, func() []string { return tools.Load().([]string) })
	up := controlledUpstream(t, fake, false, false)
	g := newTestGateway(t, Config{ListTimeout: 5 * time.Second}, upSpec{name: "p", fake: fake, url: up.url})
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	acked := make(chan struct{})
	ack := l.Ack
	l.Ack = func(h json.RawMessage) bool {
		close(acked)
		return ack == nil || ack(h)
	}
	if l.Emit == nil {
		l.Emit = func(string, json.RawMessage, time.Time) bool { return true }
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		g.ListenFilter(ctx, Operation{Caller: &identity.Caller{UserID: "bob"}, Surface: fault.Modern, Method: mcp.MethodSubscriptionsListen},
			Filter{ToolsListChanged: true}, l)
	}()
	select {
	case <-acked:
	case <-time.After(5 * time.Second):
		t.Fatal("the listen was not acknowledged")
	}
	return up, &tools, done
}

func waitEnded(t *testing.T, done <-chan struct{}, why string) {
	t.Helper()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatalf("the listen did not end: %s", why)
	}
}

// The caller's duties run on the listen's goroutine while it waits for events: Tend is
// called on every Wake (Wake is also the listen's own channel: its events wake it there
// too), and a Tend that refuses ends the listen and closes its upstream listener.
func TestListenerTendRunsOnWakeAndEndsTheListen(t *testing.T) {
	wake := make(chan struct{}, 1)
	var tended atomic.Int64
	refuse := atomic.Bool{}
	up, _, done := heldListen(t, Listener{Wake: wake, Tend: func() bool {
		tended.Add(1)
		return !refuse.Load()
	}})
	tendsAfter := func(what string, poke func()) {
		t.Helper()
		before := tended.Load()
		poke()
		for deadline := time.Now().Add(5 * time.Second); tended.Load() <= before; time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("no Tend after %s", what)
			}
		}
	}
	tendsAfter("a wake", func() { wake <- struct{}{} })
	tendsAfter("a second wake", func() { wake <- struct{}{} })
	select {
	case <-done:
		t.Fatal("the listen ended while Tend agreed")
	case <-time.After(100 * time.Millisecond):
	}
	refuse.Store(true)
	wake <- struct{}{}
	waitEnded(t, done, "Tend refused")
	waitCount(t, &up.open, 0, 5*time.Second, "upstream listens open after the listen ended")
}

// A listen ends when its Listener's Done closes.
func TestListenerDoneEndsTheListen(t *testing.T) {
	stop := make(chan struct{})
	up, _, done := heldListen(t, Listener{Done: stop})
	close(stop)
	waitEnded(t, done, "Done closed")
	waitCount(t, &up.open, 0, 5*time.Second, "upstream listens open after the listen ended")
}

// An event the Listener refuses (its caller was revoked, its stream failed) ends the listen;
// the event carries when it arrived, for the caller to be re-checked after it.
func TestListenerRefusingAnEventEndsTheListen(t *testing.T) {
	var arrived atomic.Int64
	before := time.Now()
	up, tools, done := heldListen(t, Listener{Emit: func(_ string, _ json.RawMessage, at time.Time) bool {
		arrived.Store(at.UnixNano())
		return false
	}})
	tools.Store([]string{"a", "b"})
	up.push(`{"jsonrpc":"2.0","method":"` + mcp.NotifToolsListChanged + `","params":{}}`)
	waitEnded(t, done, "an event was refused")
	if at := arrived.Load(); at < before.UnixNano() || at > time.Now().UnixNano() {
		t.Fatalf("the event arrived at %d, outside the listen's life", at)
	}
}

// A held listen's goroutine only waits: Tend and Emit run on a goroutine the listen starts
// for each wake and waits for (internal/shallow), so the held one's stack never grows; the
// calls still come one at a time.
func TestListenerWorkRunsOffTheHeldGoroutine(t *testing.T) {
	wake := make(chan struct{}, 1)
	var ackG string
	work := make(chan string, 16) // "tend <goroutine>" or "emit <goroutine>"
	var running atomic.Int32
	once := func(what string) {
		if running.Add(1) != 1 {
			t.Error("two calls at once")
		}
		defer running.Add(-1)
		time.Sleep(time.Millisecond) // long enough for an overlap to show
		work <- what + " " + shallowtest.GoroutineID()
	}
	up, tools, _ := heldListen(t, Listener{
		Ack:  func(json.RawMessage) bool { ackG = shallowtest.GoroutineID(); return true },
		Wake: wake,
		Tend: func() bool { once("tend"); return true },
		Emit: func(string, json.RawMessage, time.Time) bool { once("emit"); return true },
	})
	next := func(kind string) string {
		t.Helper()
		for end := time.After(5 * time.Second); ; {
			select {
			case w := <-work:
				if k, g, _ := strings.Cut(w, " "); k == kind {
					return g
				}
			case <-end:
				t.Fatalf("no %s", kind)
			}
		}
	}
	// One step may serve more than one call (a Tend then an Emit): each call is only
	// required to run off the held goroutine.
	for range 4 {
		select {
		case wake <- struct{}{}:
		default:
		}
		if g := next("tend"); g == ackG {
			t.Fatalf("a Tend ran on the held goroutine %s", g)
		}
	}
	tools.Store([]string{"a", "b"})
	up.push(`{"jsonrpc":"2.0","method":"` + mcp.NotifToolsListChanged + `","params":{}}`)
	if g := next("emit"); g == ackG {
		t.Fatalf("Emit ran on the held goroutine %s", g)
	}
}
