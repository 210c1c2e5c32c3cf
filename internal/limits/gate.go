package limits

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"
)

// Check is one limit a request must pass.
type Check struct {
	// Key names the counter (a server, a store key's hash, a team).
	Key string
	// Limit is how many requests the key may make per Window, or have in
	// flight at once when Window is 0. Not positive: every request is refused
	// (LiteLLM's 0 admits nothing).
	Limit int
	// Window is the sliding window of a per-window limit; 0 makes the check
	// a bound on requests in flight (a slot, held until Release).
	Window time.Duration
	// Force takes a slot even when none is free (a request that must not be
	// refused is still counted in flight). Only for in-flight checks.
	Force bool
}

// InFlight reports whether c bounds requests in flight rather than per window.
func (c Check) InFlight() bool { return c.Window <= 0 }

// Admission is the answer to one Admit.
type Admission struct {
	// Refused is the index of the first check that refused the request, or
	// -1 when every check admitted it.
	Refused int
	// RetryAfter, when a per-window check refused, is how long until it
	// would admit the request; 0 for an in-flight check (when a request
	// ends is not known).
	RetryAfter time.Duration
	// Remaining is, per check, how many more requests the key may make now
	// (after this one); for an in-flight check, how many slots are free.
	// Set only when the request was admitted.
	Remaining []int
	// Reset is, per per-window check, how long until the oldest request in
	// its window leaves it (one more request is then admitted); 0 for
	// in-flight checks. Set only when the request was admitted.
	Reset []time.Duration

	release func()
}

// Allowed reports whether every check admitted the request.
func (a *Admission) Allowed() bool { return a.Refused < 0 }

// Release gives back the slots the admission holds; later calls do nothing.
func (a *Admission) Release() {
	if a.release != nil {
		a.release()
	}
}

// Gate admits a request against several limits at once, all or nothing: a
// request refused by one check is counted by none, and an admitted one is
// counted by every per-window check and holds a slot of every in-flight
// check until Release.
type Gate interface {
	// Admit decides one request at now against checks (in order: the
	// first that refuses is the one reported). An error means no decision
	// could be made (a shared store is unreachable); nothing was counted.
	Admit(ctx context.Context, checks []Check, now time.Time) (*Admission, error)
}

// Local is the Gate of one process: per-window checks counted by a Memory
// and in-flight checks by a MemorySlots, decided under one lock so an
// admission is all or nothing. Per-window keys starting with ServerPrefix
// are held in a Memory of their own, so other keys (callers') cannot evict
// servers' counts.
type Local struct {
	mu               sync.Mutex
	windows, servers *Memory
	slots            *MemorySlots
}

// ServerPrefix starts the keys of servers' limits.
const ServerPrefix = "server\x00"

// NewLocal returns a Local holding at most maxKeys per-window keys of each
// kind (DefaultMaxKeys when not positive; least recently used evicted).
func NewLocal(maxKeys int) *Local {
	return &Local{windows: NewMemory(maxKeys), servers: NewMemory(maxKeys), slots: NewMemorySlots()}
}

// memoryOf is the Memory that counts key's windows.
func (l *Local) memoryOf(key string) *Memory {
	if strings.HasPrefix(key, ServerPrefix) {
		return l.servers
	}
	return l.windows
}

// Admit decides one request against checks at now.
func (l *Local) Admit(_ context.Context, checks []Check, now time.Time) (*Admission, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i, c := range checks {
		if c.InFlight() {
			if !c.Force && l.slots.InFlight(c.Key) >= c.Limit {
				return &Admission{Refused: i}, nil
			}
			continue
		}
		if c.Limit <= 0 {
			return &Admission{Refused: i, RetryAfter: c.Window}, nil
		}
		if live, retry := l.memoryOf(c.Key).peek(c.Key, c.Limit, c.Window, now); live >= c.Limit {
			return &Admission{Refused: i, RetryAfter: retry}, nil
		}
	}
	a := &Admission{Refused: -1, Remaining: make([]int, len(checks)), Reset: make([]time.Duration, len(checks))}
	var releases []func()
	for i, c := range checks {
		if c.InFlight() {
			r, _ := l.slots.Acquire(c.Key, c.Limit, true)
			releases = append(releases, r)
			a.Remaining[i] = max(c.Limit-l.slots.InFlight(c.Key), 0)
			continue
		}
		m := l.memoryOf(c.Key)
		d, err := m.Take(context.Background(), c.Key, c.Limit, c.Window, now)
		if err != nil || !d.Allowed {
			// peek said yes under the same lock: only a nonsense window gets here.
			return nil, fmt.Errorf("limits: %s per %s not admitted after a peek: %v", c.Key, c.Window, err)
		}
		a.Remaining[i], a.Reset[i] = d.Remaining, m.oldestLeaves(c.Key, c.Window, now)
	}
	if len(releases) > 0 {
		var once sync.Once
		a.release = func() {
			once.Do(func() {
				for _, r := range releases {
					r()
				}
			})
		}
	}
	return a, nil
}
