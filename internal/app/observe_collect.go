package app

import (
	"github.com/prometheus/client_golang/prometheus"
)

// stateCollector exports the gateway's current state, read when scraped:
// the upstream sessions each current client holds and the listens running.
type stateCollector struct {
	a        *App
	sessions *prometheus.Desc
	listens  *prometheus.Desc
}

func newStateCollector(a *App) *stateCollector {
	return &stateCollector{a: a,
		sessions: prometheus.NewDesc("mcpgw_upstream_sessions_open", "Upstream sessions the gateway holds now (pooled and per-request), by server.", []string{"server"}, nil),
		listens:  prometheus.NewDesc("mcpgw_listens_open", "subscriptions/listen streams and legacy session follows running now.", nil, nil),
	}
}

// Describe sends the descriptors.
func (c *stateCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.sessions
	ch <- c.listens
}

// Collect reads the current generation's clients and the listens.
func (c *stateCollector) Collect(ch chan<- prometheus.Metric) {
	if g := c.a.cur.Load(); g != nil {
		for name, cl := range g.clients {
			ch <- prometheus.MustNewConstMetric(c.sessions, prometheus.GaugeValue, float64(cl.OpenSessions()), name)
		}
	}
	if ls := c.a.listens; ls != nil {
		ch <- prometheus.MustNewConstMetric(c.listens, prometheus.GaugeValue, float64(ls.Running()))
	}
}
