package front

import (
	"container/list"
	"context"
	"sync"
	"time"
)

// Tombstones remembers the ids of legacy sessions that ended, until their
// sealed ids expire, so that an ended session is not opened again with fresh
// state. The front never calls it while holding its session lock, but
// every legacy request waits for Buried, so an implementation must answer
// promptly and honour ctx. When Buried fails the front treats the session
// as ended (404: the client initializes again), since reviving a session its
// client ended is the worse mistake; when Bury fails the session still ends
// on this replica and the failure is logged.
type Tombstones interface {
	// Bury remembers id as ended until until; burying it again keeps the
	// first record.
	Bury(ctx context.Context, id string, until time.Time) error
	// Buried reports whether id is remembered as ended and its until has
	// not passed.
	Buried(ctx context.Context, id string) (bool, error)
}

// LocalTombstones is a Tombstones shared between replicas that can also
// remember an id on this replica only. The front buries for every replica
// the sessions its caller ended (DELETE) and those that held state only this
// replica knew (see Close); a session it ends for reasons of its own (idle
// here, evicted to make room, past its expiry) it buries with BuryHere when
// the Tombstones offers it, since another replica may be serving it.
type LocalTombstones interface {
	Tombstones
	// BuryHere remembers id as ended until until on this replica only.
	BuryHere(ctx context.Context, id string, until time.Time) error
}

// MemoryTombstones is Tombstones within one process, holding at most max
// ids: beyond it the oldest buried is forgotten, and ids past their until
// are dropped.
type MemoryTombstones struct {
	max int
	now func() time.Time

	mu        sync.Mutex
	byID      map[string]*list.Element // id → element of order (a tomb)
	order     list.List                // oldest buried first
	lastSweep int64                    // unix nanoseconds of the last full sweep
}

// tomb is an ended session's id and when it may be forgotten.
type tomb struct {
	id    string
	until int64 // unix nanoseconds
}

// tombSweepEvery is how often Bury also drops expired ids from the middle
// of the record (those at its oldest end are dropped on every Bury).
const tombSweepEvery = time.Minute

// NewMemoryTombstones returns an empty record of at most max ids (max ≤ 0:
// DefaultMaxDeletedSessions).
func NewMemoryTombstones(max int) *MemoryTombstones {
	return newMemoryTombstones(max, time.Now)
}

func newMemoryTombstones(max int, now func() time.Time) *MemoryTombstones {
	if max <= 0 {
		max = DefaultMaxDeletedSessions
	}
	return &MemoryTombstones{max: max, now: now, byID: map[string]*list.Element{}}
}

// Bury remembers id until until; it never fails.
func (m *MemoryTombstones) Bury(_ context.Context, id string, until time.Time) error {
	now := m.now().UnixNano()
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.byID[id]; ok {
		return nil
	}
	m.sweepLocked(now)
	for len(m.byID) >= m.max {
		m.dropLocked(m.order.Front())
	}
	m.byID[id] = m.order.PushBack(tomb{id: id, until: until.UnixNano()})
	return nil
}

// Buried reports whether id is remembered and not past its until; it never
// fails.
func (m *MemoryTombstones) Buried(_ context.Context, id string) (bool, error) {
	now := m.now().UnixNano()
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.byID[id]
	if !ok {
		return false, nil
	}
	if now >= e.Value.(tomb).until {
		m.dropLocked(e)
		return false, nil
	}
	return true, nil
}

// sweepLocked drops expired ids at the oldest end and, at most every
// tombSweepEvery, throughout.
func (m *MemoryTombstones) sweepLocked(now int64) {
	for e := m.order.Front(); e != nil && now >= e.Value.(tomb).until; e = m.order.Front() {
		m.dropLocked(e)
	}
	if now-m.lastSweep < int64(tombSweepEvery) {
		return
	}
	m.lastSweep = now
	for e := m.order.Front(); e != nil; {
		next := e.Next()
		if now >= e.Value.(tomb).until {
			m.dropLocked(e)
		}
		e = next
	}
}

func (m *MemoryTombstones) dropLocked(e *list.Element) {
	m.order.Remove(e)
	delete(m.byID, e.Value.(tomb).id)
}
