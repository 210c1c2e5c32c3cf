// Package limitstest is the conformance suite every limits.Counter must
// pass. It is a test helper: import it only from _test.go files.
package limitstest

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpgw/mcpgw/internal/limits"
)

// Run checks the Counter that newCounter returns (a fresh one per subtest)
// against the contract of limits.Counter: at most limit allowed requests in
// any window, refusals not counted, an exact RetryAfter, keys independent,
// and no over-admission under concurrent Takes.
func Run(t *testing.T, newCounter func(t *testing.T) limits.Counter) {
	t.Run("AllowsUpToTheLimit", func(t *testing.T) { allowsUpToTheLimit(t, newCounter(t)) })
	t.Run("SlidesWithTheOldestRequest", func(t *testing.T) { slides(t, newCounter(t)) })
	t.Run("RecoversAfterTheWindow", func(t *testing.T) { recovers(t, newCounter(t)) })
	t.Run("KeysAreIndependent", func(t *testing.T) { keysIndependent(t, newCounter(t)) })
	t.Run("LimitMayChange", func(t *testing.T) { limitChanges(t, newCounter(t)) })
	t.Run("RefusesNonsense", func(t *testing.T) { refusesNonsense(t, newCounter(t)) })
	t.Run("ConcurrentTakesNeverExceedTheLimit", func(t *testing.T) { concurrent(t, newCounter(t)) })
}

// t0 is the time the suite's requests start at; Take decides by the time it
// is given, not by the clock.
var t0 = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

// take is one Take that must not fail.
func take(t *testing.T, c limits.Counter, key string, limit int, window time.Duration, at time.Duration) limits.Decision {
	t.Helper()
	d, err := c.Take(context.Background(), key, limit, window, t0.Add(at))
	if err != nil {
		t.Fatalf("Take(%q, %d, %s) at +%s: %v", key, limit, window, at, err)
	}
	return d
}

// expect checks one decision.
func expect(t *testing.T, got, want limits.Decision, what string) {
	t.Helper()
	if got != want {
		t.Fatalf("%s: %+v, want %+v", what, got, want)
	}
}

func allowsUpToTheLimit(t *testing.T, c limits.Counter) {
	for i := range 3 {
		expect(t, take(t, c, "k", 3, time.Minute, 0), limits.Decision{Allowed: true, Remaining: 2 - i}, "take within the limit")
	}
	expect(t, take(t, c, "k", 3, time.Minute, 0), limits.Decision{RetryAfter: time.Minute}, "take over the limit")
	// Refusals are not counted: retrying early does not push the turn back.
	expect(t, take(t, c, "k", 3, time.Minute, 30*time.Second), limits.Decision{RetryAfter: 30 * time.Second}, "retry too early")
	expect(t, take(t, c, "k", 3, time.Minute, 59*time.Second), limits.Decision{RetryAfter: time.Second}, "retry just too early")
}

func slides(t *testing.T, c limits.Counter) {
	for i, at := range []time.Duration{0, 20 * time.Second, 40 * time.Second} {
		expect(t, take(t, c, "k", 3, time.Minute, at), limits.Decision{Allowed: true, Remaining: 2 - i}, "spread takes")
	}
	expect(t, take(t, c, "k", 3, time.Minute, 50*time.Second), limits.Decision{RetryAfter: 10 * time.Second}, "while all three are in the window")
	// A request leaves the window exactly one window after it was made.
	expect(t, take(t, c, "k", 3, time.Minute, time.Minute), limits.Decision{Allowed: true}, "once the first left")
	expect(t, take(t, c, "k", 3, time.Minute, 70*time.Second), limits.Decision{RetryAfter: 10 * time.Second}, "the second is still in")
	expect(t, take(t, c, "k", 3, time.Minute, 80*time.Second), limits.Decision{Allowed: true}, "once the second left")
}

func recovers(t *testing.T, c limits.Counter) {
	for range 2 {
		take(t, c, "k", 2, time.Second, 0)
	}
	d := take(t, c, "k", 2, time.Second, 0)
	if d.Allowed || d.RetryAfter <= 0 || d.RetryAfter > time.Second {
		t.Fatalf("over the limit: %+v, want refused within one window", d)
	}
	expect(t, take(t, c, "k", 2, time.Second, d.RetryAfter), limits.Decision{Allowed: true, Remaining: 1}, "at RetryAfter")
	expect(t, take(t, c, "k", 2, time.Second, time.Hour), limits.Decision{Allowed: true, Remaining: 1}, "long after")
	expect(t, take(t, c, "k", 2, time.Second, time.Hour), limits.Decision{Allowed: true}, "long after, second")
}

func keysIndependent(t *testing.T, c limits.Counter) {
	take(t, c, "a", 1, time.Minute, 0)
	expect(t, take(t, c, "a", 1, time.Minute, 0), limits.Decision{RetryAfter: time.Minute}, "a over its limit")
	expect(t, take(t, c, "b", 1, time.Minute, 0), limits.Decision{Allowed: true}, "b is not a")
	expect(t, take(t, c, "ab", 2, time.Minute, 0), limits.Decision{Allowed: true, Remaining: 1}, "ab is neither")
}

func limitChanges(t *testing.T, c limits.Counter) {
	for _, at := range []time.Duration{0, 10 * time.Second, 20 * time.Second} {
		take(t, c, "k", 3, time.Minute, at)
	}
	expect(t, take(t, c, "k", 5, time.Minute, 30*time.Second), limits.Decision{Allowed: true, Remaining: 1}, "a raised limit counts what was allowed")
	// Four are in the window; a limit of two needs three of them gone.
	expect(t, take(t, c, "k", 2, time.Minute, 30*time.Second), limits.Decision{RetryAfter: 50 * time.Second}, "a lowered limit")
}

func refusesNonsense(t *testing.T, c limits.Counter) {
	for _, tc := range []struct {
		limit  int
		window time.Duration
	}{{0, time.Minute}, {-1, time.Minute}, {1, 0}, {1, -time.Second}} {
		if d, err := c.Take(context.Background(), "k", tc.limit, tc.window, t0); err == nil {
			t.Errorf("Take(limit %d, window %s) = %+v, want an error", tc.limit, tc.window, d)
		}
	}
}

func concurrent(t *testing.T, c limits.Counter) {
	const workers, each, limit = 8, 40, 100
	var allowed [2]atomic.Int64
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				k := (w + i) % 2
				// Times within one window, arriving out of order.
				d, err := c.Take(context.Background(), []string{"x", "y"}[k], limit, time.Hour, t0.Add(time.Duration((w*each+i)%17)*time.Millisecond))
				if err != nil {
					t.Error(err)
					return
				}
				if d.Allowed {
					allowed[k].Add(1)
				}
			}
		}()
	}
	wg.Wait()
	for k := range allowed {
		if n := allowed[k].Load(); n != limit {
			t.Errorf("key %d: %d allowed of %d takes, want exactly %d", k, n, workers*each/2, limit)
		}
	}
}
