package app

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/mcpgw/mcpgw/internal/config"
	"github.com/mcpgw/mcpgw/internal/fault"
	"github.com/mcpgw/mcpgw/internal/limits"
	"github.com/mcpgw/mcpgw/internal/mcp"
	"github.com/mcpgw/mcpgw/internal/upstream"
)

// A server's max_concurrent_requests refuses a call over it at once (never
// queued) with a limit_exceeded fault, counts only the calls rpm counts,
// lets a retry through even when full, and gives a place back when a call
// ends, is cancelled or panics.
func TestServerConcurrencyLimit(t *testing.T) {
	gate := limits.NewLocal(0)
	var r rpms
	r.set([]config.Server{{Name: "srv", MaxConcurrentRequests: 1}})
	entered := make(chan struct{})
	end := func(ctx context.Context, method string, _ json.RawMessage, _ upstream.Options) (upstream.Result, error) {
		switch ctx.Value(ctxKey{}).(string) {
		case "block":
			entered <- struct{}{}
			<-ctx.Done()
			return upstream.Result{}, ctx.Err()
		case "panic":
			panic("upstream exploded")
		}
		return upstream.Result{Raw: json.RawMessage(`{}`)}, nil
	}
	call := serverLimits(gate, "srv", r.of("srv"), r.maxOf("srv"), slog.New(slog.DiscardHandler))(end)
	with := func(mode string) context.Context { return context.WithValue(context.Background(), ctxKey{}, mode) }

	ctx, cancel := context.WithCancel(with("block"))
	done := make(chan error, 1)
	go func() {
		_, err := call(ctx, mcp.MethodToolsCall, nil, upstream.Options{})
		done <- err
	}()
	<-entered
	start := time.Now()
	_, err := call(with("ok"), mcp.MethodToolsCall, nil, upstream.Options{})
	var f *fault.Fault
	if !errors.As(err, &f) || f.Class != fault.LimitExceeded || f.Limit == nil || f.Limit.Kind != fault.KindParallel ||
		f.Message != "upstream srv: too many requests in flight (max_concurrent_requests 1)" {
		t.Fatalf("a second call while one is in flight: %v", err)
	}
	if time.Since(start) > time.Second {
		t.Fatal("the refusal waited")
	}
	if _, err := call(with("ok"), mcp.MethodToolsList, nil, upstream.Options{}); err != nil {
		t.Fatalf("a list page while full: %v", err)
	}
	if _, err := call(with("ok"), mcp.MethodToolsCall, nil, upstream.Options{Retry: true}); err != nil {
		t.Fatalf("a retry while full: %v", err)
	}
	cancel()
	<-done
	if _, err := call(with("ok"), mcp.MethodToolsCall, nil, upstream.Options{}); err != nil {
		t.Fatalf("after the cancelled call ended: %v", err)
	}
	func() {
		defer func() { _ = recover() }()
		_, _ = call(with("panic"), mcp.MethodToolsCall, nil, upstream.Options{})
	}()
	if _, err := call(with("ok"), mcp.MethodToolsCall, nil, upstream.Options{}); err != nil {
		t.Fatalf("after every call ended: %v", err)
	}
	// 0 is no limit.
	r.set([]config.Server{{Name: "srv"}})
	if _, err := call(with("ok"), mcp.MethodToolsCall, nil, upstream.Options{}); err != nil {
		t.Fatalf("unlimited: %v", err)
	}
}

type ctxKey struct{}

// A discovery leaves out a server with max_concurrent_requests calls in
// flight, without taking a place itself.
func TestDiscoveryDegradesAFullServer(t *testing.T) {
	gate := limits.NewLocal(0)
	var r rpms
	r.set([]config.Server{{Name: "srv", MaxConcurrentRequests: 1}})
	discover := rpmDiscovery(gate, &r, slog.New(slog.DiscardHandler))
	if err := discover(context.Background(), "srv"); err != nil {
		t.Fatalf("an idle server: %v", err)
	}
	a, err := gate.Admit(context.Background(), []limits.Check{{Key: serverKey("srv"), Limit: 1}}, time.Now())
	if err != nil || !a.Allowed() {
		t.Fatalf("the discovery holds a place: %v %v", a, err)
	}
	defer a.Release()
	var f *fault.Fault
	if err := discover(context.Background(), "srv"); !errors.As(err, &f) || f.Class != fault.LimitExceeded {
		t.Fatalf("a full server: %v", err)
	}
}
