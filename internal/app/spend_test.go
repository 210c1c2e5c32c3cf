package app

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/mcpgw/mcpgw/internal/fault"
	"github.com/mcpgw/mcpgw/internal/identity"
	"github.com/mcpgw/mcpgw/internal/store"
)

// TestBudgetAdmit: a key is refused once its own spend, or its team's, reaches max_budget
// (LiteLLM's texts), read through the cache the spend write invalidates; the master key
// and keys without budgets pass; a refusal does not reach the next admit.
func TestBudgetAdmit(t *testing.T) {
	ctx := context.Background()
	st, err := store.OpenSQLite(ctx, t.TempDir(), store.Options{CacheTTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	one, half := 1.0, 0.5
	if _, err := st.CreateTeam(ctx, store.Team{TeamID: "eng", MaxBudget: &one}); err != nil {
		t.Fatal(err)
	}
	_, own, _ := st.Generate(ctx, store.NewKey{MaxBudget: &half})
	_, member, _ := st.Generate(ctx, store.NewKey{TeamID: "eng"})
	nexts := 0
	admit := budgetAdmit(st, func(ctx context.Context, _ *identity.Caller, _ string) (context.Context, func(), *fault.Fault) {
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
