package app

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/mcpgw/mcpgw/internal/catalog"
)

// stateCollector exports the gateway's current state, read when scraped:
// the upstream sessions each current client holds, the listens running, the
// legacy sessions and streams held, each server's listing breaker, the list
// cache's hits and misses and, when Redis is configured, whether it
// answers, its outages and the calls the limits decided without it.
type stateCollector struct {
	a          *App
	sessions   *prometheus.Desc
	listens    *prometheus.Desc
	legacy     *prometheus.Desc
	streams    *prometheus.Desc
	breaker    *prometheus.Desc
	cache      *prometheus.Desc
	redisUp    *prometheus.Desc
	outages    *prometheus.Desc
	withoutRed *prometheus.Desc
}

// newStateCollector builds the collector reading a.
func newStateCollector(a *App) *stateCollector {
	return &stateCollector{a: a,
		sessions: prometheus.NewDesc("mcpgw_upstream_sessions_open", "Upstream sessions the gateway holds now (pooled and per-request), by server.", []string{"server"}, nil),
		listens:  prometheus.NewDesc("mcpgw_listens_open", "subscriptions/listen streams and legacy session follows running now.", nil, nil),
		legacy:   prometheus.NewDesc("mcpgw_legacy_sessions_open", "Legacy (handshake-era) sessions live on this replica now.", nil, nil),
		streams: prometheus.NewDesc("mcpgw_streams_held", "Long-lived downstream streams open now: legacy sessions' GET streams (get) and /mcp/sse streams (sse); subscriptions/listen streams are mcpgw_listens_open.",
			[]string{"kind"}, nil),
		breaker: prometheus.NewDesc("mcpgw_breaker_state", "Each configured server's listing breaker: 1 for the state it is in (closed, open, half_open), else 0.",
			[]string{"server", "state"}, nil),
		cache:   prometheus.NewDesc("mcpgw_list_cache_requests_total", "Server lists asked of the list cache, by result (hit, miss).", []string{"result"}, nil),
		redisUp: prometheus.NewDesc("mcpgw_redis_up", "1 while Redis answered the last command, 0 while it is unreachable (only with Redis configured).", nil, nil),
		outages: prometheus.NewDesc("mcpgw_redis_outages_total", "Times Redis went from reachable to unreachable (only with Redis configured).", nil, nil),
		withoutRed: prometheus.NewDesc("mcpgw_limits_without_redis_total",
			"Calls the limits decided without Redis while it was unreachable: counted in this replica (redis_failure_mode: open) or refused (closed).", nil, nil),
	}
}

// Describe sends the descriptors.
func (c *stateCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.sessions, c.listens, c.legacy, c.streams, c.breaker, c.cache, c.redisUp, c.outages, c.withoutRed} {
		ch <- d
	}
}

// Collect reads the current generation's clients and breakers, the listens,
// the legacy streams, the cache counts and Redis's health.
func (c *stateCollector) Collect(ch chan<- prometheus.Metric) {
	if g := c.a.cur.Load(); g != nil {
		for name, cl := range g.clients {
			ch <- prometheus.MustNewConstMetric(c.sessions, prometheus.GaugeValue, float64(cl.OpenSessions()), name)
		}
		if g.cat != nil {
			g.cat.BreakerStates(func(server, state string) {
				for _, s := range [...]string{catalog.BreakerClosed, catalog.BreakerOpen, catalog.BreakerHalfOpen} {
					v := 0.0
					if s == state {
						v = 1
					}
					ch <- prometheus.MustNewConstMetric(c.breaker, prometheus.GaugeValue, v, server, s)
				}
			})
		}
	}
	if ls := c.a.listens; ls != nil {
		ch <- prometheus.MustNewConstMetric(c.listens, prometheus.GaugeValue, float64(ls.Running()))
	}
	if lg := c.a.legacy; lg != nil {
		st := lg.Streams()
		ch <- prometheus.MustNewConstMetric(c.legacy, prometheus.GaugeValue, float64(st.Sessions))
		ch <- prometheus.MustNewConstMetric(c.streams, prometheus.GaugeValue, float64(st.GetStreams), "get")
		ch <- prometheus.MustNewConstMetric(c.streams, prometheus.GaugeValue, float64(st.SSEStreams), "sse")
	}
	ch <- prometheus.MustNewConstMetric(c.cache, prometheus.CounterValue, float64(c.a.cacheStats.Hits()), "hit")
	ch <- prometheus.MustNewConstMetric(c.cache, prometheus.CounterValue, float64(c.a.cacheStats.Misses()), "miss")
	c.collectRedis(ch)
}

// collectRedis exports Redis's health, when Redis is configured.
func (c *stateCollector) collectRedis(ch chan<- prometheus.Metric) {
	rc := c.a.redis
	if rc == nil {
		return
	}
	h := rc.Health()
	up := 0.0
	if h.Up {
		up = 1
	}
	ch <- prometheus.MustNewConstMetric(c.redisUp, prometheus.GaugeValue, up)
	ch <- prometheus.MustNewConstMetric(c.outages, prometheus.CounterValue, float64(h.Outages))
	ch <- prometheus.MustNewConstMetric(c.withoutRed, prometheus.CounterValue, float64(c.a.gate.local0.Load()))
}
