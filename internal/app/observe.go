package app

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/mcpgw/mcpgw/internal/catalog"
	"github.com/mcpgw/mcpgw/internal/config"
	"github.com/mcpgw/mcpgw/internal/fault"
	"github.com/mcpgw/mcpgw/internal/jsonrpc"
	"github.com/mcpgw/mcpgw/internal/mcp"
	"github.com/mcpgw/mcpgw/internal/metrics"
	"github.com/mcpgw/mcpgw/internal/observe"
	"github.com/mcpgw/mcpgw/internal/upstream"
)

// observeCalls is the client middleware that records every request the
// client sends to server, innermost (after the limits), so a call a limit
// refused is not counted as sent. Its context carries what sinks derive
// (a CLIENT span), nested under the downstream request's.
func observeCalls(o *observe.Observer, server string) upstream.Middleware {
	return func(next upstream.CallFunc) upstream.CallFunc {
		return func(ctx context.Context, method string, params json.RawMessage, opts upstream.Options) (upstream.Result, error) {
			c := &observe.Call{Server: server, Method: method, Target: callTarget(method, params)}
			ctx, span := o.Call(ctx, c)
			res, err := next(ctx, method, params, opts)
			if err != nil {
				c.Fault = callFault(err)
			}
			span.End()
			return res, err
		}
	}
}

// callTarget is the tool or prompt name or resource URI params name.
func callTarget(method string, params json.RawMessage) string {
	key := mcp.NameParam(method)
	if key == "" {
		return ""
	}
	s, _ := jsonrpc.StringMember(params, key)
	return observe.Clip(s, observe.MaxTarget)
}

// callFault classifies an upstream call's failure as the gateway answers it
// (see gateway's failure): the upstream's own JSON-RPC error, a fault a
// middleware answered with, or the class of the transport failure.
func callFault(err error) fault.Class {
	var re *upstream.RPCError
	if errors.As(err, &re) {
		return fault.UpstreamRPC
	}
	var own *fault.Fault
	if errors.As(err, &own) {
		return own.Class
	}
	return catalog.UpstreamFault(upstream.Classify(err), "").Class
}

// WithoutObservation builds the App with nothing observing requests: no
// metrics sink (and no /metrics) and no access log; the baseline the
// observation benchmark compares against.
func WithoutObservation() Option {
	return func(o *options) { o.noMetrics, o.noAccessLog = true, true }
}

// WithAccessLogWriter makes the access log encode its lines itself and write
// them to w, buffered (observe.NewLines: flushed every
// observe.DefaultLinesInterval or observe.DefaultLinesSize bytes, and at
// Close), instead of logging them through the logger: w is where the
// logger writes (stderr), and the lines are the ones its slog.JSONHandler
// would write. w must take writes from the logger and from the access log
// at once (an *os.File does). Without it the access log goes through the
// logger.
func WithAccessLogWriter(w io.Writer) Option { return func(o *options) { o.accessOut = w } }

// newObserver builds the observer every generation reports to, from the
// config the App starts with: the access log (unless mcp_access_log is
// false, or the logger does not write INFO lines; to o.accessOut when set,
// else through the logger), then extra in order (the
// trace and spend sinks; nil ones are left out), then the metrics last, so
// a sink before it may fill what it counts (the spend sink sets Cost);
// nil (nothing observed) when there are none.
func newObserver(o options, cfg *config.Config, m *metrics.Metrics, extra ...observe.Sink) *observe.Observer {
	var sinks []observe.Sink
	if !cfg.General.NoAccessLog && !o.noAccessLog && o.log.Enabled(context.Background(), slog.LevelInfo) {
		if o.accessOut != nil {
			sinks = append(sinks, observe.NewAccessLogLines(observe.NewLines(o.accessOut, 0, 0, o.log)))
		} else {
			sinks = append(sinks, observe.NewAccessLog(o.log))
		}
	}
	sinks = append(sinks, extra...)
	if m != nil {
		sinks = append(sinks, m)
	}
	return observe.New(sinks...)
}

// newMetrics builds the /metrics registry for the App (nil with
// o.noMetrics) with the collectors that read the App's state when scraped.
func (a *App) newMetrics(o options, cfg *config.Config) *metrics.Metrics {
	if o.noMetrics {
		return nil
	}
	m := metrics.New(metrics.Config{Labels: cfg.LiteLLM.Metrics.ToolLabels, Separator: a.env.Separator})
	m.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "mcpgw_config_generation",
			Help: "Configs applied since start (1: the one started with); each reload or change of the stored servers adds one."},
			func() float64 { return float64(a.generation.Load()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "mcpgw_config_reload_failing",
			Help: "1 while the last config reload failed and none has succeeded since."},
			func() float64 {
				if st := a.configStatus(); st != nil && st.LastReloadError != "" {
					return 1
				}
				return 0
			}),
		newStateCollector(a),
	)
	return m
}

// onWebhook is what the authenticator tells of each webhook call: the
// metrics' webhook histogram; nil without metrics.
func (s *shared) onWebhook() func(time.Duration, string) {
	if s.metrics == nil {
		return nil
	}
	return s.metrics.Webhook
}
