package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpgw/mcpgw/internal/fakemcp"
	"github.com/mcpgw/mcpgw/internal/fault"
	"github.com/mcpgw/mcpgw/internal/identity"
	"github.com/mcpgw/mcpgw/internal/jsonrpc"
	"github.com/mcpgw/mcpgw/internal/mcp"
)

// controlled is a modern upstream in front of a fake whose
// subscriptions/listen streams the test drives: each acknowledges once gate
// is open (refuse answers -32601 instead), then carries what push sends.
type controlled struct {
	url    string
	open   atomic.Int64 // listens open now
	opened atomic.Int64 // listens ever opened
	gate   chan struct{}
	refuse bool

	mu     sync.Mutex
	queues []chan string
}

func controlledUpstream(t *testing.T, fake *fakemcp.Server, gated, refuse bool) *controlled {
	t.Helper()
	c := &controlled{gate: make(chan struct{}), refuse: refuse}
	if !gated {
		close(c.gate)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if m, err := jsonrpc.Decode(body); err == nil && m.Method == mcp.MethodSubscriptionsListen {
			c.serveListen(w, r, m)
			return
		}
		req, _ := http.NewRequestWithContext(r.Context(), r.Method, fake.URL(), bytes.NewReader(body))
		req.Header = r.Header.Clone()
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			w.WriteHeader(http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		for k, v := range resp.Header {
			w.Header()[k] = v
		}
		w.WriteHeader(resp.StatusCode)
		_, _ = io.Copy(w, resp.Body)
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(http.DefaultClient.CloseIdleConnections)
	c.url = srv.URL + "/mcp"
	return c
}

func (c *controlled) serveListen(w http.ResponseWriter, r *http.Request, m *jsonrpc.Message) {
	c.opened.Add(1)
	if c.refuse {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(jsonrpc.EncodeError(m.ID, jsonrpc.Errorf(jsonrpc.CodeMethodNotFound, "no subscriptions here")))
		return
	}
	c.open.Add(1)
	defer c.open.Add(-1)
	q := make(chan string, 16)
	c.mu.Lock()
	c.queues = append(c.queues, q)
	c.mu.Unlock()
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	w.(http.Flusher).Flush()
	select {
	case <-c.gate:
	case <-r.Context().Done():
		return
	}
	_, _ = io.WriteString(w, "event: message\ndata: "+`{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"notifications":{"toolsListChanged":true}}}`+"\n\n")
	w.(http.Flusher).Flush()
	for {
		select {
		case ev := <-q:
			if ev == endListen {
				return
			}
			_, _ = io.WriteString(w, "event: message\ndata: "+ev+"\n\n")
			w.(http.Flusher).Flush()
		case <-r.Context().Done():
			return
		}
	}
}

// endListen, pushed, ends the upstream's listens.
const endListen = "end"

// push sends ev on every listen open now.
func (c *controlled) push(ev string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, q := range c.queues {
		select {
		case q <- ev:
		default:
		}
	}
}

func waitCount(t *testing.T, n *atomic.Int64, want int64, within time.Duration, what string) {
	t.Helper()
	for deadline := time.Now().Add(within); n.Load() != want; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: %d, want %d", what, n.Load(), want)
		}
	}
}

var alice = &identity.Caller{UserID: "alice", KeyHash: "hash-alice"}

// toolLister answers tools/list with what names returns at the time.
func toolLister(names func() []string) fakemcp.Handler {
	return func(json.RawMessage) (json.RawMessage, *jsonrpc.Error) {
		items, _ := json.Marshal(fakemcp.Tools(names()...))
		return json.RawMessage(`{"tools":` + string(items) + `}`), nil
	}
}

func listChangedFake(t *testing.T, names func() []string) *fakemcp.Server {
	return fakemcp.New(t, fakemcp.Opts{Caps: `{"tools":{"listChanged":true}}`,
		Handlers: map[string]fakemcp.Handler{mcp.MethodToolsList: toolLister(names)}})
}

