package app

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/mcpgw/mcpgw/internal/allocstest"
	"github.com/mcpgw/mcpgw/internal/identity"
	"github.com/mcpgw/mcpgw/internal/store"
)

// TestKeyMemoFollowsWrites: a repeated lookup of a store key is served from the memo without
// allocating, yet a write on this replica (the key blocked, its team blocked) is seen by the
// very next lookup, and one the cache cannot hear of (another handle on the same database, as
// another replica without invalidation) within the cache's TTL, as the cached rows are.
func TestKeyMemoFollowsWrites(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	const ttl = time.Second
	st, err := store.OpenSQLite(ctx, dir, store.Options{CacheTTL: ttl})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	mustDo(t, func() error { _, err := st.CreateTeam(ctx, store.Team{TeamID: "t"}); return err })
	secret, _, err := st.Generate(ctx, store.NewKey{TeamID: "t"})
	if err != nil {
		t.Fatal(err)
	}
	hash := store.Hash(secret)
	lookup := keyLookup(st)
	if k, found, err := lookup(ctx, hash, ""); err != nil || !found || k.Blocked || k.BlockedBy != "" {
		t.Fatalf("first lookup: %+v %v %v", k, found, err)
	}
	if n := allocstest.Least(50, func() { _, _, _ = lookup(ctx, hash, "") }); n != 0 {
		t.Fatalf("a repeated lookup allocates %v times, want 0 (served from the memo)", n)
	}
	if _, err := st.UpdateTeam(ctx, "t", func(tm *store.Team) { tm.Blocked = true }); err != nil {
		t.Fatal(err)
	}
	read := time.Now() // the rows are read again now, and cached for ttl from here
	if k, _, _ := lookup(ctx, hash, ""); k.BlockedBy != "team" {
		t.Fatalf("after the team was blocked: BlockedBy %q, want team", k.BlockedBy)
	}
	// Served from the memo meanwhile: a hit must not stretch the entry past the TTL of the
	// rows it was made from.
	time.Sleep(ttl * 6 / 10)
	_, _, _ = lookup(ctx, hash, "")
	blockElsewhere(t, dir, hash)
	deadline := read.Add(ttl + 300*time.Millisecond)
	for {
		k, _, err := lookup(ctx, hash, "")
		if err != nil {
			t.Fatal(err)
		}
		if k.Blocked {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("a key blocked by another replica was still served unblocked past the TTL of the rows read")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestKeyMemoUsesStoreClockAndSize: the memo ages its entries on the store's clock (a store
// clock moves past the TTL while the wall clock barely does makes the next lookup read the rows
// again and see a write it could not hear of), and keeps at most the store's
// configured cache size of entries.
func TestKeyMemoUsesStoreClockAndSize(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	const ttl = time.Second
	var mu sync.Mutex
	clock := time.Now()
	now := func() time.Time { mu.Lock(); defer mu.Unlock(); return clock }
	st, err := store.OpenSQLite(ctx, dir, store.Options{CacheTTL: ttl, CacheSize: 2, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	secret, _, err := st.Generate(ctx, store.NewKey{})
	if err != nil {
		t.Fatal(err)
	}
	hash := store.Hash(secret)
	lookup := keyLookup(st)
	if _, found, err := lookup(ctx, hash, ""); err != nil || !found {
		t.Fatalf("first lookup: %v %v", found, err)
	}
	blockElsewhere(t, dir, hash)
	if k, _, _ := lookup(ctx, hash, ""); k.Blocked {
		t.Fatal("within the TTL the memo was not served (the other handle's write cannot be heard of)")
	}
	mu.Lock()
	clock = clock.Add(ttl)
	mu.Unlock()
	if k, _, _ := lookup(ctx, hash, ""); !k.Blocked {
		t.Fatal("an entry past the TTL on the store's clock was still served")
	}

	var m keyMemo
	gen, _, _ := st.CacheState()
	for _, u := range []string{"a", "b", "c", "d"} {
		m.put(st, keyMemoKey{hash, u}, identity.StoredKey{}, gen, now())
	}
	if len(m.m) != 2 {
		t.Fatalf("the memo holds %d entries, want the store's cache size 2", len(m.m))
	}
}

// blockElsewhere blocks the key with hash through another handle on the store in dir, as
// another replica whose write this one's cache does not hear of.
func blockElsewhere(t *testing.T, dir, hash string) {
	t.Helper()
	other, err := store.OpenSQLite(context.Background(), dir, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = other.Close() })
	if _, err := other.SetBlocked(context.Background(), hash, true); err != nil {
		t.Fatal(err)
	}
}
