package catalogtest

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/mcpgw/mcpgw/internal/catalog"
)

// forgetter is a ListCache that can forget one server's lists fetched with
// given credentials (the catalog's optional seam).
type forgetter interface {
	Forget(ctx context.Context, server, credentials string) error
}

// forgetContract is the contract of a ListCache that can forget: a forget
// stales its server and credentials' entries (every method and binding) and
// the fetches with them in flight, and nothing else.
func forgetContract(t *testing.T, newCache func() catalog.ListCache) {
	ctx := context.Background()
	alice := catalog.ListKey{Server: "a", Method: "tools/list", Binding: "v1;u=alice|", Credentials: "c1"}
	with := func(edit func(*catalog.ListKey)) catalog.ListKey { k := alice; edit(&k); return k }
	items := catalog.Pages{Items: []json.RawMessage{json.RawMessage(`1`)}}
	put := func(t *testing.T, c catalog.ListCache, k catalog.ListKey, private bool, st catalog.Stamp, now time.Time) {
		t.Helper()
		if err := c.Put(ctx, k, private, items, now.Add(time.Hour), now, st); err != nil {
			t.Fatalf("Put: %v", err)
		}
	}
	has := func(t *testing.T, c catalog.ListCache, k catalog.ListKey, now time.Time) bool {
		t.Helper()
		_, ok, err := c.Get(ctx, k, now)
		if err != nil {
			t.Fatalf("Get: %v", err)
		}
		return ok
	}
	forget := func(t *testing.T, c catalog.ListCache, server, cred string) {
		t.Helper()
		if err := c.(forgetter).Forget(ctx, server, cred); err != nil {
			t.Fatalf("Forget: %v", err)
		}
	}
	t.Run("drops the credentials' entries of every method and binding", func(t *testing.T) {
		c, now := newCache(), time.Now()
		keys := []catalog.ListKey{alice, with(func(k *catalog.ListKey) { k.Method = "prompts/list" })}
		for _, k := range keys {
			put(t, c, k, false, stamp(t, c, k), now)
		}
		bob := with(func(k *catalog.ListKey) { k.Binding = "v1;u=bob|"; k.Method = "resources/list" })
		put(t, c, bob, true, stamp(t, c, bob), now)
		forget(t, c, "a", "c1")
		for _, k := range append(keys, bob) {
			if has(t, c, k, now) {
				t.Fatalf("%+v served after its credentials were forgotten", k)
			}
		}
	})
	t.Run("keeps other credentials and servers", func(t *testing.T) {
		c, now := newCache(), time.Now()
		others := []catalog.ListKey{with(func(k *catalog.ListKey) { k.Credentials = "c2" }), with(func(k *catalog.ListKey) { k.Server = "b" })}
		for _, k := range others {
			put(t, c, k, false, stamp(t, c, k), now)
		}
		forget(t, c, "a", "c1")
		for _, k := range others {
			if !has(t, c, k, now) {
				t.Fatalf("%+v dropped by another credentials' forget", k)
			}
		}
	})
	t.Run("a fetch begun before a forget is not stored", func(t *testing.T) {
		c, now := newCache(), time.Now()
		st := stamp(t, c, alice) // the fetch begins
		forget(t, c, "a", "c1")  // a call changes the list meanwhile
		put(t, c, alice, false, st, now)
		if has(t, c, alice, now) {
			t.Fatal("a list fetched before a forget was stored after it")
		}
	})
	t.Run("a fetch begun after a forget is stored", func(t *testing.T) {
		c, now := newCache(), time.Now()
		forget(t, c, "a", "c1")
		put(t, c, alice, false, stamp(t, c, alice), now)
		if !has(t, c, alice, now) {
			t.Fatal("a list fetched after a forget was not stored")
		}
	})
	t.Run("another credentials' forget does not stale a fetch", func(t *testing.T) {
		c, now := newCache(), time.Now()
		st := stamp(t, c, alice)
		forget(t, c, "a", "c2")
		put(t, c, alice, false, st, now)
		if !has(t, c, alice, now) {
			t.Fatal("another credentials' forget staled a fetch")
		}
	})
}
