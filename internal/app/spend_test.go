package app

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/mcpgw/mcpgw/internal/config"
	"github.com/mcpgw/mcpgw/internal/fault"
	"github.com/mcpgw/mcpgw/internal/identity"
	"github.com/mcpgw/mcpgw/internal/spend"
	"github.com/mcpgw/mcpgw/internal/store"
	"github.com/mcpgw/mcpgw/internal/store/pgtest"
)

// TestBudgetAdmit: a key is refused once its own spend, or its team's, reaches max_budget
// (LiteLLM's texts), read through the cache the spend write invalidates; the master key
// and keys without budgets pass; a refusal does not reach the next admit.
func TestBudgetAdmit(t *testing.T) {
	ctx := context.Background()
	st := sqliteStore(t, store.Options{CacheTTL: time.Hour})
	one, half := 1.0, 0.5
	if _, err := st.CreateTeam(ctx, store.Team{TeamID: "eng", MaxBudget: &one}); err != nil {
		t.Fatal(err)
	}
	_, own, _ := st.Generate(ctx, store.NewKey{MaxBudget: &half})
	_, member, _ := st.Generate(ctx, store.NewKey{TeamID: "eng"})
	nexts := 0
	admit := budgetAdmit(st, nil, func(ctx context.Context, _ *identity.Caller, _ string) (context.Context, func(), *fault.Fault) {
		nexts++
		return ctx, func() {}, nil
	})
	try := func(c *identity.Caller) *fault.Fault {
		_, _, f := admit(ctx, c, "fx")
		return f
	}
	ownCaller, memberCaller := &identity.Caller{KeyHash: own.Token}, &identity.Caller{KeyHash: member.Token, TeamID: "eng"}
	if try(ownCaller) != nil || try(memberCaller) != nil || nexts != 2 {
		t.Fatal("keys under budget were refused")
	}
	now := time.Now()
	if err := st.RecordSpend(ctx, []store.SpendRow{
		{RequestID: "a", CallType: store.CallTypeTool, APIKey: own.Token, Status: store.SpendSuccess, Spend: 0.5, StartTime: now, EndTime: now},
		{RequestID: "b", CallType: store.CallTypeTool, APIKey: member.Token, TeamID: "eng", Status: store.SpendSuccess, Spend: 0.4, StartTime: now, EndTime: now},
	}); err != nil {
		t.Fatal(err)
	}
	f := try(ownCaller)
	if f == nil || f.Class != fault.LimitExceeded || f.RetryAfter != budgetRetry ||
		f.Message != "Budget has been exceeded! ExceededTokenBudget: Current spend for token: 0.5; Max Budget for Token: 0.5" {
		t.Fatalf("own budget reached: %+v", f)
	}
	if try(memberCaller) != nil {
		t.Fatal("a team under budget refused its key")
	}
	if err := st.RecordSpend(ctx, []store.SpendRow{{RequestID: "c", CallType: store.CallTypeTool, APIKey: member.Token,
		TeamID: "eng", Status: store.SpendSuccess, Spend: 0.6, StartTime: now, EndTime: now}}); err != nil {
		t.Fatal(err)
	}
	if f := try(memberCaller); f == nil || !strings.Contains(f.Message, "ExceededBudget: Team=eng over budget. Spend=1, Budget=1") {
		t.Fatalf("team budget reached: %+v", f)
	}
	if try(&identity.Caller{KeyHash: own.Token, IsMaster: true}) != nil || nexts != 4 {
		t.Fatalf("the master key was refused, or a refusal reached the next admit (%d)", nexts)
	}
}

// TestBudgetAdmitCountsOwedSpend: spend the writer has accepted but not yet written counts
// against the key's and the team's budgets at once (no commit, no cache invalidation).
func TestBudgetAdmitCountsOwedSpend(t *testing.T) {
	ctx := context.Background()
	st := sqliteStore(t, store.Options{CacheTTL: time.Hour})
	one := 1.0
	if _, err := st.CreateTeam(ctx, store.Team{TeamID: "eng", MaxBudget: &one}); err != nil {
		t.Fatal(err)
	}
	_, own, _ := st.Generate(ctx, store.NewKey{MaxBudget: &one})
	_, member, _ := st.Generate(ctx, store.NewKey{TeamID: "eng"})
	w := spend.NewWriter(spend.WriterConfig{Record: st.RecordSpend, FlushInterval: time.Hour, FreeFlushInterval: time.Hour})
	defer func() { _ = w.Close(ctx) }()
	admit := budgetAdmit(st, w.Owed, func(ctx context.Context, _ *identity.Caller, _ string) (context.Context, func(), *fault.Fault) {
		return ctx, func() {}, nil
	})
	try := func(c *identity.Caller) *fault.Fault {
		_, _, f := admit(ctx, c, "fx")
		return f
	}
	ownCaller, memberCaller := &identity.Caller{KeyHash: own.Token}, &identity.Caller{KeyHash: member.Token, TeamID: "eng"}
	if try(ownCaller) != nil || try(memberCaller) != nil {
		t.Fatal("keys under budget were refused")
	}
	now := time.Now()
	w.Add(store.SpendRow{RequestID: "a", CallType: store.CallTypeTool, APIKey: own.Token, Status: store.SpendSuccess, Spend: 1, StartTime: now, EndTime: now})
	w.Add(store.SpendRow{RequestID: "b", CallType: store.CallTypeTool, APIKey: member.Token, TeamID: "eng", Status: store.SpendSuccess, Spend: 1, StartTime: now, EndTime: now})
	if f := try(ownCaller); f == nil || !strings.Contains(f.Message, "Current spend for token: 1;") {
		t.Fatalf("a key whose owed spend reached its budget: %+v", f)
	}
	if f := try(memberCaller); f == nil || !strings.Contains(f.Message, "Team=eng over budget. Spend=1,") {
		t.Fatalf("a team whose owed spend reached its budget: %+v", f)
	}
	if err := w.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if k, tm := w.Owed(member.Token, "eng"); k != 0 || tm != 0 {
		t.Fatalf("owed after the write: %v %v", k, tm)
	}
	if f := try(ownCaller); f == nil || !strings.Contains(f.Message, "Current spend for token: 1;") {
		t.Fatalf("after the write, the stored spend refuses (counted once): %+v", f)
	}
}

