package catalog

import (
	"context"
	"encoding/json"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/mcpgw/mcpgw/internal/fakemcp"
	"github.com/mcpgw/mcpgw/internal/jsonrpc"
	"github.com/mcpgw/mcpgw/internal/mcp"
	"github.com/mcpgw/mcpgw/internal/upstream"
)

// cacheStep is one List by a caller binding with credentials; want is the
// upstream's tools/list count afterwards.
type cacheStep struct {
	binding, cred string
	want          int
}

func TestListCache(t *testing.T) {
	const (
		a, b   = "v1;u=alice", "v1;u=bob"
		c1, c2 = "cred-1", "cred-2"
	)
	for _, tc := range []struct {
		name   string
		legacy bool
		ttl    *int64
		scope  string
		steps  []cacheStep
	}{
		{"public: another binding with the same credentials hits", false, fakemcp.TTL(60_000), "public",
			[]cacheStep{{a, "", 1}, {b, "", 1}, {a, "", 1}}},
		{"public: shared by credentials, not across them", false, fakemcp.TTL(60_000), "public",
			[]cacheStep{{a, c1, 1}, {b, c1, 1}, {b, c2, 2}, {a, c2, 2}, {a, "", 3}, {b, "", 3}}},
		{"private: the same binding hits, another misses", false, fakemcp.TTL(60_000), "private",
			[]cacheStep{{a, "", 1}, {a, "", 1}, {b, "", 2}, {b, "", 2}, {a, "", 2}}},
		{"private: never across credentials of one binding", false, fakemcp.TTL(60_000), "private",
			[]cacheStep{{a, c1, 1}, {a, c2, 2}, {a, c1, 2}, {b, c1, 3}}},
		{"ttlMs 0: never cached", false, fakemcp.TTL(0), "public",
			[]cacheStep{{a, "", 1}, {a, "", 2}, {b, "", 3}}},
		{"ttlMs absent: never cached", false, nil, "public",
			[]cacheStep{{a, "", 1}, {a, "", 2}}},
		{"ttlMs negative: never cached", false, fakemcp.TTL(-5), "public",
			[]cacheStep{{a, "", 1}, {a, "", 2}}},
		{"legacy upstream: never cached", true, nil, "",
			[]cacheStep{{a, "", 1}, {a, "", 2}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := fakemcp.New(t, fakemcp.Opts{Legacy: tc.legacy, TTLMs: tc.ttl, CacheScope: tc.scope,
				Lists: map[string][]json.RawMessage{mcp.MethodToolsList: fakemcp.Tools("x", "y")}})
			cat := newTestCatalog(t, Config{}, upSpec{name: "s", fake: f})
			for i, st := range tc.steps {
				q := Query{Servers: []string{"s"}, Prefixed: true, Binding: st.binding,
					CredentialKey: func(string) string { return st.cred }}
				l := mustList(t, cat, q, mcp.MethodToolsList, "")
				if got := l.field("name"); !slices.Equal(got, []string{"s-x", "s-y"}) {
					t.Fatalf("step %d: tools = %q", i, got)
				}
				if !jsonEqual(t, l.outcomes, `{"s":{"status":"ok","tool_count":2}}`) {
					t.Fatalf("step %d: outcomes = %v", i, l.outcomes)
				}
				if got := f.Count(mcp.MethodToolsList); got != st.want {
					t.Fatalf("step %d (%s, %q): upstream tools/list count = %d, want %d", i, st.binding, st.cred, got, st.want)
				}
			}
		})
	}
}

// The cache holds the upstream's list; each caller's view (its filter, its
// prefixing) is made afresh from it.
func TestListCachePresentsPerCaller(t *testing.T) {
	f := fakemcp.New(t, fakemcp.Opts{TTLMs: fakemcp.TTL(60_000), CacheScope: "public",
		Lists: map[string][]json.RawMessage{mcp.MethodToolsList: fakemcp.Tools("x", "y")}})
	cat := newTestCatalog(t, Config{}, upSpec{name: "s", fake: f})
	all := mustList(t, cat, Query{Servers: []string{"s"}, Prefixed: true, Binding: "a"}, mcp.MethodToolsList, "")
	some := mustList(t, cat, Query{Servers: []string{"s"}, Prefixed: true, Binding: "b",
		AllowTool: func(_, tool string) bool { return tool == "y" }}, mcp.MethodToolsList, "")
	bare := mustList(t, cat, Query{Servers: []string{"s"}, Binding: "c"}, mcp.MethodToolsList, "")
	again := mustList(t, cat, Query{Servers: []string{"s"}, Prefixed: true, Binding: "a"}, mcp.MethodToolsList, "")
	for _, tc := range []struct {
		l    listed
		want []string
	}{{all, []string{"s-x", "s-y"}}, {some, []string{"s-y"}}, {bare, []string{"x", "y"}}, {again, []string{"s-x", "s-y"}}} {
		if got := tc.l.field("name"); !slices.Equal(got, tc.want) {
			t.Fatalf("tools = %q, want %q", got, tc.want)
		}
	}
	if n := f.Count(mcp.MethodToolsList); n != 1 {
		t.Fatalf("upstream tools/list count = %d, want 1", n)
	}
}

