package store

import (
	"context"
	"testing"
	"time"
)

// TestBudgetPeriods: a key's and a team's budget_duration starts a period whose end is
// budget_reset_at; spend written after the reset is the new period's only, and the reset
// moves one period on; ResetBudgets zeroes idle rows whose reset is due; changing the
// duration restarts the period, keeping it leaves the reset alone.
func TestBudgetPeriods(t *testing.T) {
	forEachBackend(t, func(t *testing.T, open opener) {
		s := open(t, Options{CacheTTL: time.Hour})
		ctx := context.Background()
		t0 := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
		clock := t0
		s.now = func() time.Time { return clock }
		if _, err := s.CreateTeam(ctx, Team{TeamID: "eng", Budget: Budget{Duration: "1h"}}); err != nil {
			t.Fatal(err)
		}
		_, k, err := s.Generate(ctx, NewKey{TeamID: "eng", BudgetDuration: "30m"})
		if err != nil || k.Budget.Duration != "30m" || k.Budget.ResetAt == nil || !k.Budget.ResetAt.Equal(t0.Add(30*time.Minute)) {
			t.Fatalf("generate: %+v %v", k.Budget, err)
		}
		spend := func(v float64) {
			t.Helper()
			if err := s.RecordSpend(ctx, []SpendRow{{RequestID: NewID(), CallType: CallTypeTool, APIKey: k.Token, TeamID: "eng",
				Status: SpendSuccess, Spend: v, StartTime: clock, EndTime: clock}}); err != nil {
				t.Fatal(err)
			}
		}
		spend(2)
		clock = t0.Add(31 * time.Minute) // the key's period ended, the team's did not
		got, _, _ := s.Lookup(ctx, k.Token)
		if got.Spend != 2 || got.Budget.SpendAt(got.Spend, clock) != 0 {
			t.Fatalf("due key: spend %v, as budgets see it %v", got.Spend, got.Budget.SpendAt(got.Spend, clock))
		}
		spend(3)
		got, _, _ = s.Lookup(ctx, k.Token)
		if got.Spend != 3 || !got.Budget.ResetAt.Equal(clock.Add(30*time.Minute)) {
			t.Fatalf("key after a write past its reset: spend %v reset %v", got.Spend, got.Budget.ResetAt)
		}
		team, _, _ := s.LookupTeam(ctx, "eng")
		if team.Spend != 5 || !team.Budget.ResetAt.Equal(t0.Add(time.Hour)) {
			t.Fatalf("team within its period: spend %v reset %v", team.Spend, team.Budget.ResetAt)
		}
		clock = t0.Add(2 * time.Hour)
		if n, err := s.ResetBudgets(ctx, clock); err != nil || n != 2 {
			t.Fatalf("ResetBudgets = %d %v, want the key and the team", n, err)
		}
		got, _, _ = s.Lookup(ctx, k.Token)
		team, _, _ = s.LookupTeam(ctx, "eng")
		if got.Spend != 0 || !got.Budget.ResetAt.Equal(clock.Add(30*time.Minute)) || team.Spend != 0 || !team.Budget.ResetAt.Equal(clock.Add(time.Hour)) {
			t.Fatalf("after ResetBudgets: key %v %v, team %v %v", got.Spend, got.Budget.ResetAt, team.Spend, team.Budget.ResetAt)
		}
		if n, _ := s.ResetBudgets(ctx, clock); n != 0 {
			t.Fatalf("a second ResetBudgets reset %d", n)
		}
		clock = clock.Add(time.Minute)
		same, err := s.Update(ctx, k.Token, func(k *Key) { k.Alias = "renamed" })
		if err != nil || !same.Budget.ResetAt.Equal(*got.Budget.ResetAt) {
			t.Fatalf("an update keeping the duration moved the reset: %+v %v", same.Budget, err)
		}
		moved, err := s.Update(ctx, k.Token, func(k *Key) { k.Budget.Duration = "1d" })
		if err != nil || !moved.Budget.ResetAt.Equal(clock.Add(24*time.Hour)) {
			t.Fatalf("a new duration: %+v %v", moved.Budget, err)
		}
		none, err := s.Update(ctx, k.Token, func(k *Key) { k.Budget.Duration = "" })
		if err != nil || none.Budget.ResetAt != nil {
			t.Fatalf("no duration: %+v %v", none.Budget, err)
		}
		if stored, _ := s.Get(ctx, k.Token); stored.Budget.ResetAt != nil || stored.Budget.Duration != "" {
			t.Fatalf("stored without a duration: %+v", stored.Budget)
		}
		if _, err := s.Update(ctx, k.Token, func(k *Key) { k.Budget.Duration = "soon" }); err == nil {
			t.Fatal("an unreadable duration was stored")
		}
	})
}
