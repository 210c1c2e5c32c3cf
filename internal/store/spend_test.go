package store

import (
	"context"
	"database/sql"
	"fmt"
	"sync"
	"testing"
	"time"
)

func TestRecordSpend(t *testing.T) {
	forEachBackend(t, func(t *testing.T, open opener) {
		s := open(t, Options{CacheTTL: time.Hour})
		ctx := context.Background()
		budget := 1.5
		if _, err := s.CreateTeam(ctx, Team{TeamID: "t1", MaxBudget: &budget}); err != nil {
			t.Fatal(err)
		}
		_, k, err := s.Generate(ctx, NewKey{TeamID: "t1", MaxBudget: &budget})
		if err != nil || k.MaxBudget == nil || *k.MaxBudget != 1.5 {
			t.Fatalf("generate: %+v %v", k, err)
		}
		if got, _, _ := s.Lookup(ctx, k.Token); got.Spend != 0 { // cached now, for an hour
			t.Fatalf("fresh key spend %v", got.Spend)
		}
		day := time.Date(2026, 3, 4, 23, 59, 0, 0, time.UTC)
		var rows []SpendRow
		for i := range 1203 { // more than one multi-row INSERT
			st := SpendSuccess
			if i%3 == 0 {
				st = SpendFailure
			}
			start := day.Add(time.Duration(i) * time.Millisecond)
			if i >= 1200 {
				start = start.Add(time.Hour) // the next day
			}
			rows = append(rows, SpendRow{RequestID: fmt.Sprintf("r%04d", i), CallType: CallTypeTool, Model: "fx-echo",
				Server: "fx", APIKey: k.Token, TeamID: "t1", UserID: "u1", Status: st, Spend: 0.001,
				StartTime: start, EndTime: start.Add(time.Millisecond)})
		}
		rows = append(rows, SpendRow{RequestID: "list", CallType: CallTypeList, APIKey: k.Token, TeamID: "t1",
			Status: SpendSuccess, StartTime: day, EndTime: day})
		if err := s.RecordSpend(ctx, rows); err != nil {
			t.Fatal(err)
		}
		got, _, err := s.Lookup(ctx, k.Token) // the write forgot the cached key
		if err != nil || got.Spend < 1.2029 || got.Spend > 1.2031 {
			t.Fatalf("key spend %v %v", got.Spend, err)
		}
		team, _, err := s.LookupTeam(ctx, "t1")
		if err != nil || team.Spend < 1.2029 || team.Spend > 1.2031 || team.MaxBudget == nil {
			t.Fatalf("team spend %+v %v", team, err)
		}
		if n, err := s.CountSpendLogs(ctx, SpendFilter{APIKey: k.Token}); err != nil || n != 1204 {
			t.Fatalf("count %d %v", n, err)
		}
		one, err := s.SpendLogs(ctx, SpendFilter{RequestID: "r0007"})
		if err != nil || len(one) != 1 || one[0] != rows[7] {
			t.Fatalf("r0007: %+v %v, want %+v", one, err, rows[7])
		}
		if n, _ := s.CountSpendLogs(ctx, SpendFilter{Start: day.Add(1200 * time.Millisecond)}); n != 3 {
			t.Fatalf("since 1200 ms: %d", n)
		}
		if n, _ := s.CountSpendLogs(ctx, SpendFilter{UserID: "nobody"}); n != 0 {
			t.Fatalf("nobody: %d", n)
		}
		daily, err := s.DailySpends(ctx, DailySpendFilter{APIKey: k.Token, Start: "2026-03-04", End: "2026-03-05"})
		if err != nil || len(daily) != 3 {
			t.Fatalf("daily: %+v %v", daily, err)
		}
		var calls, fails int64
		for _, d := range daily {
			calls, fails = calls+d.APIRequests, fails+d.FailedRequests
		}
		if calls != 1204 || fails != 401 || daily[0].Date != "2026-03-04" {
			t.Fatalf("daily: %+v", daily)
		}
		// a second batch adds to the same rollup rows
		if err := s.RecordSpend(ctx, rows[:1]); err == nil {
			t.Fatal("a duplicate request_id was accepted")
		}
		rows[0].RequestID = "again"
		if err := s.RecordSpend(ctx, rows[:1]); err != nil {
			t.Fatal(err)
		}
		daily, _ = s.DailySpends(ctx, DailySpendFilter{Server: "fx"})
		if len(daily) != 2 || daily[0].APIRequests != 1201 {
			t.Fatalf("daily after a second batch: %+v", daily)
		}
		// an aggregate (the writer's queue was full) adds spend and calls, no spend_logs row
		agg := SpendRow{CallType: CallTypeTool, Server: "fx", APIKey: k.Token, TeamID: "t1", Spend: 0.5,
			StartTime: day, EndTime: day, Calls: 7, Failed: 2}
		if err := s.RecordSpend(ctx, []SpendRow{agg, {RequestID: "x", Status: SpendSuccess, StartTime: day, EndTime: day}}); err == nil {
			t.Fatal("an aggregate before a logged row was accepted")
		}
		rows[0].RequestID = "third"
		if err := s.RecordSpend(ctx, []SpendRow{rows[0], agg}); err != nil {
			t.Fatal(err)
		}
		if n, _ := s.CountSpendLogs(ctx, SpendFilter{APIKey: k.Token}); n != 1206 {
			t.Fatalf("count after an aggregate: %d, want 1206 (one more logged row)", n)
		}
		if got, _, _ := s.Lookup(ctx, k.Token); got.Spend < 1.7049 || got.Spend > 1.7051 {
			t.Fatalf("key spend after an aggregate %v, want 1.705", got.Spend)
		}
		daily, _ = s.DailySpends(ctx, DailySpendFilter{Server: "fx", Start: "2026-03-04", End: "2026-03-04"})
		if len(daily) != 1 || daily[0].APIRequests != 1209 || daily[0].FailedRequests != 402+2 {
			t.Fatalf("daily after an aggregate: %+v", daily)
		}
	})
}

