package front

import (
	"context"
	"time"
)

// burial is an ended session's id to store in the tombstones once the
// session lock is released: everywhere buries it for every replica, else it
// is buried here only when the Tombstones is LocalTombstones.
type burial struct {
	id         string
	until      int64 // unix nanoseconds
	everywhere bool
}

// buriedRing is how many completed burials the sessions remember for
// opens that asked the tombstones before taking the lock; an open that
// missed more asks again.
const buriedRing = 256

// burials tracks the burials decided under the session lock (see
// sessions.open): those being stored, and the most recent ones stored.
// Guarded by the sessions' mu.
type burials struct {
	pending map[string]int     // id → burials not stored yet
	stored  [buriedRing]string // ids of the last stored burials, by seq modulo buriedRing
	seq     uint64             // burials stored so far
}

// pendLocked records that id is being buried and returns the burial.
func (ss *sessions) pendLocked(id string, until int64, everywhere bool) burial {
	if ss.burials.pending == nil {
		ss.burials.pending = map[string]int{}
	}
	ss.burials.pending[id]++
	return burial{id: id, until: until, everywhere: everywhere}
}

// buryAll stores bs in the tombstones without the session lock, even when
// the request that ended them has gone, then records them as stored.
func (ss *sessions) buryAll(ctx context.Context, bs []burial) {
	if len(bs) == 0 {
		return
	}
	ctx = context.WithoutCancel(ctx)
	for _, b := range bs {
		until := time.Unix(0, b.until)
		if here, ok := ss.tombs.(LocalTombstones); ok && !b.everywhere {
			if err := here.BuryHere(ctx, b.id, until); err != nil {
				ss.log.Warn("legacy session tombstone not stored", "error", err.Error())
			}
		} else if err := ss.tombs.Bury(ctx, b.id, until); err != nil {
			ss.log.Warn("legacy session tombstone not stored; another replica may still open the ended session", "error", err.Error())
		}
	}
	ss.mu.Lock()
	defer ss.mu.Unlock()
	for _, b := range bs {
		if ss.burials.pending[b.id]--; ss.burials.pending[b.id] <= 0 {
			delete(ss.burials.pending, b.id)
		}
		ss.burials.stored[ss.burials.seq%buriedRing] = b.id
		ss.burials.seq++
	}
}

// buriedSinceLocked reports whether id is being buried or was buried after
// seq; known is false when too many burials were stored since seq to tell.
func (ss *sessions) buriedSinceLocked(id string, seq uint64) (buried, known bool) {
	if ss.burials.pending[id] > 0 {
		return true, true
	}
	if ss.burials.seq-seq > buriedRing {
		return false, false
	}
	for s := seq; s < ss.burials.seq; s++ {
		if ss.burials.stored[s%buriedRing] == id {
			return true, true
		}
	}
	return false, true
}
