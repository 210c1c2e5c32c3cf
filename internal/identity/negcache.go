package identity

import (
	"container/list"
	"crypto/sha256"
	"sync"
	"time"
)

// Defaults for the bounds around the custom_auth webhook.
const (
	// DefaultMaxWebhookCalls bounds concurrent webhook calls when Config.MaxWebhookCalls is zero.
	DefaultMaxWebhookCalls = 64
	// DefaultNegativeCacheTTL is how long a 401/403 from the webhook is remembered when
	// Config.NegativeCacheTTL is zero.
	DefaultNegativeCacheTTL = 5 * time.Second
	// DefaultNegativeCacheSize bounds the remembered refusals when Config.NegativeCacheSize is zero.
	DefaultNegativeCacheSize = 10000
)

// negKey is a digest that identifies a refusal; it is never the credential itself.
type negKey [sha256.Size]byte

// forbiddenKey derives the key a 403 is remembered under: the key's digest together with the
// method and path it was refused for, because a webhook may forbid one operation and allow another.
func forbiddenKey(keyDigest negKey, method, path string) negKey {
	h := sha256.New()
	h.Write([]byte("403\x00"))
	h.Write(keyDigest[:])
	h.Write([]byte(method))
	h.Write([]byte{0})
	h.Write([]byte(path))
	var k negKey
	h.Sum(k[:0])
	return k
}

type negEntry struct {
	key     negKey
	status  int
	expires time.Time
}

// negCache remembers recent webhook refusals: a bounded LRU with a fixed time to live. A nil
// *negCache remembers nothing.
type negCache struct {
	mu  sync.Mutex
	ttl time.Duration
	max int
	ll  *list.List // front is most recently used; values are *negEntry
	m   map[negKey]*list.Element
	now func() time.Time
}

func newNegCache(size int, ttl time.Duration) *negCache {
	if ttl < 0 || size < 0 {
		return nil
	}
	if ttl == 0 {
		ttl = DefaultNegativeCacheTTL
	}
	if size == 0 {
		size = DefaultNegativeCacheSize
	}
	return &negCache{ttl: ttl, max: size, ll: list.New(), m: make(map[negKey]*list.Element), now: time.Now}
}

// get returns the remembered status for k (0 when none or expired).
func (c *negCache) get(k negKey) int {
	if c == nil {
		return 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.m[k]
	if !ok {
		return 0
	}
	e := el.Value.(*negEntry)
	if !c.now().Before(e.expires) {
		c.ll.Remove(el)
		delete(c.m, k)
		return 0
	}
	c.ll.MoveToFront(el)
	return e.status
}

// put remembers status for k until the TTL passes, evicting the least recently used entry
// when full.
func (c *negCache) put(k negKey, status int) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	exp := c.now().Add(c.ttl)
	if el, ok := c.m[k]; ok {
		e := el.Value.(*negEntry)
		e.status, e.expires = status, exp
		c.ll.MoveToFront(el)
		return
	}
	for c.ll.Len() >= c.max {
		old := c.ll.Back()
		c.ll.Remove(old)
		delete(c.m, old.Value.(*negEntry).key)
	}
	c.m[k] = c.ll.PushFront(&negEntry{key: k, status: status, expires: exp})
}
