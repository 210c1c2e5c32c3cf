package gateway

import (
	"context"
	"encoding/json"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpgw/mcpgw/internal/fakemcp"
	"github.com/mcpgw/mcpgw/internal/fault"
	"github.com/mcpgw/mcpgw/internal/identity"
	"github.com/mcpgw/mcpgw/internal/jsonrpc"
	"github.com/mcpgw/mcpgw/internal/mcp"
)

// AdmitCall sees each tools/call routed and allowed, with its caller and
// server, before it is sent: a refusal never reaches the upstream, a call
// refused for another reason (an unknown tool) is never admitted, other
// methods are not admitted, and the release runs once the call returns,
// also when the caller gave up on it.
func TestAdmitCall(t *testing.T) {
	up := fakemcp.New(t, fakemcp.Opts{
		Lists: map[string][]json.RawMessage{mcp.MethodToolsList: fakemcp.Tools("t")},
		Handlers: map[string]fakemcp.Handler{mcp.MethodToolsCall: func(json.RawMessage) (json.RawMessage, *jsonrpc.Error) {
			return json.RawMessage(`{"content":[]}`), nil
		}},
	})
	var admitted, released atomic.Int64
	var refuse atomic.Bool
	var seen atomic.Value
	admit := func(ctx context.Context, caller *identity.Caller, server string) (context.Context, func(), *fault.Fault) {
		seen.Store(caller.KeyHash + "@" + server)
		if refuse.Load() {
			return nil, nil, &fault.Fault{Class: fault.LimitExceeded, Message: "limit reached", RetryAfter: time.Second}
		}
		admitted.Add(1)
		return ctx, func() { released.Add(1) }, nil
	}
	g := newTestGateway(t, Config{AdmitCall: admit}, upSpec{name: "s", fake: up})
	caller := &identity.Caller{KeyHash: "ka"}
	call := Operation{Method: mcp.MethodToolsCall, Params: json.RawMessage(`{"name":"s-t","arguments":{}}`), Surface: fault.Modern, Caller: caller}

	if out := do(t, g, call); out.Fault != nil {
		t.Fatalf("admitted call: %+v", out.Fault)
	}
	if admitted.Load() != 1 || released.Load() != 1 || seen.Load() != "ka@s" {
		t.Fatalf("admitted %d released %d seen %v", admitted.Load(), released.Load(), seen.Load())
	}

	refuse.Store(true)
	before := up.Count(mcp.MethodToolsCall)
	out := do(t, g, call)
	if out.Status != http.StatusTooManyRequests || up.Count(mcp.MethodToolsCall) != before {
		t.Fatalf("refused call: %d, %d reached the upstream", out.Status, up.Count(mcp.MethodToolsCall)-before)
	}
	refuse.Store(false)

	unknown := call
	unknown.Params = json.RawMessage(`{"name":"s-nope","arguments":{}}`)
	do(t, g, unknown)
	do(t, g, Operation{Method: mcp.MethodToolsList, Surface: fault.Modern, Caller: caller})
	if admitted.Load() != 1 {
		t.Fatalf("%d admitted, want only the first call", admitted.Load())
	}

	// A call its caller abandons is released when it returns.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	g.Do(ctx, call)
	if admitted.Load() != 2 || admitted.Load() != released.Load() {
		t.Fatalf("admitted %d, released %d", admitted.Load(), released.Load())
	}
}
