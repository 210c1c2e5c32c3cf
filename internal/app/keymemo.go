package app

import (
	"sync"
	"time"

	"github.com/mcpgw/mcpgw/internal/identity"
	"github.com/mcpgw/mcpgw/internal/store"
)

// keyMemo remembers the identity.StoredKey keyLookup resolved for a key and end user, so a
// repeated request with the same store key is one read-locked map lookup instead of a cache
// lookup per level, the copy of each row out of the cache and the assembly of the levels. An
// entry is served only while the store's cache is on and has seen no invalidation since the
// lookups it was made from (store.CacheState's generation, read before them), and for no longer
// than the cache's TTL after the oldest of those lookups (store.TrackReads): so it is never
// staler than the cached rows would be. Times are the store's clock (store.Options.Now), as the
// cache's are. Only keys found are kept; at most the cache's size (store.Options.CacheSize,
// default store.DefaultCacheSize) entries, as many as the cache keeps keys (when full, an
// arbitrary entry makes room), so made-up end-user ids cannot grow it.
type keyMemo struct {
	mu sync.RWMutex
	m  map[keyMemoKey]keyMemoEntry
}

type keyMemoKey struct{ hash, endUser string }

type keyMemoEntry struct {
	key   identity.StoredKey // shared by every request it serves: read, never changed
	gen   uint64
	until time.Time
}

// get is the key remembered for k, if it may still be served.
func (m *keyMemo) get(st *store.Store, k keyMemoKey, now time.Time) (identity.StoredKey, bool) {
	gen, _, on := st.CacheState()
	if !on {
		return identity.StoredKey{}, false
	}
	m.mu.RLock()
	e, ok := m.m[k]
	m.mu.RUnlock()
	if !ok || e.gen != gen || !now.Before(e.until) {
		return identity.StoredKey{}, false
	}
	return e.key, true
}

// put remembers key for k, resolved from lookups made after the store's generation was gen,
// the oldest of them read at oldest.
func (m *keyMemo) put(st *store.Store, k keyMemoKey, key identity.StoredKey, gen uint64, oldest time.Time) {
	_, ttl, on := st.CacheState()
	if !on || ttl <= 0 {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.m == nil {
		m.m = make(map[keyMemoKey]keyMemoEntry)
	}
	if _, ok := m.m[k]; !ok && len(m.m) >= st.CacheSize() {
		for old := range m.m { // one arbitrary entry: map iteration starts anywhere
			delete(m.m, old)
			break
		}
	}
	m.m[k] = keyMemoEntry{key: key, gen: gen, until: oldest.Add(ttl)}
}
