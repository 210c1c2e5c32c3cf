package limits_test

import (
	"sync"
	"sync/atomic"
	"testing"

	"github.com/mcpgw/mcpgw/internal/limits"
)

// Slots refuse a request over the limit at once, release gives the slot
// back (twice counts once), keys are independent, force takes a slot over
// the limit, and the last release drops the key's entry.
func TestMemorySlots(t *testing.T) {
	s := limits.NewMemorySlots()
	r1, ok1 := s.Acquire("k", 2, false)
	r2, ok2 := s.Acquire("k", 2, false)
	if !ok1 || !ok2 {
		t.Fatal("within the limit refused")
	}
	if _, ok := s.Acquire("k", 2, false); ok {
		t.Fatal("over the limit allowed")
	}
	if _, ok := s.Acquire("other", 1, false); !ok {
		t.Fatal("another key refused")
	}
	if _, ok := s.Acquire("zero", 0, false); ok {
		t.Fatal("a zero limit allowed a request")
	}
	r1()
	r1()
	if got := s.InFlight("k"); got != 1 {
		t.Fatalf("in flight after one release (twice): %d, want 1", got)
	}
	r3, ok := s.Acquire("k", 2, false)
	if !ok {
		t.Fatal("a released slot was not given back")
	}
	rf, ok := s.Acquire("k", 2, true)
	if !ok || s.InFlight("k") != 3 {
		t.Fatalf("force: %v, in flight %d", ok, s.InFlight("k"))
	}
	r2()
	r3()
	rf()
	if got := s.InFlight("k"); got != 0 {
		t.Fatalf("in flight after every release: %d", got)
	}
}

// Concurrent acquires never hold more than the limit.
func TestMemorySlotsConcurrent(t *testing.T) {
	s := limits.NewMemorySlots()
	var held, most atomic.Int64
	var wg sync.WaitGroup
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 200 {
				release, ok := s.Acquire("k", 3, false)
				if !ok {
					continue
				}
				n := held.Add(1)
				for {
					m := most.Load()
					if n <= m || most.CompareAndSwap(m, n) {
						break
					}
				}
				held.Add(-1)
				release()
			}
		}()
	}
	wg.Wait()
	if most.Load() > 3 || most.Load() < 1 {
		t.Fatalf("at most %d held at once, want 1..3", most.Load())
	}
	if s.InFlight("k") != 0 {
		t.Fatal("entries left")
	}
}
