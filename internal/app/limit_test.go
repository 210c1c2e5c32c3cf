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
			call := rpmLimit(limits.NewMemory(0), "srv", 2, slog.New(slog.DiscardHandler))(s.end)
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

// failing is a Counter that cannot decide.
type failing struct{}

func (failing) Take(context.Context, string, int, time.Duration, time.Time) (limits.Decision, error) {
	return limits.Decision{}, errors.New("store unreachable")
}

// When the counter cannot decide, the call goes ahead.
func TestRPMLimitFailsOpen(t *testing.T) {
	s := sent{}
	call := rpmLimit(failing{}, "srv", 1, slog.New(slog.DiscardHandler))(s.end)
	for range 3 {
		if _, err := call(context.Background(), mcp.MethodToolsCall, nil, upstream.Options{}); err != nil {
			t.Fatal(err)
		}
	}
	if s[mcp.MethodToolsCall] != 3 {
		t.Fatalf("%d calls sent, want 3", s[mcp.MethodToolsCall])
	}
}

// Only a server with an rpm gets the middleware: the others call directly.
func TestClientConfigInstallsRPMOnlyWhenSet(t *testing.T) {
	s := &shared{log: slog.New(slog.DiscardHandler), counter: limits.NewMemory(0)}
	for _, tc := range []struct {
		rpm, want int
	}{{0, 0}, {5, 1}} {
		uc := s.clientConfig(config.Server{Name: "srv", URL: "http://127.0.0.1:1/mcp", RPM: tc.rpm})
		if len(uc.Middleware) != tc.want {
			t.Errorf("rpm %d: %d middleware, want %d", tc.rpm, len(uc.Middleware), tc.want)
		}
	}
}
