package store

import (
	"context"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
)

// processCPU is this process's CPU time so far (user + system).
func processCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkRecordSpendCPU: the CPU (user + system: SQLite's WAL writes and fsync are system
// calls) one spend row costs on SQLite, in batches of the size the writer commits when calls
// come one at a time (25: a call every 2 ms, 50 ms per batch), under load (100) and full (500), with
// request ids as the spend sink makes them (time-ordered) and random ones (as before). The
// table holds 20 000 rows first, so the indexes are several pages deep.
func BenchmarkRecordSpendCPU(b *testing.B) {
	ctx := context.Background()
	for _, ids := range []string{"time-ordered", "random"} {
		for _, n := range []int{25, 100, 500} {
			b.Run(fmt.Sprintf("ids=%s/rows=%d", ids, n), func(b *testing.B) {
				s, err := OpenSQLite(ctx, b.TempDir(), Options{})
				if err != nil {
					b.Fatal(err)
				}
				defer s.Close()
				key := strings.Repeat("a", 64)
				batch := func(n int) []SpendRow {
					rows := make([]SpendRow, n)
					now := time.Now()
					for i := range rows {
						id := NewTimeID(now)
						if ids == "random" {
							id = NewID()
						}
						rows[i] = SpendRow{RequestID: id, CallType: CallTypeTool, Model: "fx-echo", Server: "fx",
							APIKey: key, UserID: "u", Status: SpendSuccess, StartTime: now, EndTime: now}
					}
					return rows
				}
				for range 40 {
					if err := s.RecordSpend(ctx, batch(500)); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportAllocs()
				var cpu time.Duration
				for b.Loop() {
					rows := batch(n)
					c0 := processCPU()
					if err := s.RecordSpend(ctx, rows); err != nil {
						b.Fatal(err)
					}
					cpu += processCPU() - c0
				}
				b.ReportMetric(float64(cpu)/float64(time.Microsecond)/float64(b.N*n), "cpu-µs/row")
				b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N*n), "µs/row")
			})
		}
	}
}

// BenchmarkRecordSpendPaused: the CPU one RecordSpend batch costs on SQLite when batches come
// apart, as the spend writer commits free rows once a second under a light load: each batch
// follows a pause (MCPGW_SPEND_PAUSE, default 50 ms), so it finds cold caches and an idle
// connection. It reports cpu-µs per batch, whose part that does not grow with the rows is
// a commit's fixed cost.
func BenchmarkRecordSpendPaused(b *testing.B) {
	ctx := context.Background()
	pause := 50 * time.Millisecond
	if v, err := time.ParseDuration(os.Getenv("MCPGW_SPEND_PAUSE")); err == nil {
		pause = v
	}
	for _, n := range []int{1, 10, 110, 500} {
		b.Run(fmt.Sprintf("rows=%d", n), func(b *testing.B) {
			s, err := OpenSQLite(ctx, b.TempDir(), Options{})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			for range 40 {
				if err := s.RecordSpend(ctx, spendBatch(500)); err != nil {
					b.Fatal(err)
				}
			}
			var cpu time.Duration
			for b.Loop() {
				b.StopTimer()
				time.Sleep(pause)
				rows := spendBatch(n)
				b.StartTimer()
				c0 := processCPU()
				if err := s.RecordSpend(ctx, rows); err != nil {
					b.Fatal(err)
				}
				cpu += processCPU() - c0
			}
			b.ReportMetric(float64(cpu)/float64(time.Microsecond)/float64(b.N), "cpu-µs/batch")
		})
	}
}

// spendBatch is n free spend rows of one key, with time-ordered ids, as the spend sink makes them.
func spendBatch(n int) []SpendRow {
	key := strings.Repeat("a", 64)
	rows := make([]SpendRow, n)
	now := time.Now()
	for i := range rows {
		rows[i] = SpendRow{RequestID: NewTimeID(now), CallType: CallTypeTool, Model: "fx-echo", Server: "fx",
			APIKey: key, UserID: "u", Status: SpendSuccess, StartTime: now, EndTime: now}
	}
	return rows
}
