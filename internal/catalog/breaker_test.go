package catalog

import (
	"context"
	"encoding/json"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpgw/mcpgw/internal/fakemcp"
	"github.com/mcpgw/mcpgw/internal/jsonrpc"
	"github.com/mcpgw/mcpgw/internal/mcp"
	"github.com/mcpgw/mcpgw/internal/upstream"
)

// hangingTools is a fake whose tools/list hangs while hung is set; answered
// counts the lists it completed.
func hangingTools(t *testing.T, hung *atomic.Bool, opts fakemcp.Opts) *fakemcp.Server {
	t.Helper()
	opts.Handlers = map[string]fakemcp.Handler{
		mcp.MethodToolsList: func(json.RawMessage) (json.RawMessage, *jsonrpc.Error) {
			for hung.Load() {
				time.Sleep(5 * time.Millisecond)
			}
			return json.RawMessage(`{"resultType":"complete","ttlMs":60000,"cacheScope":"public","tools":[{"name":"x","inputSchema":{"type":"object"}}]}`), nil
		},
	}
	f := fakemcp.New(t, opts)
	t.Cleanup(func() { hung.Store(false) }) // runs before the fake closes
	return f
}

// One hung upstream used to make every aggregate tools/list wait the whole
// listing timeout. After it times out once, its breaker opens: the next
// aggregates answer at once with the healthy server's tools and report the
// hung one as skipped; after the cool-off exactly one request probes it
// (half-open) while others keep skipping; a failed probe doubles the
// cool-off and a successful one closes the breaker.
func TestListBreakerSkipsHungServer(t *testing.T) {
	var hung atomic.Bool
	hung.Store(true)
	healthy := fakemcp.New(t, fakemcp.Opts{Lists: map[string][]json.RawMessage{mcp.MethodToolsList: fakemcp.Tools("a", "b")}})
	flaky := hangingTools(t, &hung, fakemcp.Opts{})
	const listTimeout = 400 * time.Millisecond
	cat := newTestCatalog(t, Config{},
		upSpec{name: "healthy", fake: healthy},
		upSpec{name: "flaky", fake: flaky, tweak: func(c *upstream.Config) { c.ListTimeout = listTimeout }})
	var skew atomic.Int64
	cat.now = func() time.Time { return time.Now().Add(time.Duration(skew.Load())) }
	q := Query{Servers: []string{"healthy", "flaky"}, Prefixed: true, Binding: "b"}
	list := func() (listed, time.Duration) {
		start := time.Now()
		l := mustList(t, cat, q, mcp.MethodToolsList, "")
		return l, time.Since(start)
	}
	status := func(l listed) string { return l.outcomes["flaky"].(map[string]any)["status"].(string) }

	if l, _ := list(); status(l) != "timeout" {
		t.Fatalf("first aggregate: flaky outcome %v, want timeout", l.outcomes["flaky"])
	}
	l, took := list()
	if took > listTimeout/2 || status(l) != OutcomeSkipped {
		t.Fatalf("second aggregate took %v with flaky %v; want well under %v and skipped", took, l.outcomes["flaky"], listTimeout)
	}
	if got := l.field("name"); !slices.Equal(got, []string{"healthy-a", "healthy-b"}) {
		t.Fatalf("tools = %q", got)
	}
	if n := flaky.Count(mcp.MethodToolsList); n != 1 {
		t.Fatalf("flaky asked %d times while its breaker was open, want 1", n)
	}

	// Half-open: one probe, the others keep skipping.
	skew.Add(int64(DefaultBreakerCoolOff + time.Second))
	var wg sync.WaitGroup
	wg.Add(1)
	var probe listed
	go func() { defer wg.Done(); probe, _ = list() }()
	for flaky.Count(mcp.MethodToolsList) < 2 {
		time.Sleep(2 * time.Millisecond)
	}
	if l, took := list(); took > listTimeout/2 || status(l) != OutcomeSkipped {
		t.Fatalf("during the probe: took %v with flaky %v; want skipped at once", took, l.outcomes["flaky"])
	}
	wg.Wait()
	if status(probe) != "timeout" || flaky.Count(mcp.MethodToolsList) != 2 {
		t.Fatalf("probe: flaky %v after %d asks", probe.outcomes["flaky"], flaky.Count(mcp.MethodToolsList))
	}

	// The failed probe doubled the cool-off.
	skew.Add(int64(DefaultBreakerCoolOff + time.Second))
	if l, _ := list(); status(l) != OutcomeSkipped {
		t.Fatalf("within the doubled cool-off: flaky %v, want skipped", l.outcomes["flaky"])
	}
	hung.Store(false)
	skew.Add(int64(DefaultBreakerCoolOff))
	if l, _ := list(); status(l) != "ok" || !slices.Contains(l.field("name"), "flaky-x") {
		t.Fatalf("recovered probe: flaky %v, tools %q", l.outcomes["flaky"], l.field("name"))
	}
	if ok, probe := cat.breakers.admit("flaky", cat.now()); !ok || probe {
		t.Fatal("a successful probe did not close the breaker")
	}
}

