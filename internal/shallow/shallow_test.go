package shallow

import (
	"errors"
	"testing"

	"github.com/mcpgw/mcpgw/internal/shallow/shallowtest"
)

// TestRunsAndWaits: f has run, and what it wrote is seen, once Do returns.
func TestRunsAndWaits(t *testing.T) {
	x := 0
	Do(func() { x = 42 })
	if x != 42 {
		t.Fatalf("x = %d", x)
	}
}

// TestPanicReraised: a panic in f reaches the caller with its value.
func TestPanicReraised(t *testing.T) {
	boom := errors.New("boom")
	defer func() {
		if v := recover(); v != boom {
			t.Fatalf("recovered %v", v)
		}
	}()
	Do(func() { panic(boom) })
	t.Fatal("Do returned")
}

// TestHeldStackStaysSmall: goroutines that do deep work through Do and
// then wait hold a 2 KB stack each after a collection; doing the same
// work in place leaves them 4 KB or more.
func TestHeldStackStaysSmall(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector's stack guard makes every goroutine outgrow 2 KB")
	}
	const n = 400
	perGoroutine := func(step func(f func())) float64 {
		release := make(chan struct{})
		started := make(chan struct{})
		defer close(release)
		before := shallowtest.StackInuse()
		for range n {
			go func() {
				step(func() { shallowtest.Deep(12) })
				started <- struct{}{}
				<-release
			}()
		}
		for range n {
			<-started
		}
		return float64(shallowtest.StackInuse()-before) / n
	}
	inPlace := perGoroutine(func(f func()) { f() })
	through := perGoroutine(Do)
	t.Logf("stack per held goroutine: in place %.0f B, through Do %.0f B", inPlace, through)
	if through > 3<<10 || inPlace < 4<<10 {
		t.Fatalf("stack per held goroutine: in place %.0f B, through Do %.0f B; want ≥ 4 KB and ≤ 3 KB", inPlace, through)
	}
}

// BenchmarkDo is what a step costs over calling f in place.
func BenchmarkDo(b *testing.B) {
	x := 0
	for b.Loop() {
		Do(func() { x++ })
	}
}
