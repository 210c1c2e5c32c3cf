package app

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/mcpgw/mcpgw/internal/config"
	"github.com/mcpgw/mcpgw/internal/fault"
	"github.com/mcpgw/mcpgw/internal/identity"
	"github.com/mcpgw/mcpgw/internal/observe"
	"github.com/mcpgw/mcpgw/internal/spend"
	"github.com/mcpgw/mcpgw/internal/store"
)

// spendCloseTimeout bounds writing the spend rows still queued when the App closes.
const spendCloseTimeout = 5 * time.Second

// spendLog is the spend and audit log: a row per tool call and listing, written to the
// store by a batched writer, with what each call cost. nil without a store.
type spendLog struct {
	w    *spend.Writer
	sink *spend.Sink
	// retention deletes old rows (maximum_spend_logs_retention_period); nil keeps them.
	retention *spend.Retention
	// resets returns keys' and teams' spend to 0 when their budget_duration ends.
	resets *spend.Loop
}

// budgetResetInterval is how often keys' and teams' due budget resets are written. Budgets
// do not wait for it (store.Budget.SpendAt): it keeps the spend the API shows right for
// keys and teams without traffic.
const budgetResetInterval = time.Minute

// newSpendLog starts the spend writer over st, and the retention sweeps when g sets a
// retention period; nil when st is nil.
func newSpendLog(st *store.Store, g config.GeneralSettings, log *slog.Logger) (*spendLog, error) {
	if st == nil {
		return nil, nil
	}
	period, err := store.ParseDuration(g.SpendLogsRetention)
	if err != nil {
		return nil, fmt.Errorf("general_settings.maximum_spend_logs_retention_period: %w", err)
	}
	interval, err := store.ParseDuration(g.SpendLogsRetentionInterval)
	if err != nil {
		return nil, fmt.Errorf("general_settings.maximum_spend_logs_retention_interval: %w", err)
	}
	w := spend.NewWriter(spend.WriterConfig{Record: st.RecordSpend, Logger: log})
	s := &spendLog{w: w, sink: spend.NewSink(w)}
	if period > 0 {
		s.retention = spend.StartRetention(spend.RetentionConfig{Delete: st.DeleteSpendLogsBefore,
			Period: period, Interval: interval, Logger: log})
	}
	s.resets = spend.StartLoop(budgetResetInterval, "budget resets", log, func(ctx context.Context) {
		if _, err := st.ResetBudgets(ctx, time.Now()); err != nil && ctx.Err() == nil {
			log.Warn("resetting spent budgets failed; the next run tries again", "error", err.Error())
		}
	})
	return s, nil
}

// observeSink is the sink to observe requests with; nil (no sink) without a spend log.
func (s *spendLog) observeSink() observe.Sink {
	if s == nil {
		return nil
	}
	return s.sink
}

// setCosts makes servers' mcp_server_cost_info the price of their calls.
func (s *spendLog) setCosts(servers []config.Server) {
	if s == nil {
		return
	}
	c := make(spend.Costs, len(servers))
	for _, sv := range servers {
		if sv.Cost.DefaultPerQuery != 0 || len(sv.Cost.PerTool) > 0 {
			c[sv.Name] = spend.Cost{Default: sv.Cost.DefaultPerQuery, PerTool: sv.Cost.PerTool}
		}
	}
	s.sink.SetCosts(c)
}

// owed is what this replica's spend writer has accepted but not yet written for a key and
// a team (spend.Writer.Owed); 0 without a spend log.
func (s *spendLog) owed(key, team string) (float64, float64) {
	if s == nil {
		return 0, 0
	}
	return s.w.Owed(key, team)
}

// close writes the rows still queued, waiting at most spendCloseTimeout.
func (s *spendLog) close(log *slog.Logger) {
	if s == nil {
		return
	}
	s.retention.Stop()
	s.resets.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), spendCloseTimeout)
	defer cancel()
	if err := s.w.Close(ctx); err != nil {
		log.Warn("spend logs still queued at shutdown were not written", "error", err.Error())
	}
	if st := s.w.Stats(); st.Merged > 0 || st.Dropped > 0 || st.Failed > 0 {
		log.Warn("spend logs lost", "merged", st.Merged, "dropped", st.Dropped, "failed", st.Failed)
	}
}

// admitFunc admits one tools/call (gateway.Config.AdmitCall).
type admitFunc func(ctx context.Context, caller *identity.Caller, server string) (context.Context, func(), *fault.Fault)

