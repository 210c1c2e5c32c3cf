package catalog

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"sync"
	"time"
)

// snapshotTTL is how long a paged aggregate is kept for its later pages.
const snapshotTTL = time.Minute

// maxSnapshots bounds the snapshots kept in process; when full, expired ones
// are dropped, and then the oldest.
const maxSnapshots = 256

// Snapshot is the aggregate a first page was cut from, kept for the later
// pages of the same walk.
type Snapshot struct {
	// Binding is the caller the aggregate was made for; no other caller
	// gets it.
	Binding string
	Items   []json.RawMessage
	// Cuts are where the aggregate's upstream pages ended (see Pages); a
	// later page ends at the next one.
	Cuts     []int
	Outcomes map[string]Outcome
	// Expires is when the snapshot may be forgotten.
	Expires time.Time
}

// Snapshots keeps aggregates for their later pages, so that a walk neither
// fans out to every upstream again nor shifts when an upstream changes
// mid-walk. A cursor whose snapshot is not found (another replica, or
// expired) is served from a fresh fan-out, so the catalog treats a failing
// store as empty: a Put error leaves the walk without a snapshot and a Get
// error is a miss.
type Snapshots interface {
	// Put keeps s until s.Expires under a new, unguessable id.
	Put(ctx context.Context, s Snapshot) (id string, err error)
	// Get returns snapshot id when it is live at now and its Binding is
	// binding; an empty id is never found.
	Get(ctx context.Context, id, binding string, now time.Time) (Snapshot, bool, error)
}

// MemorySnapshots is Snapshots within one process, holding at most
// maxSnapshots. Its zero value holds none.
type MemorySnapshots struct {
	mu    sync.Mutex
	byID  map[string]*Snapshot
	order []string
}

// NewMemorySnapshots returns an empty in-process snapshot store.
func NewMemorySnapshots() *MemorySnapshots { return &MemorySnapshots{} }

// Put keeps sn; when full it drops the expired snapshots, then the oldest.
func (s *MemorySnapshots) Put(_ context.Context, sn Snapshot) (string, error) {
	raw := make([]byte, 12)
	_, _ = rand.Read(raw)
	id := hex.EncodeToString(raw)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.byID == nil {
		s.byID = map[string]*Snapshot{}
	}
	if len(s.byID) >= maxSnapshots {
		now := time.Now()
		kept := s.order[:0]
		for _, old := range s.order {
			if o := s.byID[old]; o != nil && now.Before(o.Expires) {
				kept = append(kept, old)
			} else {
				delete(s.byID, old)
			}
		}
		s.order = kept
		for len(s.byID) >= maxSnapshots {
			delete(s.byID, s.order[0])
			s.order = s.order[1:]
		}
	}
	s.byID[id] = &sn
	s.order = append(s.order, id)
	return id, nil
}

// Get returns a live snapshot of this caller.
func (s *MemorySnapshots) Get(_ context.Context, id, binding string, now time.Time) (Snapshot, bool, error) {
	if id == "" {
		return Snapshot{}, false, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	sn, ok := s.byID[id]
	if !ok || sn.Binding != binding || !now.Before(sn.Expires) {
		return Snapshot{}, false, nil
	}
	return *sn, true, nil
}
