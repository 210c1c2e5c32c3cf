package gateway

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/mcpgw/mcpgw/internal/allocstest"
	"github.com/mcpgw/mcpgw/internal/fakemcp"
	"github.com/mcpgw/mcpgw/internal/fault"
	"github.com/mcpgw/mcpgw/internal/identity"
	"github.com/mcpgw/mcpgw/internal/jsonrpc"
	"github.com/mcpgw/mcpgw/internal/mcp"
)

// Middleware sees every operation and its outcome, in order (the first
// configured is outermost), and may refuse with a fault without the
// operation reaching an upstream.
func TestMiddlewareSeesAndMayRefuse(t *testing.T) {
	up := fakemcp.New(t, fakemcp.Opts{Lists: map[string][]json.RawMessage{mcp.MethodToolsList: fakemcp.Tools("t")},
		Handlers: map[string]fakemcp.Handler{mcp.MethodToolsCall: echo("s")}})
	var trace []string
	record := func(name string) Middleware {
		return func(next Handler) Handler {
			return func(ctx context.Context, op Operation) Outcome {
				trace = append(trace, name+" in "+op.Method)
				out := next(ctx, op)
				kind := "complete"
				if out.Fault != nil && out.Fault.Class == fault.Forbidden {
					kind = "forbidden"
				} else if out.Fault != nil {
					kind = "another fault"
				}
				trace = append(trace, name+" out "+kind)
				return out
			}
		}
	}
	guard := func(next Handler) Handler {
		return func(ctx context.Context, op Operation) Outcome {
			if name, _ := jsonrpc.StringMember(op.Params, "name"); name == "s-t" && op.Caller != master {
				return Failed(fault.New(fault.Forbidden, "refused by a guardrail"))
			}
			return next(ctx, op)
		}
	}
	g := newTestGateway(t, Config{Middleware: []Middleware{record("outer"), record("inner"), guard}}, upSpec{name: "s", fake: up})

	call := Operation{Method: mcp.MethodToolsCall, Params: json.RawMessage(`{"name":"s-t","arguments":{}}`), Surface: fault.Modern}
	echoed(t, do(t, g, call), "s")
	if got := strings.Join(trace, "; "); got != "outer in tools/call; inner in tools/call; inner out complete; outer out complete" {
		t.Fatalf("trace = %s", got)
	}

	trace = nil
	call.Caller = &identity.Caller{KeyHash: "ka", UserID: "alice"}
	before := up.Count(mcp.MethodToolsCall)
	out := do(t, g, call)
	wantError(t, out, jsonrpc.CodeInternalError, http.StatusForbidden)
	if out.Err.Message != "refused by a guardrail" || up.Count(mcp.MethodToolsCall) != before {
		t.Fatalf("refusal %q reached the upstream: %d calls", out.Err.Message, up.Count(mcp.MethodToolsCall)-before)
	}
	if got := strings.Join(trace, "; "); got != "outer in tools/call; inner in tools/call; inner out forbidden; outer out forbidden" {
		t.Fatalf("trace = %s", got)
	}
}

// Without middleware Do costs no allocation of its own.
func TestDoWithoutMiddlewareAllocatesNothingExtra(t *testing.T) {
	g := New(Config{})
	if g.handle == nil {
		t.Fatal("no handler composed")
	}
	op := Operation{Method: "no/such", Caller: master}
	direct := allocstest.Least(100, func() { _ = g.do(context.Background(), op) })
	via := allocstest.Least(100, func() { _ = g.Do(context.Background(), op) })
	if via != direct {
		t.Fatalf("Do allocates %v, do %v", via, direct)
	}
}
