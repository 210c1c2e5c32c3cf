package limitstest

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpgw/mcpgw/internal/limits"
)

// RunGate checks the Gate that newGate returns (a fresh one per subtest)
// against the contract of limits.Gate: all or nothing, in-flight slots held
// until Release, Force, zero limits, what an admission reports, and no
// over-admission under concurrent Admits.
func RunGate(t *testing.T, newGate func(t *testing.T) limits.Gate) {
	t.Run("AllOrNothing", func(t *testing.T) { allOrNothing(t, newGate(t)) })
	t.Run("SlotsHeldUntilRelease", func(t *testing.T) { slotsHeld(t, newGate(t)) })
	t.Run("ZeroLimitsRefuse", func(t *testing.T) { zeroLimits(t, newGate(t)) })
	t.Run("ReportsRemainingAndReset", func(t *testing.T) { reports(t, newGate(t)) })
	t.Run("ConcurrentAdmitsNeverExceedTheLimits", func(t *testing.T) { concurrentAdmits(t, newGate(t)) })
}

// admit is one Admit that must not fail.
func admit(t *testing.T, g limits.Gate, at time.Duration, checks ...limits.Check) *limits.Admission {
	t.Helper()
	a, err := g.Admit(context.Background(), checks, t0.Add(at))
	if err != nil {
		t.Fatalf("Admit(%+v) at +%s: %v", checks, at, err)
	}
	return a
}

func window(key string, n int) limits.Check {
	return limits.Check{Key: key, Limit: n, Window: time.Minute}
}

func slot(key string, n int) limits.Check { return limits.Check{Key: key, Limit: n} }

func allOrNothing(t *testing.T, g limits.Gate) {
	if a := admit(t, g, 0, window("full", 1)); !a.Allowed() {
		t.Fatal("first request refused")
	}
	// Refused by the first check: the second counts nothing and no slot is held.
	if a := admit(t, g, time.Second, window("full", 1), window("other", 2), slot("s", 1)); a.Refused != 0 || a.RetryAfter != 59*time.Second {
		t.Fatalf("refused %d after %s, want 0 after 59s", a.Refused, a.RetryAfter)
	}
	// Refused by the last check: the earlier ones count nothing.
	if a := admit(t, g, time.Second, window("other", 2), slot("s", 1), window("full", 1)); a.Refused != 2 {
		t.Fatalf("refused %d, want 2", a.Refused)
	}
	for i := range 2 {
		if a := admit(t, g, 2*time.Second, window("other", 2), slot("s", 1)); !a.Allowed() {
			t.Fatalf("request %d to the unspent limits refused by %d", i, a.Refused)
		} else {
			a.Release()
		}
	}
	if a := admit(t, g, 2*time.Second, window("other", 2)); a.Refused != 0 {
		t.Fatal("a third request within the window of a limit of 2 was admitted")
	}
}

func slotsHeld(t *testing.T, g limits.Gate) {
	a1 := admit(t, g, 0, slot("s", 2))
	a2 := admit(t, g, 0, slot("s", 2))
	if !a1.Allowed() || !a2.Allowed() || a1.Remaining[0] != 1 || a2.Remaining[0] != 0 {
		t.Fatalf("two of two slots: %+v %+v", a1, a2)
	}
	if a := admit(t, g, 0, slot("s", 2)); a.Refused != 0 || a.RetryAfter != 0 {
		t.Fatalf("a third in flight: %+v, want refused by 0", a)
	}
	forced := admit(t, g, 0, limits.Check{Key: "s", Limit: 2, Force: true})
	if !forced.Allowed() {
		t.Fatal("a forced request was refused")
	}
	a1.Release()
	a1.Release() // twice counts once
	if a := admit(t, g, 0, slot("s", 2)); a.Refused != 0 {
		t.Fatal("admitted with two in flight (one forced) of two")
	}
	forced.Release()
	a3 := admit(t, g, 0, slot("s", 2))
	if !a3.Allowed() {
		t.Fatal("refused with one of two in flight")
	}
	a2.Release()
	a3.Release()
	if a := admit(t, g, 0, slot("s", 1)); !a.Allowed() {
		t.Fatal("refused with none in flight")
	} else {
		a.Release()
	}
}

func zeroLimits(t *testing.T, g limits.Gate) {
	if a := admit(t, g, 0, window("z", 0)); a.Refused != 0 || a.RetryAfter != time.Minute {
		t.Fatalf("a limit of 0 per minute: %+v, want refused for a minute", a)
	}
	if a := admit(t, g, 0, slot("z", 0)); a.Refused != 0 {
		t.Fatalf("a limit of 0 in flight: %+v, want refused", a)
	}
}

func reports(t *testing.T, g limits.Gate) {
	admit(t, g, 0, window("r", 3))
	a := admit(t, g, 20*time.Second, window("r", 3), slot("rs", 4))
	if !a.Allowed() || a.Remaining[0] != 1 || a.Reset[0] != 40*time.Second || a.Remaining[1] != 3 || a.Reset[1] != 0 {
		t.Fatalf("admission %+v, want remaining [1 3], reset [40s 0]", a)
	}
	a.Release()
}

// concurrentAdmits: 60 requests at once against 10 per minute and 4 in flight,
// each holding its slot until all have been decided: exactly 4 are admitted
// (the slots bind first), and then with the slots free exactly 6 more (the
// window binds).
func concurrentAdmits(t *testing.T, g limits.Gate) {
	var admitted atomic.Int32
	var wg sync.WaitGroup
	var mu sync.Mutex
	var held []*limits.Admission
	for range 60 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			a, err := g.Admit(context.Background(), []limits.Check{window("c", 10), slot("cs", 4)}, t0)
			if err != nil {
				t.Error(err)
				return
			}
			if a.Allowed() {
				admitted.Add(1)
				mu.Lock()
				held = append(held, a)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if n := admitted.Load(); n != 4 {
		t.Fatalf("%d admitted with 4 slots, want 4", n)
	}
	for _, a := range held {
		a.Release()
	}
	admitted.Store(0)
	for range 60 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			a, err := g.Admit(context.Background(), []limits.Check{window("c", 10), slot("cs", 60)}, t0.Add(time.Second))
			if err != nil {
				t.Error(err)
				return
			}
			if a.Allowed() {
				admitted.Add(1)
				a.Release()
			}
		}()
	}
	wg.Wait()
	if n := admitted.Load(); n != 6 {
		t.Fatalf("%d more admitted within the window, want 6 (10 per minute, 4 taken)", n)
	}
}
