package limits

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// Counter decides whether a key may make one more request within its limit.
type Counter interface {
	// Take counts one request by key against a limit of limit requests in
	// any window of length window, at time now, and reports whether it is
	// allowed. A refused request is not counted. The decision and the count
	// are one atomic step. An error means no decision could be made (the
	// limit or window is not positive, or a shared store is unreachable).
	Take(ctx context.Context, key string, limit int, window time.Duration, now time.Time) (Decision, error)
}

// Decision is the answer to one Take.
type Decision struct {
	// Allowed says the request may go ahead; it was counted.
	Allowed bool
	// Remaining is how many more requests key may make now (after this one,
	// when it was allowed).
	Remaining int
	// RetryAfter, when the request was refused, is how long until a request
	// by key would be allowed; 0 when allowed.
	RetryAfter time.Duration
}

// DefaultMaxKeys is how many keys a Memory holds unless told otherwise.
const DefaultMaxKeys = 10000

// Memory is a Counter for one process: a sliding window per key, for a
// bounded number of keys (the least recently used is evicted). It is safe for
// concurrent use and starts no goroutine.
type Memory struct {
	epoch time.Time // times are kept as nanoseconds since epoch
	max   int

	mu         sync.Mutex
	keys       map[string]*entry
	head, tail *entry // most and least recently used
}

// entry is one key's window: the times of the requests it allowed that may
// still be in the window, oldest first, in stamps[start:].
type entry struct {
	key        string
	stamps     []int64
	start      int
	prev, next *entry
}

// NewMemory returns an empty Memory holding at most maxKeys keys
// (DefaultMaxKeys when maxKeys is not positive).
func NewMemory(maxKeys int) *Memory {
	if maxKeys <= 0 {
		maxKeys = DefaultMaxKeys
	}
	return &Memory{epoch: time.Now(), max: maxKeys, keys: make(map[string]*entry)}
}

// Take counts one request by key if fewer than limit were allowed in the
// window before now.
func (m *Memory) Take(_ context.Context, key string, limit int, window time.Duration, now time.Time) (Decision, error) {
	if limit <= 0 || window <= 0 {
		return Decision{}, fmt.Errorf("limits: %d requests per %s: both must be positive", limit, window)
	}
	t := int64(now.Sub(m.epoch))
	m.mu.Lock()
	defer m.mu.Unlock()
	e := m.keys[key]
	if e == nil {
		e = m.add(key)
	} else {
		m.touch(e)
	}
	return e.take(t, limit, int64(window)), nil
}

// take decides one request at t (nanoseconds since the epoch).
func (e *entry) take(t int64, limit int, window int64) Decision {
	for e.start < len(e.stamps) && e.stamps[e.start] <= t-window {
		e.start++
	}
	live := len(e.stamps) - e.start
	if live >= limit {
		// Allowing one more needs live-limit+1 of them gone: wait for the
		// youngest of those to leave the window.
		leaves := e.stamps[e.start+live-limit] + window
		return Decision{RetryAfter: time.Duration(leaves - t)}
	}
	switch {
	case live == 0:
		e.stamps, e.start = e.stamps[:0], 0
	case e.start > 0 && len(e.stamps) == cap(e.stamps):
		n := copy(e.stamps, e.stamps[e.start:])
		e.stamps, e.start = e.stamps[:n], 0
	}
	if n := len(e.stamps); n > 0 && t < e.stamps[n-1] {
		// Concurrent callers read their clocks before taking the lock, so
		// times may arrive out of order: keep the window sorted.
		t = e.stamps[n-1]
	}
	e.stamps = append(e.stamps, t)
	return Decision{Allowed: true, Remaining: limit - live - 1}
}

// add holds a new key as the most recently used, evicting the least
// recently used key (and reusing its entry) when m is full.
func (m *Memory) add(key string) *entry {
	var e *entry
	if len(m.keys) >= m.max && m.tail != nil {
		e = m.tail
		m.unlink(e)
		delete(m.keys, e.key)
		e.key, e.stamps, e.start = key, e.stamps[:0], 0
	} else {
		e = &entry{key: key}
	}
	m.keys[key] = e
	m.pushFront(e)
	return e
}

// touch marks e as the most recently used.
func (m *Memory) touch(e *entry) {
	if m.head == e {
		return
	}
	m.unlink(e)
	m.pushFront(e)
}

func (m *Memory) pushFront(e *entry) {
	e.prev, e.next = nil, m.head
	if m.head != nil {
		m.head.prev = e
	}
	m.head = e
	if m.tail == nil {
		m.tail = e
	}
}

func (m *Memory) unlink(e *entry) {
	if e.prev != nil {
		e.prev.next = e.next
	} else {
		m.head = e.next
	}
	if e.next != nil {
		e.next.prev = e.prev
	} else {
		m.tail = e.prev
	}
	e.prev, e.next = nil, nil
}

// peek is what Take would decide for key at now without counting: how many
// requests are in the window and, when that is the limit or more, how long
// until one more would be allowed.
func (m *Memory) peek(key string, limit int, window time.Duration, now time.Time) (live int, retry time.Duration) {
	t := int64(now.Sub(m.epoch))
	m.mu.Lock()
	defer m.mu.Unlock()
	e := m.keys[key]
	if e == nil {
		return 0, 0
	}
	start := e.start
	for start < len(e.stamps) && e.stamps[start] <= t-int64(window) {
		start++
	}
	live = len(e.stamps) - start
	if live >= limit && limit > 0 {
		retry = time.Duration(e.stamps[start+live-limit] + int64(window) - t)
	}
	return live, retry
}

// oldestLeaves is how long until the oldest request in key's window leaves it.
func (m *Memory) oldestLeaves(key string, window time.Duration, now time.Time) time.Duration {
	t := int64(now.Sub(m.epoch))
	m.mu.Lock()
	defer m.mu.Unlock()
	e := m.keys[key]
	if e == nil || e.start >= len(e.stamps) {
		return 0
	}
	return max(time.Duration(e.stamps[e.start]+int64(window)-t), 0)
}
