package sharedstate_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpgw/mcpgw/internal/front"
	"github.com/mcpgw/mcpgw/internal/front/fronttest"
	"github.com/mcpgw/mcpgw/internal/mcp"
	"github.com/mcpgw/mcpgw/internal/notify"
	"github.com/mcpgw/mcpgw/internal/redisconn"
	"github.com/mcpgw/mcpgw/internal/redistest"
	"github.com/mcpgw/mcpgw/internal/sharedstate"
)

func dial(t *testing.T, url string) *redisconn.Conn {
	t.Helper()
	c, err := redisconn.New(redisconn.Settings{URL: url}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func TestRedisTombstonesContract(t *testing.T) {
	url := redistest.URL(t)
	c := dial(t, url)
	fronttest.Tombstones(t, func() front.Tombstones {
		return sharedstate.NewTombstones(c, redistest.Prefix(t), 1000)
	})
}

func TestRedisTombstonesShareBurialsAndDegradeWhileRedisIsDown(t *testing.T) {
	srv := redistest.Start(t)
	prefix := redistest.Prefix(t)
	a := sharedstate.NewTombstones(dial(t, srv.URL()), prefix, 1000)
	b := sharedstate.NewTombstones(dial(t, srv.URL()), prefix, 1000)
	ctx := context.Background()
	hour := time.Now().Add(time.Hour)
	if err := a.Bury(ctx, "s1", hour); err != nil {
		t.Fatal(err)
	}
	if got, err := b.Buried(ctx, "s1"); err != nil || !got {
		t.Fatalf("other replica: Buried = %v, %v; want true", got, err)
	}
	// A new store on the same Redis (a restarted replica) still knows it.
	if got, err := sharedstate.NewTombstones(dial(t, srv.URL()), prefix, 1000).Buried(ctx, "s1"); err != nil || !got {
		t.Fatalf("restarted replica: Buried = %v, %v; want true", got, err)
	}

	// A burial here only is not seen by the other replica.
	if err := a.BuryHere(ctx, "local", hour); err != nil {
		t.Fatal(err)
	}
	if got, _ := a.Buried(ctx, "local"); !got {
		t.Fatal("BuryHere not remembered here")
	}
	if got, _ := b.Buried(ctx, "local"); got {
		t.Fatal("BuryHere seen by another replica")
	}

	srv.Stop()
	start := time.Now()
	if err := a.Bury(ctx, "s2", hour); err != nil {
		t.Fatalf("Bury with Redis down = %v; want nil (kept on this replica)", err)
	}
	if got, err := a.Buried(ctx, "s2"); err != nil || !got {
		t.Fatalf("burying replica with Redis down: Buried = %v, %v; want true", got, err)
	}
	if got, err := b.Buried(ctx, "s2"); err != nil || got {
		t.Fatalf("other replica with Redis down: Buried = %v, %v; want false, nil (single-replica semantics)", got, err)
	}
	for range 20 { // while down, requests do not each wait on Redis
		_, _ = b.Buried(ctx, "s3")
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("answers with Redis down took %v", d)
	}

	srv.Restart()
	deadline := time.Now().Add(5 * time.Second)
	for {
		_ = a.Bury(ctx, "s4", hour)
		if got, _ := b.Buried(ctx, "s4"); got {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("burials not shared again after Redis returned")
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// collector gathers what a receiver gets.
type collector struct {
	mu  sync.Mutex
	got []string
}

func (c *collector) add(s string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.got = append(c.got, s)
}

func (c *collector) wait(t *testing.T, n int) []string {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		c.mu.Lock()
		got := append([]string(nil), c.got...)
		c.mu.Unlock()
		if len(got) >= n {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("received %d, want %d: %q", len(got), n, got)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// only is what was received that starts with prefix.
func (c *collector) only(prefix string) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, g := range c.got {
		if strings.HasPrefix(g, prefix) {
			out = append(out, g)
		}
	}
	return out
}

// waitFor waits until want was received.
func (c *collector) waitFor(t *testing.T, want string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for len(c.only(want)) == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("never received %q", want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestRelayForwardsToTheNamedReplicaOnly(t *testing.T) {
	url := redistest.URL(t)
	prefix := redistest.Prefix(t)
	a := sharedstate.NewRelay(dial(t, url), prefix, "a", nil)
	defer a.Close()
	b := sharedstate.NewRelay(dial(t, url), prefix, "b", nil)
	defer b.Close()
	var onA, onB collector
	defer a.Receive(func(s string, m []byte) { onA.add(s + " " + string(m)) })()
	defer b.Receive(func(s string, m []byte) { onB.add(s + " " + string(m)) })()
	waitSubscribed(t, b, "a")
	onA.wait(t, 1) // the probe
	onA.mu.Lock()
	onA.got = nil
	onA.mu.Unlock()

	if err := b.Forward(context.Background(), "a", "sess", []byte(`{"jsonrpc":"2.0","id":"x","result":{}}`)); err != nil {
		t.Fatal(err)
	}
	if got := onA.wait(t, 1); got[0] != `sess {"jsonrpc":"2.0","id":"x","result":{}}` {
		t.Fatalf("a received %q", got)
	}
	if err := a.Forward(context.Background(), "nobody", "sess", []byte(`{}`)); err == nil {
		t.Fatal("Forward to a replica nobody runs: nil error")
	}
	big := []byte(`"` + strings.Repeat("x", sharedstate.DefaultMaxRelayBytes) + `"`)
	if err := b.Forward(context.Background(), "a", "sess", big); err == nil {
		t.Fatal("Forward of an answer over the bound: nil error")
	}
	onB.mu.Lock()
	defer onB.mu.Unlock()
	if len(onB.got) != 0 {
		t.Fatalf("b received what was forwarded to a: %q", onB.got)
	}
}

// waitSubscribed waits until to's subscription takes what from forwards.
func waitSubscribed(t *testing.T, from *sharedstate.Relay, to string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for from.Forward(context.Background(), to, "probe", []byte(`{}`)) != nil {
		if time.Now().After(deadline) {
			t.Fatalf("replica %q never subscribed", to)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func listChanged(server string) notify.Event {
	return notify.Event{Server: server, Method: mcp.NotifToolsListChanged, Params: json.RawMessage(`{}`)}
}

func TestHubCrossesListChangesAndResubscribesAfterAnOutage(t *testing.T) {
	srv := redistest.Start(t)
	prefix := redistest.Prefix(t)
	a := sharedstate.NewHub(dial(t, srv.URL()), prefix, "a", nil)
	defer a.Close()
	b := sharedstate.NewHub(dial(t, srv.URL()), prefix, "b", nil)
	defer b.Close()
	var onA, onB collector
	defer a.Subscribe(func(e notify.Event) { onA.add(e.Server + " " + e.Method) })()
	defer b.Subscribe(func(e notify.Event) { onB.add(e.Server + " " + e.Method) })()

	// Until b's subscription is in place, a's events may not reach it.
	deadline := time.Now().Add(5 * time.Second)
	for i := 0; ; i++ {
		a.Publish(listChanged("warmup"))
		if len(onB.wait(t, 0)) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("b never received a's events")
		}
		time.Sleep(50 * time.Millisecond)
	}
	onA.mu.Lock()
	onA.got = nil
	onA.mu.Unlock()
	onB.mu.Lock()
	onB.got = nil
	onB.mu.Unlock()

	a.Publish(notify.Event{Server: "s", Method: mcp.NotifMessage, Params: json.RawMessage(`{}`)})
	a.Publish(listChanged("s"))
	onB.waitFor(t, "s "+mcp.NotifToolsListChanged)
	time.Sleep(200 * time.Millisecond) // room for an echo or a stray message to arrive
	if got := onB.only("s "); len(got) != 1 {
		t.Fatalf("b received %q from s; want only the list change", got)
	}
	if got := onA.only("s "); len(got) != 2 {
		t.Fatalf("a received %q from s; want its own two events once each", got)
	}

	srv.Stop()
	a.Publish(listChanged("while-down")) // stays on a; no error, no block
	srv.Restart()
	deadline = time.Now().Add(10 * time.Second)
	for {
		a.Publish(listChanged("after"))
		found := false
		for _, g := range onB.wait(t, 0) {
			found = found || g == "after "+mcp.NotifToolsListChanged
		}
		if found {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("b does not receive a's events after Redis returned")
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func TestRelayReceiverPanicDoesNotEndTheSubscription(t *testing.T) {
	url := redistest.URL(t)
	prefix := redistest.Prefix(t)
	a := sharedstate.NewRelay(dial(t, url), prefix, "a", nil)
	defer a.Close()
	var got collector
	defer a.Receive(func(s string, _ []byte) {
		if s == "boom" {
			panic("receiver failed")
		}
		got.add(s)
	})()
	waitSubscribed(t, a, "a")
	if err := a.Forward(context.Background(), "a", "boom", []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	if err := a.Forward(context.Background(), "a", "after", []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	got.waitFor(t, "after")
}

// With Redis down from the start, building the shared state does not wait
// on it, every part answers at once from this replica, the outage is logged
// once for all of them, and they work through Redis once it is back.
func TestSharedStateWithRedisDownLogsOneWarningAndRecovers(t *testing.T) {
	srv := redistest.Start(t)
	srv.Stop()
	var buf bytes.Buffer
	var mu sync.Mutex
	log := slog.New(slog.NewTextHandler(&lockedWriter{mu: &mu, w: &buf}, &slog.HandlerOptions{Level: slog.LevelInfo}))
	conn, err := redisconn.New(redisconn.Settings{URL: srv.URL()}, log)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	prefix := redistest.Prefix(t)
	start := time.Now()
	tombs := sharedstate.NewTombstones(conn, prefix, 100)
	relay := sharedstate.NewRelay(conn, prefix, "a", log)
	defer relay.Close()
	hub := sharedstate.NewHub(conn, prefix, "a", log)
	defer hub.Close()
	if d := time.Since(start); d > 500*time.Millisecond {
		t.Fatalf("building the shared state with Redis down took %v", d)
	}
	ctx := context.Background()
	for range 5 {
		_ = tombs.Bury(ctx, "x", time.Now().Add(time.Hour))
		if got, err := tombs.Buried(ctx, "x"); err != nil || !got {
			t.Fatalf("Buried with Redis down = %v, %v", got, err)
		}
		hub.Publish(listChanged("s"))
		if err := relay.Forward(ctx, "b", "sess", []byte(`{}`)); err == nil {
			t.Fatal("Forward with Redis down: nil error")
		}
	}
	time.Sleep(time.Second) // the subscriptions retry meanwhile
	count := func(s string) int {
		mu.Lock()
		defer mu.Unlock()
		return strings.Count(buf.String(), s)
	}
	if n := count("redis unreachable"); n != 1 {
		t.Fatalf("%d outage warnings, want 1:\n%s", n, buf.String())
	}

	srv.Restart()
	waitSubscribed(t, relay, "a")
	if n := count("redis reachable again"); n != 1 {
		t.Fatalf("%d recovery lines, want 1", n)
	}
	if err := tombs.Bury(ctx, "y", time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	other := sharedstate.NewTombstones(dial(t, srv.URL()), prefix, 100)
	if got, err := other.Buried(ctx, "y"); err != nil || !got {
		t.Fatalf("burial after recovery not shared: %v, %v", got, err)
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  *bytes.Buffer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
