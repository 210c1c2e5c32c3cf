package catalog

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpgw/mcpgw/internal/fakemcp"
	"github.com/mcpgw/mcpgw/internal/jsonrpc"
	"github.com/mcpgw/mcpgw/internal/mcp"
)

// gatedTools is an upstream whose tools/list waits for release; the list
// it answers is names() at that moment, cacheable for a minute.
func gatedTools(t *testing.T, names func() []string) (f *fakemcp.Server, release func()) {
	t.Helper()
	gate := make(chan struct{})
	var once sync.Once
	release = func() { once.Do(func() { close(gate) }) }
	f = fakemcp.New(t, fakemcp.Opts{Handlers: map[string]fakemcp.Handler{
		mcp.MethodToolsList: func(json.RawMessage) (json.RawMessage, *jsonrpc.Error) {
			<-gate
			b, _ := json.Marshal(map[string]any{"resultType": "complete", "ttlMs": 60000, "cacheScope": "public", "tools": fakemcp.Tools(names()...)})
			return b, nil
		},
	}})
	t.Cleanup(release) // runs before the fake closes
	return f, release
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !cond(); time.Sleep(2 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
	}
}

// Callers missing the cache together share one upstream walk, and each
// sees the result through its own tool filter.
func TestConcurrentListFetchesShareOneUpstreamWalk(t *testing.T) {
	up, release := gatedTools(t, func() []string { return []string{"a", "b"} })
	cat := newTestCatalog(t, Config{}, upSpec{name: "s", fake: up})
	const n = 10
	got := make([][]string, n)
	var wg sync.WaitGroup
	for i := range n {
		only := []string{"a", "b"}[i%2]
		q := Query{Servers: []string{"s"}, Binding: "caller-" + only + string(rune('0'+i)), AllowTool: func(_, tool string) bool { return tool == only }}
		wg.Add(1)
		go func() {
			defer wg.Done()
			raw, f := cat.List(context.Background(), q, mcp.MethodToolsList, "")
			if f != nil {
				return
			}
			got[i] = decodeList(t, mcp.MethodToolsList, raw).field("name")
		}()
	}
	waitFor(t, "the walk reached the upstream", func() bool { return up.Count(mcp.MethodToolsList) == 1 })
	time.Sleep(50 * time.Millisecond) // the others join
	release()
	wg.Wait()
	if c := up.Count(mcp.MethodToolsList); c != 1 {
		t.Fatalf("%d concurrent callers made %d upstream tools/list walks, want 1", n, c)
	}
	for i, names := range got {
		if want := []string{[]string{"a", "b"}[i%2]}; !slices.Equal(names, want) {
			t.Fatalf("caller %d saw %q, want %q (its own filter)", i, names, want)
		}
	}
}

// A waiter whose context ends stops waiting at once; the walk goes on for
// the others.
func TestAWaiterLeavingDoesNotEndTheSharedWalk(t *testing.T) {
	forEachLeader(t, func(t *testing.T, lead leader) {
		up, release := gatedTools(t, func() []string { return []string{"a"} })
		cat := newTestCatalog(t, Config{}, upSpec{name: "s", fake: up})
		s, q := cat.servers["s"], Query{Servers: []string{"s"}, Binding: "b"}
		ctx, cancel := context.WithCancel(context.Background())
		first := make(chan error, 1)
		go func() { first <- lead(ctx, cat, q) }()
		waitFor(t, "the walk reached the upstream", func() bool { return up.Count(mcp.MethodToolsList) == 1 })
		second := make(chan []json.RawMessage, 1)
		go func() { items, _ := cat.fetch(context.Background(), q, s, mcp.MethodToolsList); second <- items }()
		waitFor(t, "the second joined", func() bool {
			cat.flights.mu.Lock()
			defer cat.flights.mu.Unlock()
			for _, f := range cat.flights.m {
				return f.waiters == 2
			}
			return false
		})
		cancel()
		select {
		case err := <-first:
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("the leaving waiter got %v, want its context's end", err)
			}
		case <-time.After(2 * time.Second):
			t.Fatal("a waiter whose context ended kept waiting")
		}
		release()
		if items := <-second; len(items) != 1 {
			t.Fatalf("the remaining waiter got %d items; the walk was ended under it", len(items))
		}
		if c := up.Count(mcp.MethodToolsList); c != 1 {
			t.Fatalf("%d upstream walks, want 1", c)
		}
	})
}