// The acknowledgement waits for the upstream's own: until then nothing is
// acknowledged, and an event the upstream sends right after is delivered.
func TestListenAckWaitsForUpstreamAck(t *testing.T) {
	var tools atomic.Value
	tools.Store([]string{"a"})
	fake := listChangedFake(t, func() []string { return tools.Load().([]string) })
	up := controlledUpstream(t, fake, true, false)
	g := newTestGateway(t, Config{ListTimeout: 5 * time.Second}, upSpec{name: "p", fake: fake, url: up.url})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	acked := make(chan json.RawMessage, 1)
	events := make(chan string, 4)
	done := make(chan answered, 1)
	go func() {
		done <- listenRaw(g, ctx, Operation{Caller: alice, Surface: fault.Modern, Method: mcp.MethodSubscriptionsListen}, json.RawMessage(`{"toolsListChanged":true}`),
			func(h json.RawMessage) { acked <- h }, func(m string, _ json.RawMessage) { events <- m })
	}()
	waitCount(t, &up.open, 1, 5*time.Second, "upstream listens")
	select {
	case <-acked:
		t.Fatal("acknowledged before the upstream acknowledged its listen")
	case <-time.After(200 * time.Millisecond):
	}
	close(up.gate)
	select {
	case h := <-acked:
		if string(h) != `{"toolsListChanged":true}` {
			t.Fatalf("honoured = %s", h)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no acknowledgement after the upstream's")
	}
	tools.Store([]string{"a", "added"})
	up.push(`{"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{}}`)
	select {
	case m := <-events:
		if m != mcp.NotifToolsListChanged {
			t.Fatalf("event %s", m)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the change right after the ack was lost")
	}
	cancel()
	<-done
	waitCount(t, &up.open, 0, 3*time.Second, "upstream listens after the listen ended")
}

// An upstream that refuses its listen fails the whole listen, which is
// never acknowledged.
func TestListenRefusedUpstreamFailsUnacknowledged(t *testing.T) {
	fake := listChangedFake(t, func() []string { return []string{"a"} })
	good := listChangedFake(t, func() []string { return []string{"b"} })
	refusing := controlledUpstream(t, fake, false, true)
	fine := controlledUpstream(t, good, false, false)
	g := newTestGateway(t, Config{ListTimeout: 5 * time.Second},
		upSpec{name: "good", fake: good, url: fine.url}, upSpec{name: "bad", fake: fake, url: refusing.url})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	acked := false
	out := listenRaw(g, ctx, Operation{Caller: alice, Surface: fault.Modern, Method: mcp.MethodSubscriptionsListen}, json.RawMessage(`{"toolsListChanged":true}`),
		func(json.RawMessage) { acked = true }, func(string, json.RawMessage) {})
	if acked || out.Err == nil {
		t.Fatalf("acked=%v outcome %+v: want an unacknowledged error", acked, out)
	}
	waitCount(t, &fine.open, 0, 3*time.Second, "the other upstream's listener after the refusal")
}

// Set-up is all or nothing within the caller's listener capacity: a listen
// needing two listeners when one fits is refused unacknowledged and holds
// none; one needing one fits; a listen asking for nothing honours nothing
// and holds none.
func TestListenCapacityIsAllOrNothingPerCaller(t *testing.T) {
	fa := listChangedFake(t, func() []string { return []string{"a"} })
	fb := listChangedFake(t, func() []string { return []string{"b"} })
	ua, ub := controlledUpstream(t, fa, false, false), controlledUpstream(t, fb, false, false)
	g := newTestGateway(t, Config{ListTimeout: 5 * time.Second, MaxListenersPerCaller: 1},
		upSpec{name: "a", fake: fa, url: ua.url}, upSpec{name: "b", fake: fb, url: ub.url})
	listen := func(ctx context.Context, scope []string, filter string, acked func(json.RawMessage)) answered {
		return listenRaw(g, ctx, Operation{Caller: alice, Scope: scope, Surface: fault.Modern, Method: mcp.MethodSubscriptionsListen},
			json.RawMessage(filter), acked, func(string, json.RawMessage) {})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	acked := false
	out := listen(ctx, nil, `{"toolsListChanged":true}`, func(json.RawMessage) { acked = true })
	if acked || out.Err == nil {
		t.Fatalf("a listen beyond capacity: acked=%v outcome %+v", acked, out)
	}
	if n := ua.opened.Load() + ub.opened.Load(); n != 0 {
		t.Fatalf("a refused listen opened %d upstream listeners", n)
	}
	for _, filter := range []string{`{"toolsListChanged":true}`, `{}`} {
		lctx, end := context.WithCancel(ctx)
		got := make(chan json.RawMessage, 1)
		done := make(chan answered, 1)
		go func() { done <- listen(lctx, []string{"a"}, filter, func(h json.RawMessage) { got <- h }) }()
		var h json.RawMessage
		select {
		case h = <-got:
		case out := <-done:
			t.Fatalf("listen %s within capacity failed: %+v", filter, out)
		}
		want := map[string]string{`{"toolsListChanged":true}`: `{"toolsListChanged":true}`, `{}`: `{}`}[filter]
		if string(h) != want {
			t.Fatalf("listen %s honoured %s, want %s", filter, h, want)
		}
		// While it is open, alice has no capacity left (or, flagless, holds none).
		if filter != `{}` {
			waitCount(t, &ua.open, 1, 3*time.Second, "upstream listeners")
			if out := listen(ctx, []string{"b"}, `{"toolsListChanged":true}`, func(json.RawMessage) { t.Error("acknowledged beyond capacity") }); out.Err == nil {
				t.Fatal("a second listen beyond alice's capacity was accepted")
			}
			bob := &identity.Caller{UserID: "bob"}
			bctx, bend := context.WithCancel(ctx)
			bgot := make(chan struct{})
			bdone := make(chan struct{})
			go func() {
				defer close(bdone)
				listenRaw(g, bctx, Operation{Caller: bob, Scope: []string{"b"}, Surface: fault.Modern, Method: mcp.MethodSubscriptionsListen},
					json.RawMessage(`{"toolsListChanged":true}`), func(json.RawMessage) { close(bgot) }, func(string, json.RawMessage) {})
			}()
			select {
			case <-bgot:
			case <-bdone:
				t.Fatal("bob's listen was refused: capacity is counted per caller")
			}
			bend()
			<-bdone
		} else if n := ua.open.Load(); n != 0 {
			t.Fatalf("a listen asking for nothing holds %d upstream listeners", n)
		}
		end()
		<-done
		waitCount(t, &ua.open, 0, 3*time.Second, "upstream listeners after the listen ended")
	}
	g.ls.listeners.mu.Lock()
	defer g.ls.listeners.mu.Unlock()
	if len(g.ls.listeners.held) != 0 {
		t.Fatalf("listener counts left behind: %v", g.ls.listeners.held)
	}
}

// A change the caller cannot see is not delivered; one it can see is, once.
func TestListenDeliversOnlyVisibleChanges(t *testing.T) {
	var tools atomic.Value
	tools.Store([]string{"change_tools"})
	fake := listChangedFake(t, func() []string { return tools.Load().([]string) })
	up := controlledUpstream(t, fake, false, false)
	g := newTestGateway(t, Config{ListTimeout: 5 * time.Second}, upSpec{name: "peer", fake: fake, url: up.url})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	events := make(chan string, 8)
	acked := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		listenRaw(g, ctx, Operation{Caller: &identity.Caller{UserID: "bob", ToolPermissions: map[string][]string{"peer": {"change_tools"}}},
			Surface: fault.Modern, Method: mcp.MethodSubscriptionsListen}, json.RawMessage(`{"toolsListChanged":true}`),
			func(json.RawMessage) { close(acked) }, func(m string, _ json.RawMessage) { events <- m })
	}()
	<-acked
	tools.Store([]string{"change_tools", "added"})
	up.push(`{"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{}}`)
	select {
	case m := <-events:
		t.Fatalf("a change bob cannot see reached him: %s", m)
	case <-time.After(500 * time.Millisecond):
	}
	tools.Store([]string{"change_tools", "added", "other"})
	// Still invisible; then change_tools itself changes.
	up.push(`{"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{}}`)
	time.Sleep(100 * time.Millisecond)
	fake2 := []string{"added", "other"} // change_tools gone: bob's view changed
	tools.Store(fake2)
	up.push(`{"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{}}`)
	select {
	case m := <-events:
		if m != mcp.NotifToolsListChanged {
			t.Fatalf("event %s", m)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a change bob can see was not delivered")
	}
	select {
	case m := <-events:
		t.Fatalf("a second event: %s", m)
	case <-time.After(300 * time.Millisecond):
	}
	cancel()
	<-done
}

// A change made while the listen is being set up (between the caller's
// baseline view and the upstream's acknowledgement, which the upstream does
// not report on the new listen) is delivered after the acknowledgement.
func TestListenChangeDuringSetupIsDelivered(t *testing.T) {
	var tools atomic.Value
	tools.Store([]string{"a"})
	fake := listChangedFake(t, func() []string { return tools.Load().([]string) })
	up := controlledUpstream(t, fake, true, false)
	g := newTestGateway(t, Config{ListTimeout: 5 * time.Second}, upSpec{name: "p", fake: fake, url: up.url})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	events := make(chan string, 4)
	done := make(chan struct{})
	go func() {
		defer close(done)
		listenRaw(g, ctx, Operation{Caller: alice, Surface: fault.Modern, Method: mcp.MethodSubscriptionsListen}, json.RawMessage(`{"toolsListChanged":true}`),
			func(json.RawMessage) {}, func(m string, _ json.RawMessage) { events <- m })
	}()
	waitCount(t, &up.open, 1, 5*time.Second, "upstream listens")
	tools.Store([]string{"a", fmt.Sprint("added")}) // during set-up, unreported
	close(up.gate)
	select {
	case m := <-events:
		if m != mcp.NotifToolsListChanged {
			t.Fatalf("event %s", m)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a change during set-up was lost")
	}
	cancel()
	<-done
}

// upstream-ended: an upstream that sends a change and then ends its listen
// ends the caller's listen, after the change is delivered.
func TestListenEndsWithItsUpstreamAfterDeliveringWhatItSent(t *testing.T) {
	var tools atomic.Value
	tools.Store([]string{"a"})
	fake := listChangedFake(t, func() []string { return tools.Load().([]string) })
	up := controlledUpstream(t, fake, false, false)
	g := newTestGateway(t, Config{ListTimeout: 5 * time.Second}, upSpec{name: "p", fake: fake, url: up.url})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	acked := make(chan struct{})
	var got []string
	done := make(chan struct{})
	go func() {
		defer close(done)
		listenRaw(g, ctx, Operation{Caller: alice, Surface: fault.Modern, Method: mcp.MethodSubscriptionsListen}, json.RawMessage(`{"toolsListChanged":true}`),
			func(json.RawMessage) { close(acked) }, func(m string, _ json.RawMessage) { got = append(got, m) })
	}()
	<-acked
	time.Sleep(100 * time.Millisecond) // the post-acknowledgement check is done
	tools.Store([]string{"a", "added"})
	up.push(`{"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{}}`)
	up.push(endListen)
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the listen outlived its upstream's")
	}
	if len(got) != 1 || got[0] != mcp.NotifToolsListChanged {
		t.Fatalf("delivered %v, want the one change the upstream sent before ending", got)
	}
}

// A persistent listen (a legacy caller's follow) outlives an upstream that
// ends its listen: the listener is set up again and a change the caller can
// see, made meanwhile, is delivered; one it cannot see is not.
func TestPersistentListenSetsUpAgain(t *testing.T) {
	var tools atomic.Value
	tools.Store([]string{"seen"})
	fake := listChangedFake(t, func() []string { return tools.Load().([]string) })
	up := controlledUpstream(t, fake, false, false)
	g := newTestGateway(t, Config{ListTimeout: 5 * time.Second}, upSpec{name: "p", fake: fake, url: up.url})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	acked := make(chan struct{})
	events := make(chan string, 8)
	done := make(chan struct{})
	bob := &identity.Caller{UserID: "bob", ToolPermissions: map[string][]string{"p": {"seen"}}}
	go func() {
		defer close(done)
		g.ListenFilter(ctx, Operation{Caller: bob, Surface: fault.Legacy}, Filter{ToolsListChanged: true, Persist: true},
			Listener{Ack: func(json.RawMessage) bool { close(acked); return true }, Emit: func(m string, _ json.RawMessage, _ time.Time) bool { events <- m; return true }})
	}()
	<-acked
	tools.Store([]string{"seen", "hidden"}) // invisible to bob
	up.push(endListen)
	waitCount(t, &up.opened, 2, 5*time.Second, "upstream listens opened")
	select {
	case m := <-events:
		t.Fatalf("an invisible change made while the listener was down reached bob: %s", m)
	case <-time.After(300 * time.Millisecond):
	}
	tools.Store([]string{"hidden"}) // bob's view changes
	up.push(endListen)
	waitCount(t, &up.opened, 3, 5*time.Second, "upstream listens opened")
	select {
	case m := <-events:
		if m != mcp.NotifToolsListChanged {
			t.Fatalf("event %s", m)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a visible change made while the listener was down was lost")
	}
	select {
	case <-done:
		t.Fatal("the persistent listen ended with its upstream's")
	default:
	}
	cancel()
	<-done
}

// One change announced by two upstreams a moment apart (two servers sharing a
// backend) is told once: delivery waits listChangeSettle before comparing,
// and refreshes the other servers' views before telling a change, so an
// announcement arriving after the settle finds nothing new.
func TestListenTellsOneChangeAnnouncedTwiceOnce(t *testing.T) {
	for _, gap := range []time.Duration{25 * time.Millisecond, 3 * listChangeSettle} {
		t.Run(gap.String(), func(t *testing.T) { tellsOnce(t, gap) })
	}
}

// tellsOnce announces one change on two upstreams gap apart and expects one
// list change told.
func tellsOnce(t *testing.T, gap time.Duration) {
	var tools atomic.Value
	tools.Store([]string{"change_tools"})
	names := func() []string { return tools.Load().([]string) }
	fa, fb := listChangedFake(t, names), listChangedFake(t, names)
	ua, ub := controlledUpstream(t, fa, false, false), controlledUpstream(t, fb, false, false)
	g := newTestGateway(t, Config{ListTimeout: 5 * time.Second},
		upSpec{name: "peer", fake: fa, url: ua.url}, upSpec{name: "second", fake: fb, url: ub.url})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	events := make(chan string, 8)
	acked := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		listenRaw(g, ctx, Operation{Caller: alice, Surface: fault.Modern, Method: mcp.MethodSubscriptionsListen},
			json.RawMessage(`{"toolsListChanged":true}`),
			func(json.RawMessage) { close(acked) }, func(m string, _ json.RawMessage) { events <- m })
	}()
	<-acked
	time.Sleep(300 * time.Millisecond) // the check after the acknowledgement is done
	tools.Store([]string{"change_tools", "added"})
	ua.push(`{"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{}}`)
	time.Sleep(gap)
	ub.push(`{"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{}}`)
	select {
	case m := <-events:
		if m != mcp.NotifToolsListChanged {
			t.Fatalf("event %s", m)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the change was not delivered")
	}
	select {
	case m := <-events:
		t.Fatalf("the change was told twice: %s", m)
	case <-time.After(500 * time.Millisecond):
	}
	cancel()
	<-done
}

// A legacy upstream whose GET stream cannot be opened (503) cannot be
// followed: the listen is refused unacknowledged rather than acknowledged
// deaf to that upstream's changes.
func TestListenRefusedWhenALegacyStreamFails(t *testing.T) {
	fake := fakemcp.New(t, fakemcp.Opts{Legacy: true, Caps: `{"tools":{"listChanged":true}}`})
	target, _ := url.Parse(fake.URL())
	proxy := httputil.NewSingleHostReverseProxy(target)
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			http.Error(w, "busy", http.StatusServiceUnavailable)
			return
		}
		r.URL.Path = target.Path
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(front.Close)
	g := newTestGateway(t, Config{ListTimeout: 5 * time.Second}, upSpec{name: "old", fake: fake, url: front.URL})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	acked := false
	out := listenRaw(g, ctx, Operation{Caller: alice, Surface: fault.Modern, Method: mcp.MethodSubscriptionsListen}, json.RawMessage(`{"toolsListChanged":true}`),
		func(json.RawMessage) { acked = true }, func(string, json.RawMessage) {})
	if acked || out.Err == nil {
		t.Fatalf("acked=%v outcome %+v: want an unacknowledged error", acked, out)
	}
}
