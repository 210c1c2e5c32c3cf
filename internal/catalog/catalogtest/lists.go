// Package catalogtest holds the contract tests that every implementation of
// the catalog's seams (ListCache, Snapshots) must pass; an implementation's
// own tests call them.
package catalogtest

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/mcpgw/mcpgw/internal/catalog"
)

// put is one ListCache.Put of a case, made before the case's
// invalidations unless late; a stale put is late and carries the stamp
// read before them (its fetch began before the list changed).
type put struct {
	key     catalog.ListKey
	private bool
	items   string // a JSON array
	ttl     time.Duration
	late    bool
	stale   bool
}

// ListCache runs the catalog.ListCache contract against caches built by
// newCache: each call returns an empty cache that holds at least 100
// entries.
func ListCache(t *testing.T, newCache func() catalog.ListCache) {
	const tools, prompts = "tools/list", "prompts/list"
	alice := catalog.ListKey{Server: "a", Method: tools, Binding: "v1;u=alice|", Credentials: "c1"}
	with := func(k catalog.ListKey, edit func(*catalog.ListKey)) catalog.ListKey { edit(&k); return k }
	bob := with(alice, func(k *catalog.ListKey) { k.Binding = "v1;u=bob|" })
	otherCred := with(alice, func(k *catalog.ListKey) { k.Credentials = "c2" })
	otherMethod := with(alice, func(k *catalog.ListKey) { k.Method = prompts })
	prefixServer := with(alice, func(k *catalog.ListKey) { k.Server = "ab" })
	type invalidation struct{ server, method string }
	cases := []struct {
		name       string
		puts       []put
		invalidate []invalidation
		get        catalog.ListKey
		age        time.Duration // how long after the puts Get is asked
		want       string        // the items found; "" for a miss
	}{
		{name: "empty", get: alice},
		{name: "public: the same key hits", puts: []put{{key: alice, items: `[1]`, ttl: time.Hour}}, get: alice, want: `[1]`},
		{name: "public: another binding with the same credentials hits",
			puts: []put{{key: alice, items: `[1]`, ttl: time.Hour}}, get: bob, want: `[1]`},
		{name: "public: never across credentials",
			puts: []put{{key: alice, items: `[1]`, ttl: time.Hour}}, get: otherCred},
		{name: "private: the same binding hits",
			puts: []put{{key: alice, private: true, items: `[1]`, ttl: time.Hour}}, get: alice, want: `[1]`},
		{name: "private: another binding misses",
			puts: []put{{key: alice, private: true, items: `[1]`, ttl: time.Hour}}, get: bob},
		{name: "private: never across credentials of one binding",
			puts: []put{{key: alice, private: true, items: `[1]`, ttl: time.Hour}}, get: otherCred},
		{name: "the public entry is found before the private one",
			puts: []put{{key: alice, private: true, items: `[1]`, ttl: time.Hour}, {key: bob, items: `[2]`, ttl: time.Hour}},
			get:  alice, want: `[2]`},
		{name: "methods are apart", puts: []put{{key: alice, items: `[1]`, ttl: time.Hour}}, get: otherMethod},
		{name: "servers are apart, even by prefix", puts: []put{{key: alice, items: `[1]`, ttl: time.Hour}}, get: prefixServer},
		{name: "live until expiry", puts: []put{{key: alice, items: `[1]`, ttl: time.Minute}}, age: time.Minute - time.Second, get: alice, want: `[1]`},
		{name: "expired at expiry", puts: []put{{key: alice, items: `[1]`, ttl: time.Minute}}, age: time.Minute, get: alice},
		{name: "a later put replaces", puts: []put{{key: alice, items: `[1]`, ttl: time.Hour}, {key: bob, items: `[2]`, ttl: time.Hour}},
			get: alice, want: `[2]`},
		{name: "invalidate drops the server's method",
			puts: []put{{key: alice, items: `[1]`, ttl: time.Hour}}, invalidate: []invalidation{{"a", tools}}, get: alice},
		{name: "invalidate keeps the server's other methods",
			puts: []put{{key: otherMethod, items: `[1]`, ttl: time.Hour}}, invalidate: []invalidation{{"a", tools}}, get: otherMethod, want: `[1]`},
		{name: "invalidate keeps other servers",
			puts: []put{{key: prefixServer, items: `[1]`, ttl: time.Hour}}, invalidate: []invalidation{{"a", tools}}, get: prefixServer, want: `[1]`},
		{name: "a fetch begun before an invalidation is not stored",
			invalidate: []invalidation{{"a", tools}}, puts: []put{{key: alice, items: `[1]`, ttl: time.Hour, late: true, stale: true}}, get: alice},
		{name: "a fetch begun after an invalidation is stored",
			invalidate: []invalidation{{"a", tools}}, puts: []put{{key: alice, items: `[1]`, ttl: time.Hour, late: true}}, get: alice, want: `[1]`},
		{name: "another method's invalidation does not stale a fetch",
			invalidate: []invalidation{{"a", prompts}}, puts: []put{{key: alice, items: `[1]`, ttl: time.Hour, late: true, stale: true}}, get: alice, want: `[1]`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			c := newCache()
			now := time.Now().Truncate(time.Second)
			staleGen := map[catalog.ListKey]catalog.Stamp{}
			for _, p := range tc.puts {
				staleGen[p.key] = stamp(t, c, p.key)
			}
			store := func(late bool) {
				for _, p := range tc.puts {
					if p.late != late {
						continue
					}
					gen := stamp(t, c, p.key)
					if p.stale {
						gen = staleGen[p.key]
					}
					var items []json.RawMessage
					if err := json.Unmarshal([]byte(p.items), &items); err != nil {
						t.Fatal(err)
					}
					if err := c.Put(ctx, p.key, p.private, catalog.Pages{Items: items}, now.Add(p.ttl), now, gen); err != nil {
						t.Fatalf("Put: %v", err)
					}
				}
			}
			store(false)
			for _, inv := range tc.invalidate {
				if err := c.Invalidate(ctx, inv.server, inv.method); err != nil {
					t.Fatalf("Invalidate: %v", err)
				}
			}
			store(true)
			l, ok, err := c.Get(ctx, tc.get, now.Add(tc.age))
			if err != nil {
				t.Fatalf("Get: %v", err)
			}
			got := ""
			if ok {
				b, _ := json.Marshal(l.Items)
				got = string(b)
			}
			if got != tc.want {
				t.Fatalf("Get = %q (found %v), want %q", got, ok, tc.want)
			}
		})
	}
	t.Run("invalidate advances the stamp of its method only", func(t *testing.T) {
		c := newCache()
		before, other := stamp(t, c, alice), stamp(t, c, otherMethod)
		if err := c.Invalidate(context.Background(), alice.Server, alice.Method); err != nil {
			t.Fatal(err)
		}
		if stamp(t, c, alice) == before {
			t.Fatal("the stamp did not change")
		}
		if stamp(t, c, otherMethod) != other {
			t.Fatal("another method's stamp changed")
		}
	})
	if _, ok := newCache().(forgetter); ok {
		t.Run("forget", func(t *testing.T) { forgetContract(t, newCache) })
	}
	t.Run("items and page cuts come back as stored", func(t *testing.T) {
		c := newCache()
		now := time.Now()
		in := catalog.Pages{Items: []json.RawMessage{json.RawMessage(`{"name":"x","inputSchema":{"type":"object"}}`),
			json.RawMessage(`{"name":"y"}`), json.RawMessage(`{"name":"z"}`)}, Cuts: []int{1, 2}}
		if err := c.Put(context.Background(), alice, false, in, now.Add(time.Hour), now, stamp(t, c, alice)); err != nil {
			t.Fatal(err)
		}
		out, ok, err := c.Get(context.Background(), alice, now)
		if err != nil || !ok {
			t.Fatalf("Get = %v, %v", ok, err)
		}
		if !slices.EqualFunc(in.Items, out.Items, func(a, b json.RawMessage) bool { return string(a) == string(b) }) {
			t.Fatalf("Get = %s, want %s", out.Items, in.Items)
		}
		if !slices.Equal(in.Cuts, out.Cuts) {
			t.Fatalf("Get cuts = %v, want %v", out.Cuts, in.Cuts)
		}
	})
}

func stamp(t *testing.T, c catalog.ListCache, k catalog.ListKey) catalog.Stamp {
	t.Helper()
	st, err := c.Stamp(context.Background(), k)
	if err != nil {
		t.Fatalf("Stamp: %v", err)
	}
	return st
}
