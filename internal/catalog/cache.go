package catalog

import (
	"encoding/json"
	"regexp"
	"strings"
	"sync"
	"time"
)

// cache holds upstream lists for as long as the upstream's ttlMs allows.
// Entries with cacheScope "private" are keyed by the caller's binding and
// credentials and are never served to another caller; "public" entries are
// keyed by the credentials alone.
type cache struct {
	mu      sync.Mutex
	entries map[string]cacheEntry
	// gens counts each server/method's list changes, so that a fetch begun
	// before a change cannot store what it fetched after it.
	gens map[string]uint64
}

// generation returns the change count of a server's list method.
func (c *cache) generation(server, method string) uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.gens[server+"\x00"+method]
}

type cacheEntry struct {
	items   []json.RawMessage
	expires time.Time
}

// maxCacheEntries bounds the cache; when full, expired entries are swept and,
// if that is not enough, the cache starts over.
const maxCacheEntries = 10000

func cacheKey(server, method, owner, cred string) string {
	return server + "\x00" + method + "\x00" + owner + "\x00" + cred
}

// get returns a live entry: the public one for these credentials, else the
// caller's private one.
func (c *cache) get(server, method, binding, cred string, now time.Time) ([]json.RawMessage, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, owner := range [2]string{"", binding} {
		k := cacheKey(server, method, owner, cred)
		if e, ok := c.entries[k]; ok {
			if now.Before(e.expires) {
				return e.items, true
			}
			delete(c.entries, k)
		}
	}
	return nil, false
}

func (c *cache) put(server, method, binding, cred string, private bool, items []json.RawMessage, expires time.Time, now time.Time, gen uint64) {
	owner := ""
	if private {
		owner = binding
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gens[server+"\x00"+method] != gen {
		return // the list changed while it was being fetched
	}
	if len(c.entries) >= maxCacheEntries {
		for k, e := range c.entries {
			if !now.Before(e.expires) {
				delete(c.entries, k)
			}
		}
		if len(c.entries) >= maxCacheEntries {
			c.entries = map[string]cacheEntry{}
		}
	}
	c.entries[cacheKey(server, method, owner, cred)] = cacheEntry{items: items, expires: expires}
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

// dropServer forgets the cached lists of one method of one server.
func (c *cache) dropServer(server, method string) {
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
}
