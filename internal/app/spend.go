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
	if st := s.w.Stats(); st.Dropped > 0 || st.Failed > 0 {
		log.Warn("spend logs lost", "dropped", st.Dropped, "failed", st.Failed)
	}
}

// admitFunc admits one tools/call (gateway.Config.AdmitCall).
type admitFunc func(ctx context.Context, caller *identity.Caller, server string) (context.Context, func(), *fault.Fault)

// budgetAdmit refuses a store key's tool call when the key's, else its team's, spend has
// reached its max_budget (LiteLLM's check: spend >= max_budget), then admits it by next.
// Key and team are read through the store's lookup cache, which the spend writer's commits
// invalidate, so a key over budget is refused once the row that took it over is written.
func budgetAdmit(st *store.Store, next admitFunc) admitFunc {
	if st == nil {
		return next
	}
	return func(ctx context.Context, caller *identity.Caller, server string) (context.Context, func(), *fault.Fault) {
		if caller != nil && !caller.IsMaster && caller.KeyHash != "" {
			if f := overBudget(ctx, st, caller); f != nil {
				observe.Served(ctx, server) // the refused call's row names the server it was routed to
				return ctx, nil, f
			}
		}
		return next(ctx, caller, server)
	}
}

// overBudget is the fault refusing caller's key or team for its spent budget, or nil. A
// failed read admits the call (as a limit counter that cannot decide does).
func overBudget(ctx context.Context, st *store.Store, caller *identity.Caller) *fault.Fault {
	k, found, err := st.Lookup(ctx, caller.KeyHash)
	if err != nil || !found {
		return nil
	}
	now := time.Now()
	if spent := k.Budget.SpendAt(k.Spend, now); k.MaxBudget != nil && spent >= *k.MaxBudget {
		return budgetFault(k.Budget, now, "ExceededTokenBudget: Current spend for token: "+num(spent)+
			"; Max Budget for Token: "+num(*k.MaxBudget))
	}
	if k.TeamID == "" {
		return nil
	}
	t, found, err := st.LookupTeam(ctx, k.TeamID)
	if err != nil || !found || t.MaxBudget == nil {
		return nil
	}
	spent := t.Budget.SpendAt(t.Spend, now)
	if spent < *t.MaxBudget {
		return nil
	}
	return budgetFault(t.Budget, now, "ExceededBudget: Team="+t.TeamID+" over budget. Spend="+num(spent)+
		", Budget="+num(*t.MaxBudget))
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
