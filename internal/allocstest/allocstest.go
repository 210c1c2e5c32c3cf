// Package allocstest measures allocations per call for tests that compare or
// bound them.
//
// testing.AllocsPerRun counts every goroutine's allocations, not only the
// measured function's: a goroutine an earlier test left winding down (a pool
// reaper, a timer, a closing connection) can add one to a single measurement,
// more often under the race detector, which slows those goroutines down. The
// least of a few measurements is what the function itself allocates; a real
// extra allocation shows in every one of them, so taking the least hides no
// regression.
package allocstest

import "testing"

// tries is how many measurements Least takes.
const tries = 5

// Least is the fewest allocations per call of f over a few runs of
// testing.AllocsPerRun(runs, f).
func Least(runs int, f func()) float64 {
	m := testing.AllocsPerRun(runs, f)
	for range tries - 1 {
		if m == 0 {
			break
		}
		m = min(m, testing.AllocsPerRun(runs, f))
	}
	return m
}
