package catalog

import "sync/atomic"

// CacheStats counts the list cache's hits and misses for metrics. One
// CacheStats may be shared by the catalogs of successive configs, so the
// counts survive a reload; the zero value is ready to use.
type CacheStats struct {
	hits, misses atomic.Uint64
}

// Hits is how many server lists were served from the cache.
func (s *CacheStats) Hits() uint64 { return s.hits.Load() }

// Misses is how many server lists the cache did not hold (or failed to
// read), so they were fetched from the upstream.
func (s *CacheStats) Misses() uint64 { return s.misses.Load() }

// count adds one hit or miss; a nil s counts nothing.
func (s *CacheStats) count(hit bool) {
	switch {
	case s == nil:
	case hit:
		s.hits.Add(1)
	default:
		s.misses.Add(1)
	}
}

// Breaker states as BreakerStates reports them.
const (
	BreakerClosed   = "closed"
	BreakerOpen     = "open"
	BreakerHalfOpen = "half_open"
)

// BreakerStates calls visit with every configured server's listing breaker
// state (BreakerClosed, BreakerOpen or BreakerHalfOpen: a probe is in
// flight), for metrics read when scraped. visit must not call back into c.
func (c *Catalog) BreakerStates(visit func(server, state string)) {
	b := c.breakers
	b.mu.Lock()
	defer b.mu.Unlock()
	for name := range c.servers {
		state := BreakerClosed
		if br := b.m[name]; br != nil && !br.openUntil.IsZero() {
			state = BreakerOpen
			if br.probing {
				state = BreakerHalfOpen
			}
		}
		visit(name, state)
	}
}
