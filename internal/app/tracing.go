package app

import (
	"context"
	"encoding/json"
	"net/url"
	"strconv"

	"github.com/mcpgw/mcpgw/internal/config"
	"github.com/mcpgw/mcpgw/internal/observe"
	"github.com/mcpgw/mcpgw/internal/tracing"
	"github.com/mcpgw/mcpgw/internal/upstream"
)

// newTracer builds the trace sink when litellm_settings.callbacks names
// "otel" or the OTEL_* environment names an endpoint; nil when tracing is
// off, so nothing is installed and nothing is spent.
func newTracer(cfg *config.Config, o options) (*tracing.Tracer, error) {
	s, on, err := tracing.FromEnv(o.lookupEnv, cfg.LiteLLM.Callbacks)
	if err != nil || !on {
		return nil, err
	}
	s.ServiceVersion = o.version
	t, err := tracing.New(s, nil, o.log)
	if err != nil {
		return nil, err
	}
	o.log.Info("tracing on: spans exported over OTLP/HTTP", "service", s.ServiceName)
	return t, nil
}

// traceSink is t as an observe sink: a nil interface when t is nil.
func traceSink(t *tracing.Tracer) observe.Sink {
	if t == nil {
		return nil
	}
	return t
}

// closeTracer flushes the spans still queued, within tracing.ShutdownTimeout.
func (s *shared) closeTracer(ctx context.Context) {
	if s.tracer == nil {
		return
	}
	if err := s.tracer.Shutdown(context.WithoutCancel(ctx)); err != nil {
		s.log.Warn("tracing: spans lost at close", "error", err.Error())
	}
}

// propagateCalls is the client middleware, inside observeCalls, that sends
// the CLIENT span's trace context upstream, in the HTTP headers and in
// params._meta, and notes sv's address on the span.
func propagateCalls(t *tracing.Tracer, sv config.Server) upstream.Middleware {
	peer := peerOf(sv)
	return func(next upstream.CallFunc) upstream.CallFunc {
		return func(ctx context.Context, method string, params json.RawMessage, opts upstream.Options) (upstream.Result, error) {
			h, params := t.Outgoing(ctx, peer, params)
			return next(upstream.WithHeader(ctx, h), method, params, opts)
		}
	}
}

// peerOf is where sv's requests go.
func peerOf(sv config.Server) tracing.Peer {
	if sv.Transport == config.TransportStdio {
		return tracing.NewPeer("", 0, "pipe")
	}
	u, err := url.Parse(sv.URL)
	if err != nil {
		return tracing.NewPeer("", 0, "tcp")
	}
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	n, _ := strconv.Atoi(port)
	return tracing.NewPeer(u.Hostname(), n, "tcp")
}
