package store

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// TestDeleteSpendLogsBefore: old rows go at most limit at a time, newer rows, the daily
// rollup and the key's spend stay.
func TestDeleteSpendLogsBefore(t *testing.T) {
	forEachBackend(t, func(t *testing.T, open opener) {
		s := open(t, Options{})
		ctx := context.Background()
		_, k, err := s.Generate(ctx, NewKey{})
		if err != nil {
			t.Fatal(err)
		}
		cut := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
		var rows []SpendRow
		for i := range 25 {
			start := cut.Add(time.Duration(i-20) * time.Hour) // 20 before the cut, 5 after
			rows = append(rows, SpendRow{RequestID: fmt.Sprintf("r%02d", i), CallType: CallTypeTool, Server: "fx",
				APIKey: k.Token, Status: SpendSuccess, Spend: 1, StartTime: start, EndTime: start})
		}
		if err := s.RecordSpend(ctx, rows); err != nil {
			t.Fatal(err)
		}
		for _, want := range []int64{8, 8, 4, 0} {
			if n, err := s.DeleteSpendLogsBefore(ctx, cut, 8); err != nil || n != want {
				t.Fatalf("delete = %d %v, want %d", n, err, want)
			}
		}
		if n, _ := s.CountSpendLogs(ctx, SpendFilter{}); n != 5 {
			t.Fatalf("rows left = %d, want the 5 after the cut", n)
		}
		if n, _ := s.CountSpendLogs(ctx, SpendFilter{Start: cut}); n != 5 {
			t.Fatalf("rows after the cut = %d, want 5", n)
		}
		if got, err := s.Get(ctx, k.Token); err != nil || got.Spend != 25 {
			t.Fatalf("key spend after retention = %v %v, want 25", got.Spend, err)
		}
		daily, err := s.DailySpends(ctx, DailySpendFilter{})
		var total float64
		for _, d := range daily {
			total += d.Spend
		}
		if err != nil || total != 25 {
			t.Fatalf("daily rollup after retention = %v %v, want 25", total, err)
		}
	})
}

func TestParseDuration(t *testing.T) {
	for in, want := range map[string]time.Duration{"": 0, "30s": 30 * time.Second, "5m": 5 * time.Minute, "1h": time.Hour,
		"30d": 30 * 24 * time.Hour, "2w": 14 * 24 * time.Hour, "1mo": 30 * 24 * time.Hour, " 7d ": 7 * 24 * time.Hour} {
		if got, err := ParseDuration(in); err != nil || got != want {
			t.Errorf("ParseDuration(%q) = %v %v, want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"d", "0d", "-1h", "1.5h", "10", "1y", "1 d", "9999999999999d"} {
		if got, err := ParseDuration(in); err == nil {
			t.Errorf("ParseDuration(%q) = %v, want an error", in, got)
		}
	}
}
