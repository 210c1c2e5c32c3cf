package allocstest

import (
	"sync"
	"testing"
)

var sink []byte

func TestLeastCountsTheFunctionsOwnAllocations(t *testing.T) {
	if n := Least(100, func() { sink = make([]byte, 64) }); n != 1 {
		t.Fatalf("one allocation per call measured as %v", n)
	}
	if n := Least(100, func() {}); n != 0 {
		t.Fatalf("no allocation measured as %v", n)
	}
}

// TestLeastIgnoresAnotherGoroutinesBurst: a goroutine allocating during the
// first measurement only does not count.
func TestLeastIgnoresAnotherGoroutinesBurst(t *testing.T) {
	calls := 0
	n := Least(100, func() {
		// Call 1 is AllocsPerRun's warm-up; call 2 is in the first measurement.
		if calls++; calls != 2 {
			return
		}
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 1000 {
				sink = make([]byte, 64)
			}
		}()
		wg.Wait()
	})
	if n != 0 {
		t.Fatalf("another goroutine's allocations counted: %v", n)
	}
}