// The Options a query gives are what is sent upstream; the cache key is
// what CredentialKey names.
func TestListCacheSendsQueryOptions(t *testing.T) {
	f := fakemcp.New(t, fakemcp.Opts{TTLMs: fakemcp.TTL(60_000), CacheScope: "private",
		Lists: map[string][]json.RawMessage{mcp.MethodToolsList: fakemcp.Tools("x")}})
	cat := newTestCatalog(t, Config{}, upSpec{name: "s", fake: f})
	for i, tenant := range []string{"t1", "t1", "t2"} {
		q := Query{Servers: []string{"s"}, Prefixed: true, Binding: "a",
			Options: func(string) upstream.Options {
				return upstream.Options{Header: map[string][]string{"X-Tenant": {tenant}}}
			},
			CredentialKey: func(string) string { return "tenant=" + tenant },
		}
		before := len(f.Requests(mcp.MethodToolsList))
		mustList(t, cat, q, mcp.MethodToolsList, "")
		reqs := f.Requests(mcp.MethodToolsList)
		if want := []int{1, 1, 2}[i]; len(reqs) != want {
			t.Fatalf("step %d: tools/list count = %d, want %d", i, len(reqs), want)
		}
		if len(reqs) > before {
			if got := reqs[len(reqs)-1].Header.Get("X-Tenant"); got != tenant {
				t.Fatalf("step %d: X-Tenant = %q, want %q", i, got, tenant)
			}
		}
	}
}

// fakeClock is a settable time source for the Catalog's now field.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) set(t time.Time) {
	c.mu.Lock()
	c.t = t
	c.mu.Unlock()
}

func TestListCacheExpiry(t *testing.T) {
	for _, scope := range []string{"public", "private"} {
		t.Run(scope, func(t *testing.T) {
			f := fakemcp.New(t, fakemcp.Opts{TTLMs: fakemcp.TTL(60_000), CacheScope: scope,
				Lists: map[string][]json.RawMessage{mcp.MethodToolsList: fakemcp.Tools("x")}})
			cat := newTestCatalog(t, Config{}, upSpec{name: "s", fake: f})
			t0 := time.Date(2026, 7, 28, 12, 0, 0, 0, time.UTC)
			clock := &fakeClock{t: t0}
			cat.now = clock.now
			q := Query{Servers: []string{"s"}, Prefixed: true, Binding: "a"}
			for i, st := range []struct {
				at   time.Duration
				want int
			}{
				{0, 1},
				{30 * time.Second, 1},
				{59*time.Second + 999*time.Millisecond, 1},
				{60 * time.Second, 2}, // expired at its deadline; refetched and cached until 2m
				{61 * time.Second, 2},
				{119 * time.Second, 2},
				{121 * time.Second, 3},
			} {
				clock.set(t0.Add(st.at))
				mustList(t, cat, q, mcp.MethodToolsList, "")
				if got := f.Count(mcp.MethodToolsList); got != st.want {
					t.Fatalf("step %d (t0+%v): tools/list count = %d, want %d", i, st.at, got, st.want)
				}
			}
		})
	}
}

// A failed list is never cached.
func TestListCacheSkipsFailures(t *testing.T) {
	fail := true
	var mu sync.Mutex
	f := fakemcp.New(t, fakemcp.Opts{TTLMs: fakemcp.TTL(60_000), CacheScope: "public",
		Handlers: map[string]func(json.RawMessage) (json.RawMessage, *jsonrpc.Error){
			mcp.MethodToolsList: func(json.RawMessage) (json.RawMessage, *jsonrpc.Error) {
				mu.Lock()
				defer mu.Unlock()
				if fail {
					return nil, &jsonrpc.Error{Code: -32603, Message: "down"}
				}
				return json.RawMessage(`{"resultType":"complete","tools":[{"name":"x"}],"ttlMs":60000,"cacheScope":"public"}`), nil
			},
		}})
	cat := newTestCatalog(t, Config{}, upSpec{name: "s", fake: f})
	q := Query{Servers: []string{"s"}, Prefixed: true, Binding: "a"}
	l := mustList(t, cat, q, mcp.MethodToolsList, "")
	if len(l.items) != 0 || !jsonEqual(t, l.outcomes, `{"s":{"status":"upstream_error"}}`) {
		t.Fatalf("first list: %s", l.raw)
	}
	mu.Lock()
	fail = false
	mu.Unlock()
	for range 2 {
		l = mustList(t, cat, q, mcp.MethodToolsList, "")
		if got := l.field("name"); !slices.Equal(got, []string{"s-x"}) {
			t.Fatalf("after recovery: %s", l.raw)
		}
	}
	if n := f.Count(mcp.MethodToolsList); n != 2 {
		t.Fatalf("tools/list count = %d, want 2 (failure not cached, success cached)", n)
	}
}

