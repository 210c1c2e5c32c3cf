package app

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpgw/mcpgw/internal/config"
	"github.com/mcpgw/mcpgw/internal/fault"
	"github.com/mcpgw/mcpgw/internal/limits"
	"github.com/mcpgw/mcpgw/internal/mcp"
	"github.com/mcpgw/mcpgw/internal/upstream"
)

// rpmOf is a cell holding n.
func rpmOf(n int) *atomic.Int64 {
	c := new(atomic.Int64)
	c.Store(int64(n))
	return c
}

// rpmLimit is serverLimits with rpm alone.
func rpmLimit(gate limits.Gate, server string, rpm *atomic.Int64, log *slog.Logger) upstream.Middleware {
	return serverLimits(gate, server, rpm, new(atomic.Int64), log)
}

// sent counts what reaches the end of a middleware chain.
type sent map[string]int

func (s sent) end(_ context.Context, method string, _ json.RawMessage, _ upstream.Options) (upstream.Result, error) {
	s[method]++
	return upstream.Result{Raw: json.RawMessage(`{}`)}, nil
}

// A server's rpm refuses the calls callers make once reached, and never a
// list page or the client's other requests.
func TestRPMLimitsCallsOnly(t *testing.T) {
	for _, method := range []string{mcp.MethodToolsCall, mcp.MethodPromptsGet, mcp.MethodResourcesRead, mcp.MethodCompletionComplete} {
		t.Run(method, func(t *testing.T) {
			s := sent{}
			call := rpmLimit(limits.NewLocal(0), "srv", rpmOf(2), slog.New(slog.DiscardHandler))(s.end)
			ctx := context.Background()
			for i := range 2 {
				if _, err := call(ctx, method, nil, upstream.Options{}); err != nil {
					t.Fatalf("call %d: %v", i+1, err)
				}
			}
			_, err := call(ctx, method, nil, upstream.Options{})
			var f *fault.Fault
			if !errors.As(err, &f) || f.Class != fault.LimitExceeded || f.RetryAfter <= 0 || f.RetryAfter > time.Minute {
				t.Fatalf("third call: %v (%+v), want limit_exceeded with a RetryAfter within a minute", err, f)
			}
			if f.Message != "upstream srv: request limit reached (2 per minute)" {
				t.Fatalf("message %q", f.Message)
			}
			for _, other := range []string{mcp.MethodToolsList, mcp.MethodPromptsList, mcp.MethodResourcesList, mcp.MethodResourcesTemplatesList,
				mcp.MethodResourcesSubscribe, mcp.MethodLoggingSetLevel, mcp.MethodPing} {
				if _, err := call(ctx, other, nil, upstream.Options{}); err != nil {
					t.Fatalf("%s refused after the limit: %v", other, err)
				}
			}
			if s[method] != 2 {
				t.Fatalf("%d %s reached the upstream, want 2", s[method], method)
			}
		})
	}
}

// failing is a Gate that cannot decide.
type failing struct{}

func (failing) Admit(context.Context, []limits.Check, time.Time) (*limits.Admission, error) {
	return nil, errors.New("store unreachable")
}

// When the counter cannot decide, the call goes ahead.
func TestRPMLimitFailsOpen(t *testing.T) {
	s := sent{}
	call := rpmLimit(failing{}, "srv", rpmOf(1), slog.New(slog.DiscardHandler))(s.end)
	for range 3 {
		if _, err := call(context.Background(), mcp.MethodToolsCall, nil, upstream.Options{}); err != nil {
			t.Fatal(err)
		}
	}
	if s[mcp.MethodToolsCall] != 3 {
		t.Fatalf("%d calls sent, want 3", s[mcp.MethodToolsCall])
	}
}

// The middleware reads the server's rpm on every call: 0 lets every call
// through, and a new value holds from the next call, on the same chain.
func TestRPMIsReadPerCall(t *testing.T) {
	s := sent{}
	rpm := rpmOf(0)
	call := rpmLimit(limits.NewLocal(0), "srv", rpm, slog.New(slog.DiscardHandler))(s.end)
	ctx := context.Background()
	for i := range 5 {
		if _, err := call(ctx, mcp.MethodToolsCall, nil, upstream.Options{}); err != nil {
			t.Fatalf("unlimited call %d: %v", i+1, err)
		}
	}
	rpm.Store(1)
	if _, err := call(ctx, mcp.MethodToolsCall, nil, upstream.Options{}); err != nil {
		t.Fatalf("first call at rpm 1: %v", err)
	}
	_, err := call(ctx, mcp.MethodToolsCall, nil, upstream.Options{})
	var f *fault.Fault
	if !errors.As(err, &f) || f.Message != "upstream srv: request limit reached (1 per minute)" {
		t.Fatalf("second call at rpm 1: %v, want the limit with its current value", err)
	}
	if s[mcp.MethodToolsCall] != 6 {
		t.Fatalf("%d calls sent, want 6", s[mcp.MethodToolsCall])
	}
}

