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

// ListCache holds upstream lists for as long as the upstream's ttlMs
// allows, and counts each server's list changes so that a fetch begun
// before a change cannot store what it fetched. The catalog treats a failing
// cache as empty: Get errors are misses, and a list whose Generation or Put
// fails is served but not kept; a failed Invalidate is logged, and the
// stale entries then live until their expiry.
type ListCache interface {
	// Get returns the entry for k live at now: the public one of k's
	// server, method and credentials, else k.Binding's private one.
	Get(ctx context.Context, k ListKey, now time.Time) (list Pages, ok bool, err error)
	// Generation returns how many times server's method list was
	// invalidated.
	Generation(ctx context.Context, server, method string) (uint64, error)
	// Put keeps list (its items and cuts) for k until expires, for every
	// binding with k's credentials, or for k.Binding alone when private; it
	// stores nothing when the generation of k's server and method is no
	// longer gen.
	Put(ctx context.Context, k ListKey, private bool, list Pages, expires, now time.Time, gen uint64) error
	// Invalidate drops every entry of server's method list and advances
	// its generation.
	Invalidate(ctx context.Context, server, method string) error
}

// MemoryListCache is a ListCache within one process, of at most
// maxCacheEntries entries. Its zero value is an empty cache.
type MemoryListCache struct {
	mu      sync.Mutex
	entries map[string]cacheEntry
	// gens counts each server/method's list changes, so that a fetch begun
	// before a change cannot store what it fetched after it.
	gens map[string]uint64
	// forgets counts each server/credentials' Forget calls; an entry kept
	// under an older count is stale. Forget is on the tools/call path, so
	// it is one map update, not a sweep of the entries.
	forgets map[string]uint64
}

// NewMemoryListCache returns an empty in-process list cache.
func NewMemoryListCache() *MemoryListCache { return &MemoryListCache{} }

// Generation returns the change count of a server's list method.
func (c *MemoryListCache) Generation(_ context.Context, server, method string) (uint64, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.gens[server+"\x00"+method], nil
}

type cacheEntry struct {
	list    Pages
	expires time.Time
	forgets uint64 // the server/credentials' Forget count when kept
}

func forgetKey(server, cred string) string { return server + "\x00" + cred }

// maxCacheEntries bounds the in-process cache; when full, expired entries
// are swept and, if that is not enough, the cache starts over.
const maxCacheEntries = 10000

func cacheKey(server, method, owner, cred string) string {
	return server + "\x00" + method + "\x00" + owner + "\x00" + cred
}

// Get returns a live entry: the public one for these credentials, else the
// caller's private one; expired entries it meets are dropped.
func (c *MemoryListCache) Get(_ context.Context, k ListKey, now time.Time) (Pages, bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, owner := range [2]string{"", k.Binding} {
		key := cacheKey(k.Server, k.Method, owner, k.Credentials)
		if e, ok := c.entries[key]; ok {
			if now.Before(e.expires) && e.forgets == c.forgets[forgetKey(k.Server, k.Credentials)] {
				return e.list, true, nil
			}
			delete(c.entries, key)
		}
	}
	return Pages{}, false, nil
}

// Put keeps list unless it changed since gen.
func (c *MemoryListCache) Put(_ context.Context, k ListKey, private bool, list Pages, expires, now time.Time, gen uint64) error {
	owner := ""
	if private {
		owner = k.Binding
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gens[k.Server+"\x00"+k.Method] != gen {
		return nil // the list changed while it was being fetched
	}
	if c.entries == nil {
		c.entries = map[string]cacheEntry{}
	}
	if len(c.entries) >= maxCacheEntries {
		for key, e := range c.entries {
			if !now.Before(e.expires) {
				delete(c.entries, key)
			}
		}
		if len(c.entries) >= maxCacheEntries {
			c.entries = map[string]cacheEntry{}
		}
	}
	c.entries[cacheKey(k.Server, k.Method, owner, k.Credentials)] = cacheEntry{list: list, expires: expires,
		forgets: c.forgets[forgetKey(k.Server, k.Credentials)]}
	return nil
}

// Invalidate forgets the cached lists of one method of one server.
func (c *MemoryListCache) Invalidate(_ context.Context, server, method string) error {
	prefix := server + "\x00" + method + "\x00"
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gens == nil {
		c.gens = map[string]uint64{}
	}
	c.gens[server+"\x00"+method]++
	for k := range c.entries {
		if strings.HasPrefix(k, prefix) {
			delete(c.entries, k)
		}
	}
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
