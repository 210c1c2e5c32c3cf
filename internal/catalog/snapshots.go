package catalog

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"sync"
	"time"
)

// snapshotTTL is how long a paged aggregate is kept for its later pages.
const snapshotTTL = time.Minute

// maxSnapshots bounds the snapshots kept; when full, expired ones are
// dropped, and then the oldest.
const maxSnapshots = 256

// snapshots keeps, on the replica that served a first page, the aggregate
// that page was cut from, so later pages neither fan out to every upstream
// again nor shift when an upstream changes mid-walk. A cursor that lands on
// another replica (or after the snapshot expired) is served from a fresh
// fan-out, as before.
type snapshots struct {
	mu    sync.Mutex
	byID  map[string]*snapshot
	order []string
}

type snapshot struct {
	binding  string
	items    []json.RawMessage
	outcomes map[string]Outcome
	expires  time.Time
}

func (s *snapshots) put(binding string, items []json.RawMessage, outcomes map[string]Outcome, expires time.Time) string {
	raw := make([]byte, 12)
	_, _ = rand.Read(raw)
	id := hex.EncodeToString(raw)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.byID == nil {
		s.byID = map[string]*snapshot{}
	}
	if len(s.byID) >= maxSnapshots {
		now := time.Now()
		kept := s.order[:0]
		for _, old := range s.order {
			if sn := s.byID[old]; sn != nil && now.Before(sn.expires) {
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
	s.byID[id] = &snapshot{binding: binding, items: items, outcomes: outcomes, expires: expires}
	s.order = append(s.order, id)
	return id
}

// get returns a live snapshot of this caller.
func (s *snapshots) get(id, binding string, now time.Time) (*snapshot, bool) {
	if id == "" {
		return nil, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	sn, ok := s.byID[id]
	if !ok || sn.binding != binding || !now.Before(sn.expires) {
		return nil, false
	}
	return sn, true
}
