package spend

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

// fakeRows is a spend log the retention deletes from: the start times of its rows.
type fakeRows struct {
	mu      sync.Mutex
	starts  []time.Time
	calls   int
	limits  []int
	panicAt int // the call (1-based) that panics; 0: none
	failAt  int // the call that fails; 0: none
}

func (f *fakeRows) delete(_ context.Context, before time.Time, limit int) (int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	f.limits = append(f.limits, limit)
	if f.calls == f.panicAt {
		panic("boom")
	}
	if f.calls == f.failAt {
		return 0, errors.New("database down")
	}
	var kept []time.Time
	var n int64
	for _, s := range f.starts {
		if s.Before(before) && n < int64(limit) {
			n++
			continue
		}
		kept = append(kept, s)
	}
	f.starts = kept
	return n, nil
}

func (f *fakeRows) left() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.starts)
}

// TestRetentionDeletesOldRowsInBatches: a sweep deletes every row older than the period in
// batches of Batch, keeps newer rows, survives a panicking and a failing sweep, runs again
// every Interval, and Stop ends its goroutine (goleak).
func TestRetentionDeletesOldRowsInBatches(t *testing.T) {
	now := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
	f := &fakeRows{panicAt: 1, failAt: 2}
	for i := range 23 {
		f.starts = append(f.starts, now.Add(-time.Duration(i)*time.Hour)) // 0 h .. 22 h old
	}
	r := StartRetention(RetentionConfig{Delete: f.delete, Period: 12*time.Hour + time.Minute, Interval: 20 * time.Millisecond,
		Batch: 4, Now: func() time.Time { return now }})
	deadline := time.Now().Add(5 * time.Second)
	for f.left() != 13 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	r.Stop()
	if got := f.left(); got != 13 {
		t.Fatalf("rows left = %d, want the 13 at most 12 h old", got)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, l := range f.limits {
		if l != 4 {
			t.Fatalf("a DELETE asked for %d rows, want batches of 4", l)
		}
	}
	if f.calls < 5 { // the panic, the failure, then 4+4+2 rows in three batches
		t.Fatalf("calls = %d", f.calls)
	}
}