// A server that hangs the first time (breaker still closed) costs an
// aggregate only the catalog's patience: the others are answered, the slow
// one is reported as timed out, and its fetch finishes in the background and
// fills the cache for the next aggregate.
func TestListPatienceAnswersWithoutSlowServer(t *testing.T) {
	var hung atomic.Bool
	hung.Store(true)
	healthy := fakemcp.New(t, fakemcp.Opts{Lists: map[string][]json.RawMessage{mcp.MethodToolsList: fakemcp.Tools("a")}})
	slow := hangingTools(t, &hung, fakemcp.Opts{})
	cat := newTestCatalog(t, Config{Patience: 200 * time.Millisecond},
		upSpec{name: "healthy", fake: healthy}, upSpec{name: "slow", fake: slow})
	q := Query{Servers: []string{"healthy", "slow"}, Prefixed: true, Binding: "b"}
	warm(cat, "slow")
	start := time.Now()
	l := mustList(t, cat, q, mcp.MethodToolsList, "")
	if took := time.Since(start); took > 2*time.Second {
		t.Fatalf("aggregate took %v with a 200ms patience", took)
	}
	if !jsonEqual(t, l.outcomes, `{"healthy":{"status":"ok","tool_count":1},"slow":{"status":"timeout"}}`) {
		t.Fatalf("outcomes = %v", l.outcomes)
	}
	hung.Store(false) // the background fetch now completes and is cached
	deadline := time.Now().Add(3 * time.Second)
	for len(cat.background) > 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	l = mustList(t, cat, q, mcp.MethodToolsList, "")
	if got := l.field("name"); !slices.Equal(got, []string{"healthy-a", "slow-x"}) {
		t.Fatalf("tools = %q", got)
	}
	if n := slow.Count(mcp.MethodToolsList); n != 1 {
		t.Fatalf("slow asked %d times; want its background answer cached", n)
	}
}

// A server slower than the patience but alive is not left out for good: once
// its background fetch answered, later aggregates wait for it.
func TestListPatienceLearnsSlowServer(t *testing.T) {
	slow := fakemcp.New(t, fakemcp.Opts{
		Lists: map[string][]json.RawMessage{mcp.MethodToolsList: fakemcp.Tools("s")},
		Delay: map[string]time.Duration{mcp.MethodToolsList: 300 * time.Millisecond},
	})
	healthy := fakemcp.New(t, fakemcp.Opts{Lists: map[string][]json.RawMessage{mcp.MethodToolsList: fakemcp.Tools("a")}})
	cat := newTestCatalog(t, Config{Patience: 50 * time.Millisecond}, upSpec{name: "healthy", fake: healthy}, upSpec{name: "slow", fake: slow})
	q := Query{Servers: []string{"healthy", "slow"}, Prefixed: true, Binding: "b"}
	warm(cat, "slow")
	if l := mustList(t, cat, q, mcp.MethodToolsList, ""); !jsonEqual(t, l.outcomes, `{"healthy":{"status":"ok","tool_count":1},"slow":{"status":"timeout"}}`) {
		t.Fatalf("first aggregate: %v", l.outcomes)
	}
	for deadline := time.Now().Add(3 * time.Second); cat.breakers.impatient("slow") && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
	l := mustList(t, cat, q, mcp.MethodToolsList, "")
	if got := l.field("name"); !slices.Equal(got, []string{"healthy-a", "slow-s"}) {
		t.Fatalf("second aggregate: tools %q, outcomes %v", got, l.outcomes)
	}
}