func TestCacheBounded(t *testing.T) {
	c := NewMemoryListCache()
	now := time.Unix(1000, 0)
	items := []json.RawMessage{json.RawMessage(`{}`)}
	for i := range maxCacheEntries {
		exp := now.Add(time.Minute)
		if i%2 == 0 {
			exp = now.Add(-time.Second) // already expired
		}
		putList(c, "s", "m", "b", itoa(i), false, items, exp, now, Stamp{})
	}
	putList(c, "s", "m", "b", "new", false, items, now.Add(time.Minute), now, Stamp{})
	if n := len(c.entries); n > maxCacheEntries/2+1 {
		t.Fatalf("after a sweep %d entries remain, want the %d live ones and the new one", n, maxCacheEntries/2)
	}
	if _, ok := getList(c, "s", "m", "b", "new", now); !ok {
		t.Fatal("the new entry is missing")
	}
	// When nothing expired, the cache starts over rather than growing.
	c.entries = map[string]cacheEntry{}
	for i := range maxCacheEntries {
		putList(c, "s", "m", "b", itoa(i), false, items, now.Add(time.Minute), now, Stamp{})
	}
	putList(c, "s", "m", "b", "new", false, items, now.Add(time.Minute), now, Stamp{})
	if n := len(c.entries); n != 1 {
		t.Fatalf("a full live cache holds %d entries after a put, want 1", n)
	}
}

func itoa(i int) string {
	b, _ := json.Marshal(i)
	return string(b)
}

func TestListChangedDropsTheServersEntries(t *testing.T) {
	cat := &Catalog{cache: NewMemoryListCache()}
	now := time.Now()
	putList(cat.cache, "a", "tools/list", "b", "", false, nil, now.Add(time.Hour), now, Stamp{})
	putList(cat.cache, "a", "prompts/list", "b", "", false, nil, now.Add(time.Hour), now, Stamp{})
	putList(cat.cache, "ab", "tools/list", "b", "", false, nil, now.Add(time.Hour), now, Stamp{})
	cat.ListChanged("a", "notifications/tools/list_changed")
	if _, ok := getList(cat.cache, "a", "tools/list", "b", "", now); ok {
		t.Fatal("tools list of a still cached")
	}
	if _, ok := getList(cat.cache, "a", "prompts/list", "b", "", now); !ok {
		t.Fatal("prompts list of a dropped too")
	}
	if _, ok := getList(cat.cache, "ab", "tools/list", "b", "", now); !ok {
		t.Fatal("another server's entry dropped")
	}
}

func TestAFetchOlderThanAListChangeIsNotCached(t *testing.T) {
	cat := &Catalog{cache: NewMemoryListCache()}
	now := time.Now()
	gen := listGen(cat.cache, "a", "tools/list") // a fetch begins
	cat.ListChanged("a", "notifications/tools/list_changed")
	putList(cat.cache, "a", "tools/list", "b", "", false, nil, now.Add(time.Hour), now, gen) // and ends
	if _, ok := getList(cat.cache, "a", "tools/list", "b", "", now); ok {
		t.Fatal("a list fetched before the change was cached after it")
	}
	putList(cat.cache, "a", "tools/list", "b", "", false, nil, now.Add(time.Hour), now, listGen(cat.cache, "a", "tools/list"))
	if _, ok := getList(cat.cache, "a", "tools/list", "b", "", now); !ok {
		t.Fatal("a fresh fetch was not cached")
	}
}

// putList is ListCache.Put for a key spelled out.
func putList(c ListCache, server, method, binding, cred string, private bool, items []json.RawMessage, expires, now time.Time, gen Stamp) {
	if err := c.Put(context.Background(), ListKey{server, method, binding, cred}, private, Pages{Items: items}, expires, now, gen); err != nil {
		panic(err)
	}
}

// getList is ListCache.Get for a key spelled out.
func getList(c ListCache, server, method, binding, cred string, now time.Time) ([]json.RawMessage, bool) {
	l, ok, err := c.Get(context.Background(), ListKey{server, method, binding, cred}, now)
	if err != nil {
		panic(err)
	}
	return l.Items, ok
}

// listGen is ListCache.Stamp for a key without credentials.
func listGen(c ListCache, server, method string) Stamp {
	gen, err := c.Stamp(context.Background(), ListKey{Server: server, Method: method})
	if err != nil {
		panic(err)
	}
	return gen
}
