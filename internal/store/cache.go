package store

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// Key lookup cache defaults.
const (
	// DefaultCacheTTL is how long a lookup (found or not) is reused on one replica.
	DefaultCacheTTL = time.Second
	// DefaultCacheSize bounds the cached lookups.
	DefaultCacheSize = 10_000
)

// keyCacheKey is the cache key of the key with token; other kinds of rows (teams, users, ...)
// are cached under "<kind>:<id>" the same way, so one invalidation message format serves all.
func keyCacheKey(token string) string { return "key:" + token }

type cacheEntry struct {
	val   any // the row found (a Key, ...); nil when found is false
	found bool
	at    time.Time
	// gen is the cache's generation read before the database was (see keyCache.generation);
	// zero (never a generation: they start at 1) skips the check.
	gen uint64
}

// keyCache remembers recent lookups by cache key for ttl. Rows found and "no such row"
// answers are kept apart, each at most size entries (when full, an arbitrary entry of that
// kind makes room, O(1)), so a stream of made-up names (random bearer keys, invented
// x-litellm-end-user-id values) only pushes out other made-up names, never a real caller's
// cached rows. An expired entry is ignored when read and replaced when looked up again.
//
// Every forget or clear starts a new generation; a lookup that read the database before an
// invalidation is not cached after it (put drops an entry whose gen is older), so a read racing
// a write on another replica cannot put back the row the write just invalidated. While off (a
// Postgres store whose invalidation listener is disconnected), nothing is served or kept.
type keyCache struct {
	ttl  time.Duration
	size int
	mu   sync.Mutex
	m    map[string]cacheEntry // rows found
	miss map[string]cacheEntry // answers "no such row"
	gen  uint64
	off  bool
	// state is gen<<1 | off, stored under mu with every change of either, so CacheState
	// (read on every request with a store key) takes no lock.
	state atomic.Uint64
}

func newKeyCache(size int, ttl time.Duration) *keyCache {
	if ttl == 0 {
		ttl = DefaultCacheTTL
	}
	if size <= 0 {
		size = DefaultCacheSize
	}
	c := &keyCache{ttl: ttl, size: size, m: make(map[string]cacheEntry), miss: make(map[string]cacheEntry), gen: 1}
	c.publish()
	return c
}

// publish stores gen and off in state (c.mu held, or c not yet shared).
func (c *keyCache) publish() {
	var off uint64
	if c.off {
		off = 1
	}
	c.state.Store(c.gen<<1 | off)
}

func (c *keyCache) get(token string, now time.Time) (cacheEntry, bool) {
	if c.ttl < 0 {
		return cacheEntry{}, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[token]
	if !ok {
		e, ok = c.miss[token]
	}
	if !ok || c.off || now.Sub(e.at) >= c.ttl || now.Before(e.at) {
		return cacheEntry{}, false
	}
	return e, true
}

func (c *keyCache) put(token string, e cacheEntry, now time.Time) {
	if c.ttl < 0 {
		return
	}
	e.at = now
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.off || (e.gen != 0 && e.gen != c.gen) {
		return
	}
	m, other := c.m, c.miss
	if !e.found {
		m, other = c.miss, c.m
	}
	delete(other, token)
	if _, ok := m[token]; !ok && len(m) >= c.size {
		for t := range m { // one arbitrary entry: map iteration starts anywhere
			delete(m, t)
			break
		}
	}
	m[token] = e
}

// generation returns the current generation, to be read before a database read whose result
// is put (cacheEntry.gen).
func (c *keyCache) generation() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.gen
}

func (c *keyCache) forget(token string) {
	c.mu.Lock()
	delete(c.m, token)
	delete(c.miss, token)
	c.gen++
	c.publish()
	c.mu.Unlock()
}

// reset forgets every entry and turns the cache off (serving and keeping nothing) or on.
func (c *keyCache) reset(off bool) {
	c.mu.Lock()
	clear(c.m)
	clear(c.miss)
	c.gen++
	c.off = off
	c.publish()
	c.mu.Unlock()
}

// CacheState is the lookup cache's generation (it changes with every invalidation on this
// replica: a write here, or another replica's announced), how long a lookup is reused
// (Options.CacheTTL), and whether lookups are served from the cache now (not while it is off
// or disabled). A value derived from cached lookups may be reused while the generation is the
// one read before the lookups, the cache is on, and for no longer than the TTL after the
// oldest lookup it read (TrackReads): then it is no older than the lookups themselves could be.
func (s *Store) CacheState() (gen uint64, ttl time.Duration, on bool) {
	c := s.cache
	st := c.state.Load()
	return st >> 1, c.ttl, c.ttl >= 0 && st&1 == 0
}

// CacheSize is how many lookups the cache keeps at most (Options.CacheSize), found and not
// found apart; a value derived from them should be bounded alike.
func (s *Store) CacheSize() int { return s.cache.size }

// Now is the time on the store's clock (Options.Now).
func (s *Store) Now() time.Time { return s.now() }

// readsKey carries the *time.Time TrackReads updates.
type readsKey struct{}

// TrackReads returns ctx on which every cached lookup (Lookup, LookupTeam, ...) sets *oldest
// to the time its answer was read from the database, when that is earlier than *oldest (a
// lookup that reads the database now counts as now). Start *oldest at the current time.
func TrackReads(ctx context.Context, oldest *time.Time) context.Context {
	return context.WithValue(ctx, readsKey{}, oldest)
}

// noteRead records a lookup answered as read at at on ctx's TrackReads, if any.
func noteRead(ctx context.Context, at time.Time) {
	if p, _ := ctx.Value(readsKey{}).(*time.Time); p != nil && at.Before(*p) {
		*p = at
	}
}