// TestRecordSpendBatchSizes: batches of any size, inserted through SQLite's prepared INSERTs
// of 1, 2, 4, … 256 rows (and Postgres' multi-row ones), write every row once, as given.
func TestRecordSpendBatchSizes(t *testing.T) {
	forEachBackend(t, func(t *testing.T, open opener) {
		s := open(t, Options{})
		ctx := context.Background()
		start := time.UnixMilli(time.Now().UnixMilli())
		total := 0
		for _, n := range []int{1, 3, 256, 257, 500, 511, 600} {
			rows := make([]SpendRow, n)
			for i := range rows {
				rows[i] = SpendRow{RequestID: fmt.Sprintf("b%d-%04d", n, i), CallType: CallTypeTool, Model: fmt.Sprintf("m%d", i),
					Server: "fx", APIKey: "k", KeyAlias: "a", TeamID: "t", UserID: "u", EndUser: "e", OrganizationID: "o",
					Status: SpendFailure, Fault: "timeout", Spend: float64(i), StartTime: start, EndTime: start.Add(time.Duration(i) * time.Millisecond)}
			}
			if err := s.RecordSpend(ctx, rows); err != nil {
				t.Fatalf("%d rows: %v", n, err)
			}
			total += n
			if got, err := s.CountSpendLogs(ctx, SpendFilter{}); err != nil || got != int64(total) {
				t.Fatalf("after %d rows: %d rows stored (%v), want %d", n, got, err, total)
			}
			last := rows[n-1]
			got, err := s.SpendLogs(ctx, SpendFilter{RequestID: last.RequestID})
			if err != nil || len(got) != 1 {
				t.Fatalf("row %s: %+v %v", last.RequestID, got, err)
			}
			g := got[0]
			if g.StartTime.Equal(last.StartTime) && g.EndTime.Equal(last.EndTime) {
				g.StartTime, g.EndTime = last.StartTime, last.EndTime
			}
			if g != last {
				t.Fatalf("row %s read back as %+v, want %+v", last.RequestID, g, last)
			}
		}
	})
}