// TestBudgetAdmitSeesSpendCommittedDuringTheCheck: a write that commits (and forgets what
// it owed) while the budget check runs is counted, not lost between the owed amount and the
// stored spend. The probe commits at the moment the check asks what is owed.
func TestBudgetAdmitSeesSpendCommittedDuringTheCheck(t *testing.T) {
	ctx := context.Background()
	st := sqliteStore(t, store.Options{CacheTTL: time.Hour})
	one := 1.0
	_, key, _ := st.Generate(ctx, store.NewKey{MaxBudget: &one})
	w := spend.NewWriter(spend.WriterConfig{Record: st.RecordSpend, FlushInterval: time.Hour, FreeFlushInterval: time.Hour})
	defer func() { _ = w.Close(ctx) }()
	caller := &identity.Caller{KeyHash: key.Token}
	committed := false
	owed := func(k, team string) (float64, float64) {
		if !committed {
			committed = true
			if err := w.Close(ctx); err != nil {
				t.Fatal(err)
			}
		}
		return w.Owed(k, team)
	}
	admit := budgetAdmit(st, owed, func(ctx context.Context, _ *identity.Caller, _ string) (context.Context, func(), *fault.Fault) {
		return ctx, func() {}, nil
	})
	now := time.Now()
	w.Add(store.SpendRow{RequestID: "a", CallType: store.CallTypeTool, APIKey: key.Token, Status: store.SpendSuccess, Spend: 1, StartTime: now, EndTime: now})
	if _, _, f := admit(ctx, caller, "fx"); f == nil || !strings.Contains(f.Message, "Current spend for token: 1;") {
		t.Fatalf("spend committed during the check was counted nowhere: %+v", f)
	}
}

// TestSpendLogFlushesAtClose: rows still queued when the spend log closes (free rows wait up
// to a second for company) are in the store when close returns, and their spend on the key.
func TestSpendLogFlushesAtClose(t *testing.T) {
	ctx := context.Background()
	st := sqliteStore(t, store.Options{})
	_, key, _ := st.Generate(ctx, store.NewKey{})
	sl, err := newSpendLog(st, config.GeneralSettings{}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	for i := range 120 {
		sl.w.Add(store.SpendRow{RequestID: store.NewTimeID(now), CallType: store.CallTypeTool, APIKey: key.Token,
			Status: store.SpendSuccess, Spend: float64(i % 2), StartTime: now, EndTime: now})
	}
	sl.close(slog.New(slog.DiscardHandler))
	if n, err := st.CountSpendLogs(ctx, store.SpendFilter{APIKey: key.Token}); err != nil || n != 120 {
		t.Fatalf("rows after close: %d %v, want 120", n, err)
	}
	if k, _, _ := st.Lookup(ctx, key.Token); k.Spend != 60 {
		t.Fatalf("key spend after close: %v, want 60", k.Spend)
	}
}

// TestBudgetAcrossReplicas: two replicas on one Postgres, each with its own lookup cache
// (an hour's TTL) and budget memo. A cost the first replica's writer accepts refuses the key
// there at once (owed spend); the second refuses it once the commit's invalidation reaches
// its cache, without waiting for the TTL.
func TestBudgetAcrossReplicas(t *testing.T) {
	ctx := context.Background()
	url := pgtest.NewDatabase(t)
	open := func() *store.Store {
		st, err := store.OpenPostgres(ctx, url, store.Options{CacheTTL: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = st.Close() })
		return st
	}
	a, b := open(), open()
	one := 1.0
	_, key, err := a.Generate(ctx, store.NewKey{MaxBudget: &one})
	if err != nil {
		t.Fatal(err)
	}
	w := spend.NewWriter(spend.WriterConfig{Record: a.RecordSpend})
	defer func() { _ = w.Close(ctx) }()
	pass := func(context.Context, *identity.Caller, string) (context.Context, func(), *fault.Fault) {
		return ctx, func() {}, nil
	}
	admitA, admitB := budgetAdmit(a, w.Owed, pass), budgetAdmit(b, nil, pass)
	caller := &identity.Caller{KeyHash: key.Token}
	if _, _, f := admitB(ctx, caller, "fx"); f != nil { // memoised on b now, for up to an hour
		t.Fatalf("under budget on b: %+v", f)
	}
	now := time.Now()
	w.Add(store.SpendRow{RequestID: store.NewTimeID(now), CallType: store.CallTypeTool, APIKey: key.Token,
		Status: store.SpendSuccess, Spend: 1, StartTime: now, EndTime: now})
	if _, _, f := admitA(ctx, caller, "fx"); f == nil {
		t.Fatal("the replica that took the cost admitted the key past its budget")
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, _, f := admitB(ctx, caller, "fx"); f != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the other replica still admits the key 10 s after the cost was written")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// sqliteStore is a SQLite store in a temporary directory, closed when the test ends.
func sqliteStore(t *testing.T, opts store.Options) *store.Store {
	t.Helper()
	st, err := store.OpenSQLite(context.Background(), t.TempDir(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return st
}
