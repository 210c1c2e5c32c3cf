package store

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// BenchmarkLookup: a key lookup served by the per-replica cache (every request within the TTL)
// and one that reads SQLite (the first request after the TTL).
func BenchmarkLookup(b *testing.B) {
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		opts Options
	}{{"cached", Options{}}, {"sqlite", Options{CacheTTL: -1}}} {
		b.Run(tc.name, func(b *testing.B) {
			s, err := OpenSQLite(ctx, b.TempDir(), tc.opts)
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			_, k, err := s.Generate(ctx, NewKey{Permission: Permission{MCPServers: []string{"fx"}}})
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, found, err := s.Lookup(ctx, k.Token); err != nil || !found {
					b.Fatal(found, err)
				}
			}
		})
	}
}

// BenchmarkRecordSpend: one spend write of a batch of rows as the spend writer sends them when
// calls come one at a time (a few dozen rows per 50 ms) and under load (a full 500-row batch);
// ns/op divided by the batch size is the store's cost per call.
func BenchmarkRecordSpend(b *testing.B) {
	ctx := context.Background()
	for _, n := range []int{30, 500} {
		b.Run(fmt.Sprintf("rows=%d", n), func(b *testing.B) {
			s, err := OpenSQLite(ctx, b.TempDir(), Options{})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			_, k, err := s.Generate(ctx, NewKey{Permission: Permission{MCPServers: []string{"fx"}}})
			if err != nil {
				b.Fatal(err)
			}
			rows := make([]SpendRow, n)
			seq := 0
			b.ReportAllocs()
			for b.Loop() {
				now := time.Now()
				for i := range rows {
					seq++
					rows[i] = SpendRow{RequestID: fmt.Sprintf("r%09d", seq), CallType: CallTypeTool, Model: "fx-echo",
						Server: "fx", APIKey: k.Token, Status: SpendSuccess, StartTime: now, EndTime: now}
				}
				if err := s.RecordSpend(ctx, rows); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N*n), "µs/row")
		})
	}
}