// rpms keeps one cell per configured server: a server's cell survives a new
// config (its clients keep reading it) and a removed server's is forgotten.
func TestRPMsFollowTheConfig(t *testing.T) {
	var r rpms
	a := r.of("a")
	r.set([]config.Server{{Name: "a", RPM: 5}, {Name: "b"}})
	if a.Load() != 5 || r.of("b").Load() != 0 {
		t.Fatalf("after set: a %d, b %d", a.Load(), r.of("b").Load())
	}
	r.set([]config.Server{{Name: "a", RPM: 7}})
	if r.of("a") != a || a.Load() != 7 {
		t.Fatalf("a's cell replaced or not updated: %d", a.Load())
	}
	if len(r.m) != 1 {
		t.Fatalf("%d cells after b was removed, want 1", len(r.m))
	}
	r.maxOf("b")
	r.set([]config.Server{{Name: "a", MaxConcurrentRequests: 3}})
	if len(r.max) != 1 || r.maxOf("a").Load() != 3 {
		t.Fatalf("max_concurrent_requests cells %d, a %d; want 1 and 3", len(r.max), r.maxOf("a").Load())
	}
}

// Every server's client carries the rpm middleware, reading the server's
// cell in the App's rpms, so an rpm set later needs no new client.
func TestClientConfigReadsTheServersRPM(t *testing.T) {
	s := &shared{log: slog.New(slog.DiscardHandler), gate: newSharedGate(nil, "", limits.RedisOptions{}), rpms: &rpms{}}
	uc := s.clientConfig(config.Server{Name: "srv", URL: "http://127.0.0.1:1/mcp"})
	if len(uc.Middleware) != 1 {
		t.Fatalf("%d middleware, want 1 (the server's limits)", len(uc.Middleware))
	}
	sn := sent{}
	call := uc.Middleware[0](sn.end)
	ctx := context.Background()
	for range 3 {
		if _, err := call(ctx, mcp.MethodToolsCall, nil, upstream.Options{}); err != nil {
			t.Fatalf("unlimited: %v", err)
		}
	}
	s.rpms.set([]config.Server{{Name: "srv", RPM: 1}})
	if _, err := call(ctx, mcp.MethodToolsCall, nil, upstream.Options{}); err != nil {
		t.Fatalf("first at rpm 1: %v", err)
	}
	if _, err := call(ctx, mcp.MethodToolsCall, nil, upstream.Options{}); err == nil {
		t.Fatal("second at rpm 1 went through")
	}
}

// A retry of an operation already counted (an answered input round, a
// resumed continuation) is sent even at the limit, and not counted.
func TestRPMCountsAnOperationOnce(t *testing.T) {
	s := sent{}
	call := rpmLimit(limits.NewLocal(0), "srv", rpmOf(1), slog.New(slog.DiscardHandler))(s.end)
	ctx := context.Background()
	if _, err := call(ctx, mcp.MethodToolsCall, nil, upstream.Options{}); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := call(ctx, mcp.MethodToolsCall, nil, upstream.Options{Retry: true}); err != nil {
			t.Fatalf("retry at the limit: %v", err)
		}
	}
	if _, err := call(ctx, mcp.MethodToolsCall, nil, upstream.Options{}); err == nil {
		t.Fatal("a new operation went through at the limit")
	}
	if s[mcp.MethodToolsCall] != 4 {
		t.Fatalf("%d sent, want 4", s[mcp.MethodToolsCall])
	}
}

// A discovery counts once against a server's rpm, in the same window as its
// calls; over the limit it gets the limit's fault, and a server without rpm
// is never counted.
func TestRPMCountsDiscovery(t *testing.T) {
	var r rpms
	r.set([]config.Server{{Name: "srv", RPM: 2}, {Name: "free"}})
	counter := limits.NewLocal(0)
	log := slog.New(slog.DiscardHandler)
	discover := rpmDiscovery(counter, &r, log)
	s := sent{}
	call := rpmLimit(counter, "srv", r.of("srv"), log)(s.end)
	ctx := context.Background()
	if err := discover(ctx, "srv"); err != nil {
		t.Fatalf("first discovery: %v", err)
	}
	if _, err := call(ctx, mcp.MethodToolsCall, nil, upstream.Options{}); err != nil {
		t.Fatalf("call within the limit: %v", err)
	}
	var f *fault.Fault
	if err := discover(ctx, "srv"); !errors.As(err, &f) || f.Class != fault.LimitExceeded {
		t.Fatalf("discovery over the limit: %v", err)
	}
	for range 5 {
		if err := discover(ctx, "free"); err != nil {
			t.Fatalf("a server without rpm: %v", err)
		}
	}
}
