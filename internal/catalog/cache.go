package catalog

import (
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"sync"
	"time"
)

// ListKey names one upstream list as a caller fetched it.
type ListKey struct {
	Server, Method string
	// Binding is the caller and scope; a private entry belongs to it alone.
	Binding string
	// Credentials names the credentials the list was fetched with ("" for
	// none); entries are never shared across them.
	Credentials string
}

// Pages is one upstream list as fetched: its items, in order, and where the
// upstream's pages ended.
type Pages struct {
	Items []json.RawMessage
	// Cuts are the item counts at which one upstream page ended and the
	// next began: ascending, each strictly between 0 and len(Items); nil
	// when the upstream sent one page.
	Cuts []int
}

// Stamp is what a fetch reads from the cache before it asks the upstream,
// and hands back to Put: a Put whose stamp is no longer current stores
// nothing. Its values mean something only to the cache that made it.
type Stamp struct {
	// Gen counts the invalidations of the key's server and method.
	Gen uint64
	// Forgets changes whenever the key's server and credentials are
	// forgotten (see MemoryListCache.Forget).
	Forgets uint64
}

// ListCache holds upstream lists for as long as the upstream's ttlMs
// allows, and counts each server's list changes (and, when it can forget by
// credentials, each credentials' forgets) so that a fetch begun before a
// change cannot store what it fetched. The catalog treats a failing cache
// as empty: Get errors are misses, and a list whose Stamp or Put fails is
// served but not kept; a failed Invalidate is logged, and the stale entries
// then live until their expiry.
type ListCache interface {
	// Get returns the entry for k live at now: the public one of k's
	// server, method and credentials, else k.Binding's private one.
	Get(ctx context.Context, k ListKey, now time.Time) (list Pages, ok bool, err error)
	// Stamp returns the current stamp of k's server, method and
	// credentials; a fetch reads it before it asks the upstream.
	Stamp(ctx context.Context, k ListKey) (Stamp, error)
	// Put keeps list (its items and cuts) for k until expires, for every
	// binding with k's credentials, or for k.Binding alone when private; it
	// stores nothing when k's server and method were invalidated, or k's
	// server and credentials forgotten, since stamp was read.
	Put(ctx context.Context, k ListKey, private bool, list Pages, expires, now time.Time, stamp Stamp) error
	// Invalidate drops every entry of server's method list and advances
	// its generation.
	Invalidate(ctx context.Context, server, method string) error
}

// MemoryListCache is a ListCache within one process, of at most
// maxCacheEntries entries. Its zero value is an empty cache.
//
// Invalidate and Forget are one counter update each, not sweeps: every
// entry keeps the stamp it was stored under and Get drops an entry whose
// stamp is no longer current.
type MemoryListCache struct {
	mu      sync.Mutex
	entries map[string]cacheEntry
	// gens counts each server/method's list changes, so that a fetch begun
	// before a change cannot store what it fetched after it.
	gens map[genKey]uint64
	// creds holds, per server and credentials, how many entries are kept
	// for them and when they were last forgotten (see Forget).
	creds map[string]*credState
	// clock advances on every Forget; floor is the clock when forget
	// traces were last dropped (credentials without a state read as
	// forgotten at floor).
	clock, floor uint64
}

// credState is one server/credentials' entry count and last forget.
type credState struct {
	live   int    // entries kept
	forgot uint64 // the clock at the last Forget; at most floor if never since
}

// NewMemoryListCache returns an empty in-process list cache.
func NewMemoryListCache() *MemoryListCache { return &MemoryListCache{} }

// Stamp returns the change count of k's server and method and the last
// forget of its server and credentials.
func (c *MemoryListCache) Stamp(_ context.Context, k ListKey) (Stamp, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stampLocked(k.Server, k.Method, forgetKey(k.Server, k.Credentials)), nil
}

func (c *MemoryListCache) stampLocked(server, method, fk string) Stamp {
	st := Stamp{Gen: c.gens[genKey{server, method}], Forgets: c.floor}
	if cs := c.creds[fk]; cs != nil {
		st.Forgets = cs.forgot
	}
	return st
}

// genKey names one server's list method in gens.
type genKey struct{ server, method string }

type cacheEntry struct {
	list    Pages
	expires time.Time
	gen     genKey // its server and method
	cred    string // the creds key of its server and credentials
	stamp   Stamp  // the stamp it was stored under
}

func forgetKey(server, cred string) string { return server + "\x00" + cred }

// maxCacheEntries bounds the in-process cache; when full, expired and stale
// entries are swept and, if that is not enough, the cache starts over.
const maxCacheEntries = 10000

func cacheKey(server, method, owner, cred string) string {
	return server + "\x00" + method + "\x00" + owner + "\x00" + cred
}