// warm records that server has answered before, as a first listing would.
func warm(cat *Catalog, server string) {
	cat.breakers.record(context.Background(), server, false, nil, cat.now())
}

// A server that has never answered may be starting (a stdio child, a package
// download): an aggregate waits for it up to the listing timeout rather than
// hiding its tools from a client that lists once. The only server of a query
// is waited for too: there is nobody else to answer.
func TestListPatienceWaitsForColdOrOnlyServer(t *testing.T) {
	healthy := fakemcp.New(t, fakemcp.Opts{Lists: map[string][]json.RawMessage{mcp.MethodToolsList: fakemcp.Tools("a")}})
	cold := fakemcp.New(t, fakemcp.Opts{
		Lists: map[string][]json.RawMessage{mcp.MethodToolsList: fakemcp.Tools("s")},
		Delay: map[string]time.Duration{mcp.MethodToolsList: 300 * time.Millisecond},
	})
	cat := newTestCatalog(t, Config{Patience: 50 * time.Millisecond}, upSpec{name: "healthy", fake: healthy}, upSpec{name: "cold", fake: cold})
	for _, tc := range []struct {
		name    string
		servers []string
		want    []string
	}{
		{"cold among others", []string{"healthy", "cold"}, []string{"healthy-a", "cold-s"}},
		{"warm but alone", []string{"cold"}, []string{"cold-s"}},
	} {
		q := Query{Servers: tc.servers, Prefixed: true, Binding: tc.name}
		l := mustList(t, cat, q, mcp.MethodToolsList, "")
		if got := l.field("name"); !slices.Equal(got, tc.want) {
			t.Fatalf("%s: tools %q, outcomes %v", tc.name, got, l.outcomes)
		}
	}
}

// Fetches left running in the background are bounded: beyond the slots, an
// unfinished fetch is cancelled.
func TestListBackgroundBounded(t *testing.T) {
	var hung atomic.Bool
	hung.Store(true)
	slow := hangingTools(t, &hung, fakemcp.Opts{})
	healthy := fakemcp.New(t, fakemcp.Opts{Lists: map[string][]json.RawMessage{mcp.MethodToolsList: fakemcp.Tools("a")}})
	cat := newTestCatalog(t, Config{Patience: 50 * time.Millisecond, MaxBackground: 2},
		upSpec{name: "healthy", fake: healthy}, upSpec{name: "slow", fake: slow})
	warm(cat, "slow")
	for i := 0; i < 5; i++ {
		q := Query{Servers: []string{"healthy", "slow"}, Prefixed: true, Binding: string(rune('a' + i))}
		mustList(t, cat, q, mcp.MethodToolsList, "")
		if n := len(cat.background); n > 2 {
			t.Fatalf("%d fetches in the background, want at most 2", n)
		}
	}
	hung.Store(false)
	for deadline := time.Now().Add(3 * time.Second); len(cat.background) > 0 && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
	if n := len(cat.background); n != 0 {
		t.Fatalf("%d background slots still held after the fetches ended", n)
	}
}

func TestBreakerIgnoresCallerFaults(t *testing.T) {
	b := newBreakers(1, time.Second, 4*time.Second)
	now := time.Now()
	ctx := context.Background()
	canceled, cancel := context.WithCancel(ctx)
	cancel()
	for _, tc := range []struct {
		name string
		ctx  context.Context
		err  error
		open bool
	}{
		{"answered", ctx, nil, false},
		{"caller went away", canceled, context.Canceled, false},
		{"impatient", ctx, errImpatient, false},
		{"auth refusal", ctx, &upstream.StatusError{Status: 401}, false},
		{"timeout", ctx, context.DeadlineExceeded, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b.record(tc.ctx, "s", false, tc.err, now)
			if ok, _ := b.admit("s", now); ok == tc.open {
				t.Fatalf("admitted=%v after %v, want open=%v", ok, tc.err, tc.open)
			}
		})
	}
}
