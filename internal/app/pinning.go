package app

import (
	"log/slog"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/mcpgw/mcpgw/internal/catalog"
	"github.com/mcpgw/mcpgw/internal/config"
	"github.com/mcpgw/mcpgw/internal/gateway"
	"github.com/mcpgw/mcpgw/internal/guardrail"
	"github.com/mcpgw/mcpgw/internal/metrics"
	"github.com/mcpgw/mcpgw/internal/pinning"
	"github.com/mcpgw/mcpgw/internal/store"
)

// pinState is tool-definition pinning and the guardrails' shared parts: the pinner (its
// pins live in the store, or in this process without one), the guardrails' HTTP client and
// their counters.
type pinState struct {
	pinner      *pinning.Pinner
	client      *http.Client
	quarantines *prometheus.CounterVec // nil without metrics
	checks      *prometheus.CounterVec // nil without metrics
}

// newPinState builds the pinner over st (nil: pins kept in this process) and registers the
// counters with m (nil: none).
func newPinState(st *store.Store, log *slog.Logger, m *metrics.Metrics) *pinState {
	ps := &pinState{client: &http.Client{}}
	if m != nil {
		ps.quarantines = prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mcpgw_tool_quarantines_total",
			Help: "Tools quarantined: a pinned definition changed (reason changed) or a guardrail blocked a description (reason guardrail).",
		}, []string{"mcp_server_name", "reason"})
		ps.checks = prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mcpgw_guardrail_checks_total",
			Help: "Guardrail requests by guardrail, mode and outcome (none, blocked, intervened, failed_open, failed_closed).",
		}, []string{"guardrail", "mode", "outcome"})
		m.MustRegister(ps.quarantines, ps.checks)
	}
	cfg := pinning.Config{Logger: log}
	if st != nil {
		cfg.Store = st
	}
	if ps.quarantines != nil {
		cfg.OnQuarantine = func(server, reason string) { ps.quarantines.WithLabelValues(server, reason).Inc() }
	}
	ps.pinner = pinning.New(cfg)
	return ps
}

// configure sets the pinner's rules and listing guardrails for cfg and returns the call
// guard (nil when no guardrail is configured).
func (ps *pinState) configure(cfg *config.Config, log *slog.Logger) gateway.CallGuard {
	rules := map[string]pinning.Rule{}
	named := map[string][]string{}
	for _, s := range cfg.Servers {
		if s.PinToolDefinitions || len(s.PinnedTools) > 0 {
			rules[s.Name] = pinning.Rule{All: s.PinToolDefinitions, Tools: s.PinnedTools}
		}
		if len(s.Guardrails) > 0 {
			named[s.Name] = s.Guardrails
		}
	}
	gcfg := guardrail.Config{Guardrails: cfg.Guardrails, Servers: named, Client: ps.client, Logger: log}
	if ps.checks != nil {
		gcfg.OnCheck = func(g, mode, outcome string) { ps.checks.WithLabelValues(g, mode, outcome).Inc() }
	}
	guard := guardrail.New(gcfg)
	if guard == nil {
		ps.pinner.Configure(rules, nil)
		return nil
	}
	var judge pinning.Judge
	if guard.Listing() {
		judge = guard.Describe
	}
	ps.pinner.Configure(rules, judge)
	return guard
}

// vetter is the catalog's Vetter: the pinner, or none without pin state.
func (ps *pinState) vetter() catalog.Vetter {
	if ps == nil {
		return nil
	}
	return ps.pinner
}
