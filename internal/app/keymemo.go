package app

import (
	"context"
	"sync"
	"time"

	"github.com/mcpgw/mcpgw/internal/identity"
	"github.com/mcpgw/mcpgw/internal/store"
)

// memo remembers values derived from the store's cached lookups: keyLookup's
// identity.StoredKey for a key and end user, so a repeated request with the same store key is
// one read-locked map lookup instead of a cache lookup per level, the copy of each row out of
// the cache and the assembly of the levels; budgetAdmit's budgets of a key and its team. An
// entry is served only while the store's cache is on and has seen no invalidation since the
// lookups it was made from (store.CacheState's generation, read before them), and for no longer
// than the cache's TTL after the oldest of those lookups (store.TrackReads): so it is never
// staler than the cached rows would be. Times are the store's clock (store.Options.Now), as the
// cache's are. Only keys found are kept; at most the cache's size (store.Options.CacheSize,
// default store.DefaultCacheSize) entries, as many as the cache keeps keys (when full, an
// arbitrary entry makes room), so made-up end-user ids cannot grow it.
type memo[K comparable, V any] struct {
	mu sync.RWMutex
	m  map[K]memoEntry[V]
}

// keyMemo is keyLookup's memo.
type keyMemo = memo[keyMemoKey, identity.StoredKey]

type keyMemoKey struct{ hash, endUser string }

type memoEntry[V any] struct {
	val   V // shared by every request it serves: read, never changed
	gen   uint64
	until time.Time
}

// get is the value remembered for k, if it may still be served.
func (m *memo[K, V]) get(st *store.Store, k K, now time.Time) (V, bool) {
	var zero V
	gen, _, on := st.CacheState()
	if !on {
		return zero, false
	}
	m.mu.RLock()
	e, ok := m.m[k]
	m.mu.RUnlock()
	if !ok || e.gen != gen || !now.Before(e.until) {
		return zero, false
	}
	return e.val, true
}

// load returns k's value from the memo or, on a miss, from read (given a context that
// tracks the oldest row it reads), remembering what read returns when keep is true.
func (m *memo[K, V]) load(ctx context.Context, st *store.Store, k K, now time.Time,
	read func(ctx context.Context) (v V, keep bool, err error)) (V, error) {
	if v, ok := m.get(st, k, now); ok {
		return v, nil
	}
	gen, _, _ := st.CacheState()
	oldest := now
	v, keep, err := read(store.TrackReads(ctx, &oldest))
	if err == nil && keep {
		m.put(st, k, v, gen, oldest)
	}
	return v, err
}

// put remembers v for k, derived from lookups made after the store's generation was gen,
// the oldest of them read at oldest.
func (m *memo[K, V]) put(st *store.Store, k K, v V, gen uint64, oldest time.Time) {
	_, ttl, on := st.CacheState()
	if !on || ttl <= 0 {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.m == nil {
		m.m = make(map[K]memoEntry[V])
	}
	if _, ok := m.m[k]; !ok && len(m.m) >= st.CacheSize() {
		for old := range m.m { // one arbitrary entry: map iteration starts anywhere
			delete(m.m, old)
			break
		}
	}
	m.m[k] = memoEntry[V]{val: v, gen: gen, until: oldest.Add(ttl)}
}