// TestRecordSpendReusesStatements: batches after the first add to the same key's and team's
// spend and daily_spend row (the upsert's ON CONFLICT path), and on SQLite they run the
// statements the first batch prepared instead of parsing their own.
func TestRecordSpendReusesStatements(t *testing.T) {
	forEachBackend(t, func(t *testing.T, open opener) {
		s := open(t, Options{CacheTTL: time.Hour})
		ctx := context.Background()
		if _, err := s.CreateTeam(ctx, Team{TeamID: "t1"}); err != nil {
			t.Fatal(err)
		}
		_, k, err := s.Generate(ctx, NewKey{TeamID: "t1"})
		if err != nil {
			t.Fatal(err)
		}
		day := time.Date(2026, 5, 6, 7, 0, 0, 0, time.UTC)
		var first [spendStmts]*sql.Stmt
		for i := range 3 {
			row := SpendRow{RequestID: fmt.Sprintf("s%d", i), CallType: CallTypeTool, Server: "fx", APIKey: k.Token,
				TeamID: "t1", Status: SpendSuccess, Spend: 0.25, StartTime: day, EndTime: day}
			if err := s.RecordSpend(ctx, []SpendRow{row}); err != nil {
				t.Fatal(err)
			}
			if s.spendDB == nil {
				continue
			}
			s.spendInserts.mu.Lock()
			got := s.spendInserts.others
			s.spendInserts.mu.Unlock()
			if i == 0 {
				first = got
			}
			for j, st := range got {
				if st == nil || st != first[j] {
					t.Fatalf("batch %d: statement %d is %p, the first batch's %p", i, j, st, first[j])
				}
			}
		}
		if got, _, err := s.Lookup(ctx, k.Token); err != nil || got.Spend != 0.75 {
			t.Fatalf("key spend %v %v, want 0.75", got.Spend, err)
		}
		if team, _, err := s.LookupTeam(ctx, "t1"); err != nil || team.Spend != 0.75 {
			t.Fatalf("team spend %v %v, want 0.75", team.Spend, err)
		}
		d, err := s.DailySpends(ctx, DailySpendFilter{APIKey: k.Token})
		if err != nil || len(d) != 1 || d[0].Spend != 0.75 || d[0].APIRequests != 3 || d[0].Date != "2026-05-06" {
			t.Fatalf("daily spend %+v %v", d, err)
		}
	})
}

// TestRecordSpendConcurrentSizes: batches recorded at once, each needing statements no batch
// prepared yet, all land: preparing waits for the one spend connection, which another
// batch's transaction holds while it looks its statements up (it deadlocked when preparing
// held the statements' lock).
func TestRecordSpendConcurrentSizes(t *testing.T) {
	s := openSQLiteForTest(t, Options{})
	ctx := context.Background()
	done := make(chan struct{})
	go func() {
		defer close(done)
		var wg sync.WaitGroup
		for g := range 8 {
			wg.Go(func() {
				for i := range 9 {
					rows := spendBatch(1 << i)
					for j := range rows {
						rows[j].APIKey, rows[j].Spend = fmt.Sprintf("k%d-%d", g, j%3), 0.01
					}
					if err := s.RecordSpend(ctx, rows); err != nil {
						t.Error(err)
						return
					}
				}
			})
		}
		wg.Wait()
	}()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		t.Fatal("RecordSpend deadlocked")
	}
	var n int
	if err := s.db.QueryRowContext(ctx, `SELECT count(*) FROM spend_logs`).Scan(&n); err != nil || n != 8*511 {
		t.Fatalf("spend_logs rows = %d (%v), want %d", n, err, 8*511)
	}
}
