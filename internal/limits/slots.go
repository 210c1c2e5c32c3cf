package limits

import "sync"

// Slots bounds how many requests by one key are in flight at once: a
// semaphore per key whose size the caller gives on every Acquire, so a
// changed limit holds from the next request. A request over the limit is
// refused at once, never queued.
type Slots interface {
	// Acquire takes one of key's limit slots and reports whether it got
	// one; when it did, release gives it back (at most once counts). force
	// takes a slot even when none is free (a request that must not be
	// refused is still counted in flight). A limit that is not positive
	// refuses every request without force.
	Acquire(key string, limit int, force bool) (release func(), ok bool)
}

// MemorySlots is Slots for one process. It holds an entry only for a key
// with a request in flight, so it never holds more entries than there are
// requests in flight; the last release drops the entry. It is safe for
// concurrent use and starts no goroutine.
type MemorySlots struct {
	mu       sync.Mutex
	inFlight map[string]int
}

// NewMemorySlots returns an empty MemorySlots.
func NewMemorySlots() *MemorySlots {
	return &MemorySlots{inFlight: make(map[string]int)}
}

// Acquire takes one of key's slots if fewer than limit are taken (or
// force is set).
func (m *MemorySlots) Acquire(key string, limit int, force bool) (func(), bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !force && m.inFlight[key] >= limit {
		return nil, false
	}
	m.inFlight[key]++
	var once sync.Once
	return func() { once.Do(func() { m.release(key) }) }, true
}

func (m *MemorySlots) release(key string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if n := m.inFlight[key] - 1; n > 0 {
		m.inFlight[key] = n
	} else {
		delete(m.inFlight, key)
	}
}

// InFlight is how many of key's slots are taken.
func (m *MemorySlots) InFlight(key string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.inFlight[key]
}