// liveLocked reports whether e may still be served at now.
func (c *MemoryListCache) liveLocked(e cacheEntry, now time.Time) bool {
	if !now.Before(e.expires) || e.stamp.Gen != c.gens[e.gen] {
		return false
	}
	cs := c.creds[e.cred]
	return cs != nil && cs.forgot == e.stamp.Forgets
}

// dropLocked deletes the entry under key and counts it out of its
// credentials' state.
func (c *MemoryListCache) dropLocked(key string, e cacheEntry) {
	delete(c.entries, key)
	if cs := c.creds[e.cred]; cs != nil {
		cs.live--
		c.tidyLocked(e.cred, cs)
	}
}

// tidyLocked deletes a credentials' state that holds no entries and no
// forget newer than floor: reading it as absent gives the same stamp.
func (c *MemoryListCache) tidyLocked(fk string, cs *credState) {
	if cs.live <= 0 && cs.forgot <= c.floor {
		delete(c.creds, fk)
	}
}

// Get returns a live entry: the public one for these credentials, else the
// caller's private one; expired or stale entries it meets are dropped.
func (c *MemoryListCache) Get(_ context.Context, k ListKey, now time.Time) (Pages, bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, owner := range [2]string{"", k.Binding} {
		key := cacheKey(k.Server, k.Method, owner, k.Credentials)
		if e, ok := c.entries[key]; ok {
			if c.liveLocked(e, now) {
				return e.list, true, nil
			}
			c.dropLocked(key, e)
		}
	}
	return Pages{}, false, nil
}

// Put keeps list unless it changed or was forgotten since stamp.
func (c *MemoryListCache) Put(_ context.Context, k ListKey, private bool, list Pages, expires, now time.Time, stamp Stamp) error {
	owner := ""
	if private {
		owner = k.Binding
	}
	gk, fk := genKey{k.Server, k.Method}, forgetKey(k.Server, k.Credentials)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stampLocked(k.Server, k.Method, fk) != stamp {
		return nil // the list changed, or was forgotten, while it was being fetched
	}
	if c.entries == nil {
		c.entries = map[string]cacheEntry{}
	}
	key := cacheKey(k.Server, k.Method, owner, k.Credentials)
	if _, ok := c.entries[key]; !ok && len(c.entries) >= maxCacheEntries {
		c.makeRoomLocked(now)
	}
	cs := c.creds[fk]
	if cs == nil {
		if c.creds == nil {
			c.creds = map[string]*credState{}
		}
		cs = &credState{forgot: stamp.Forgets}
		c.creds[fk] = cs
	}
	if _, ok := c.entries[key]; !ok {
		cs.live++
	}
	c.entries[key] = cacheEntry{list: list, expires: expires, gen: gk, cred: fk, stamp: stamp}
	return nil
}

// makeRoomLocked sweeps expired and stale entries from a full cache and,
// when that is not enough, starts the entries over. Forget traces newer
// than floor are kept: they still refuse the fetches they stale.
func (c *MemoryListCache) makeRoomLocked(now time.Time) {
	for key, e := range c.entries {
		if !c.liveLocked(e, now) {
			c.dropLocked(key, e)
		}
	}
	if len(c.entries) < maxCacheEntries {
		return
	}
	c.entries = map[string]cacheEntry{}
	for fk, cs := range c.creds {
		cs.live = 0
		c.tidyLocked(fk, cs)
	}
}

// Invalidate makes the cached lists of one method of one server stale by
// advancing its generation; Get drops them as it meets them.
func (c *MemoryListCache) Invalidate(_ context.Context, server, method string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gens == nil {
		c.gens = map[genKey]uint64{}
	}
	c.gens[genKey{server, method}]++
	return nil
}

// templateMatches reports whether uri is an expansion of the RFC 6570 level-1
// template t: every {var} matches one non-empty run of characters without a
// slash ({+var} and {/var}… forms match anything).
func templateMatches(t, uri string) bool {
	var re strings.Builder
	re.WriteString("^")
	for t != "" {
		open := strings.IndexByte(t, '{')
		if open < 0 {
			re.WriteString(regexp.QuoteMeta(t))
			break
		}
		re.WriteString(regexp.QuoteMeta(t[:open]))
		end := strings.IndexByte(t[open:], '}')
		if end < 0 {
			return false
		}
		expr := t[open+1 : open+end]
		if expr != "" && strings.ContainsRune("+#/.;?&", rune(expr[0])) {
			re.WriteString(".*")
		} else {
			re.WriteString("[^/]+")
		}
		t = t[open+end+1:]
	}
	re.WriteString("$")
	ok, err := regexp.MatchString(re.String(), uri)
	return err == nil && ok
}