// The last waiter leaving ends the walk: it does not run on to the listing
// timeout.
func TestAWalkEndsWhenItsLastWaiterLeaves(t *testing.T) {
	forEachLeader(t, func(t *testing.T, lead leader) {
		up, _ := gatedTools(t, func() []string { return []string{"a"} })
		cat := newTestCatalog(t, Config{}, upSpec{name: "s", fake: up})
		q := Query{Servers: []string{"s"}, Binding: "b"}
		ctx, cancel := context.WithCancel(context.Background())
		errc := make(chan error, 1)
		go func() { errc <- lead(ctx, cat, q) }()
		waitFor(t, "the walk reached the upstream", func() bool { return up.Count(mcp.MethodToolsList) == 1 })
		f := onlyFlight(cat)
		cancel()
		<-errc
		select {
		case <-f.done:
		case <-time.After(2 * time.Second):
			t.Fatal("the walk ran on after its last waiter left")
		}
	})
}

// leader starts a walk of server s's tools/list as its first caller and
// returns the error its caller saw.
type leader func(ctx context.Context, cat *Catalog, q Query) error

// forEachLeader runs test with a walk led by a lone fetch (on a goroutine
// of the walk's own) and by a fan-out (List: on the fan-out's goroutine
// for the server, walkHere).
func forEachLeader(t *testing.T, test func(t *testing.T, lead leader)) {
	t.Run("fetch", func(t *testing.T) {
		test(t, func(ctx context.Context, cat *Catalog, q Query) error {
			_, err := cat.fetch(ctx, q, cat.servers["s"], mcp.MethodToolsList)
			return err
		})
	})
	t.Run("fan-out", func(t *testing.T) {
		test(t, func(ctx context.Context, cat *Catalog, q Query) error {
			// The listing's fan-out, whose per-server error a listing
			// turns into an outcome.
			return cat.gather(ctx, q, mcp.MethodToolsList)[0].err
		})
	})
}

// onlyFlight is cat's one walk in flight (nil when none).
func onlyFlight(cat *Catalog) *flight {
	cat.flights.mu.Lock()
	defer cat.flights.mu.Unlock()
	for _, f := range cat.flights.m {
		return f
	}
	return nil
}

// A caller whose stamp is newer than a walk's (the list changed since the
// walk began) does not share it: it walks again and sees the change.
func TestACallerAfterAListChangeDoesNotShareAnOlderWalk(t *testing.T) {
	var names atomic.Value
	names.Store([]string{"old"})
	up, release := gatedTools(t, func() []string { return names.Load().([]string) })
	cat := newTestCatalog(t, Config{}, upSpec{name: "s", fake: up})
	s, q := cat.servers["s"], Query{Servers: []string{"s"}, Binding: "b"}
	older := make(chan []json.RawMessage, 1)
	go func() { items, _ := cat.fetch(context.Background(), q, s, mcp.MethodToolsList); older <- items }()
	waitFor(t, "the walk reached the upstream", func() bool { return up.Count(mcp.MethodToolsList) == 1 })
	cat.ListChanged("s", mcp.NotifToolsListChanged)
	names.Store([]string{"new"})
	newer := make(chan []json.RawMessage, 1)
	go func() { items, _ := cat.fetch(context.Background(), q, s, mcp.MethodToolsList); newer <- items }()
	waitFor(t, "a second walk reached the upstream", func() bool { return up.Count(mcp.MethodToolsList) == 2 })
	release()
	<-older
	if items := <-newer; len(items) != 1 || !json.Valid(items[0]) || string(items[0]) != string(fakemcp.Tools("new")[0]) {
		t.Fatalf("the caller after the change got %s", items)
	}
	if items, ok := getList(cat.cache, "s", mcp.MethodToolsList, "b", "", time.Now()); !ok || string(items[0]) != string(fakemcp.Tools("new")[0]) {
		t.Fatalf("cached after the change: %s (found %v)", items, ok)
	}
}
