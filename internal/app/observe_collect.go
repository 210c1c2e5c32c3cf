package app

import (
	"github.com/prometheus/client_golang/prometheus"
)

// stateCollector exports the gateway's current state, read when scraped:
// the upstream sessions each current client holds, the listens running and,
// when Redis is configured, whether it answers, its outages and the calls
// the limits decided without it.
type stateCollector struct {
	a          *App
	sessions   *prometheus.Desc
	listens    *prometheus.Desc
	redisUp    *prometheus.Desc
	outages    *prometheus.Desc
	withoutRed *prometheus.Desc
}

// newStateCollector builds the collector reading a.
func newStateCollector(a *App) *stateCollector {
	return &stateCollector{a: a,
		sessions: prometheus.NewDesc("mcpgw_upstream_sessions_open", "Upstream sessions the gateway holds now (pooled and per-request), by server.", []string{"server"}, nil),
		listens:  prometheus.NewDesc("mcpgw_listens_open", "subscriptions/listen streams and legacy session follows running now.", nil, nil),
		redisUp:  prometheus.NewDesc("mcpgw_redis_up", "1 while Redis answered the last command, 0 while it is unreachable (only with Redis configured).", nil, nil),
		outages:  prometheus.NewDesc("mcpgw_redis_outages_total", "Times Redis went from reachable to unreachable (only with Redis configured).", nil, nil),
		withoutRed: prometheus.NewDesc("mcpgw_limits_without_redis_total",
			"Calls the limits decided without Redis while it was unreachable: counted in this replica (redis_failure_mode: open) or refused (closed).", nil, nil),
	}
}

// Describe sends the descriptors.
func (c *stateCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.sessions
	ch <- c.listens
	ch <- c.redisUp
	ch <- c.outages
	ch <- c.withoutRed
}

// Collect reads the current generation's clients, the listens and Redis's
// health.
func (c *stateCollector) Collect(ch chan<- prometheus.Metric) {
	if g := c.a.cur.Load(); g != nil {
		for name, cl := range g.clients {
			ch <- prometheus.MustNewConstMetric(c.sessions, prometheus.GaugeValue, float64(cl.OpenSessions()), name)
		}
	}
	if ls := c.a.listens; ls != nil {
		ch <- prometheus.MustNewConstMetric(c.listens, prometheus.GaugeValue, float64(ls.Running()))
	}
	if rc := c.a.redis; rc != nil {
		h := rc.Health()
		up := 0.0
		if h.Up {
			up = 1
		}
		ch <- prometheus.MustNewConstMetric(c.redisUp, prometheus.GaugeValue, up)
		ch <- prometheus.MustNewConstMetric(c.outages, prometheus.CounterValue, float64(h.Outages))
		ch <- prometheus.MustNewConstMetric(c.withoutRed, prometheus.CounterValue, float64(c.a.gate.local0.Load()))
	}
}