// budgetAdmit refuses a store key's tool call when the key's, else its team's, spend has
// reached its max_budget (LiteLLM's check: spend >= max_budget), then admits it by next.
// Spend is the store's (read through its lookup cache, which the spend writer's commits
// invalidate, on every replica) plus what owed says this replica's writer has accepted but
// not yet written, so a call's cost counts from the moment it ends, not from its commit.
// The budgets read are memoised per key (memo: while the cache's generation holds, within
// its TTL), so a call pays a map lookup, not two cache lookups and row copies.
func budgetAdmit(st *store.Store, owed func(key, team string) (float64, float64), next admitFunc) admitFunc {
	if st == nil {
		return next
	}
	b := &budgets{st: st, owed: owed}
	return func(ctx context.Context, caller *identity.Caller, server string) (context.Context, func(), *fault.Fault) {
		if caller != nil && !caller.IsMaster && caller.KeyHash != "" {
			if f := b.over(ctx, caller); f != nil {
				observe.Served(ctx, server) // the refused call's row names the server it was routed to
				return ctx, nil, f
			}
		}
		return next(ctx, caller, server)
	}
}

// budgets is budgetAdmit's view of the store.
type budgets struct {
	st   *store.Store
	owed func(key, team string) (float64, float64) // nil: nothing owed
	memo memo[string, budgetState]                 // by key hash
}

// budgetState is what a key's budget check reads from the store.
type budgetState struct {
	found      bool // the key exists (else nothing is checked)
	maxBudget  *float64
	spend      float64
	budget     store.Budget
	teamID     string
	team       bool // the team exists and has a max_budget
	teamMax    float64
	teamSpend  float64
	teamBudget store.Budget
}

// state is the budgets of the key with hash, from the memo or the store; ok false when a
// read failed.
func (b *budgets) state(ctx context.Context, hash string, now time.Time) (budgetState, bool) {
	s, err := b.memo.load(ctx, b.st, hash, now, func(ctx context.Context) (budgetState, bool, error) {
		k, found, err := b.st.Lookup(ctx, hash)
		if err != nil {
			return budgetState{}, false, err
		}
		s := budgetState{found: found, maxBudget: k.MaxBudget, spend: k.Spend, budget: k.Budget, teamID: k.TeamID}
		if found && k.TeamID != "" {
			t, ok, err := b.st.LookupTeam(ctx, k.TeamID)
			if err != nil {
				return budgetState{}, false, err
			}
			if ok && t.MaxBudget != nil {
				s.team, s.teamMax, s.teamSpend, s.teamBudget = true, *t.MaxBudget, t.Spend, t.Budget
			}
		}
		return s, true, nil
	})
	return s, err == nil
}

// over is the fault refusing caller's key or team for its spent budget, or nil. A failed
// read admits the call (as a limit counter that cannot decide does).
func (b *budgets) over(ctx context.Context, caller *identity.Caller) *fault.Fault {
	now := b.st.Now()
	// What the writer owes is read before the stored spend: a commit
	// between the two then bumps the cache's generation and the spend is
	// read again with it (counted twice for a moment, erring towards
	// refusing). Read the other way round, a commit in between would be
	// in neither. The writer files spend under the caller's team.
	var owedKey, owedTeam float64
	if b.owed != nil {
		owedKey, owedTeam = b.owed(caller.KeyHash, caller.TeamID)
	}
	s, ok := b.state(ctx, caller.KeyHash, now)
	if !ok || !s.found || (s.maxBudget == nil && !s.team) {
		return nil
	}
	if spent := s.budget.SpendAt(s.spend, now) + owedKey; s.maxBudget != nil && spent >= *s.maxBudget {
		return budgetFault(s.budget, now, "ExceededTokenBudget: Current spend for token: "+num(spent)+
			"; Max Budget for Token: "+num(*s.maxBudget))
	}
	if !s.team {
		return nil
	}
	spent := s.teamBudget.SpendAt(s.teamSpend, now) + owedTeam
	if spent < s.teamMax {
		return nil
	}
	return budgetFault(s.teamBudget, now, "ExceededBudget: Team="+s.teamID+" over budget. Spend="+num(spent)+
		", Budget="+num(s.teamMax))
}

// budgetRetry is a budget refusal's Retry-After: a budget is reset only by its
// budget_duration (often days) or by an admin, so a client that retries on 429 is told not
// to come back soon (a 1 s default would have it hammer).
const budgetRetry = 24 * time.Hour

// budgetFault refuses a call for a spent budget: limit_exceeded (HTTP 429), Retry-After
// until b's next reset when that is sooner than one day, else one day.
func budgetFault(b store.Budget, now time.Time, msg string) *fault.Fault {
	retry := budgetRetry
	if b.ResetAt != nil && b.ResetAt.Sub(now) < retry {
		retry = max(b.ResetAt.Sub(now), time.Second)
	}
	return &fault.Fault{Class: fault.LimitExceeded, RetryAfter: retry, Message: "Budget has been exceeded! " + msg}
}

func num(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }
