package catalog

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/mcpgw/mcpgw/internal/fakemcp"
	"github.com/mcpgw/mcpgw/internal/jsonrpc"
	"github.com/mcpgw/mcpgw/internal/later"
	"github.com/mcpgw/mcpgw/internal/mcp"
	"github.com/mcpgw/mcpgw/internal/upstream"
)

// A listing a request makes on the side (to check a name) is cached, not
// answered: its share of the byte budget is given back at once, not held
// until the request's answer is written. Held, it would leave the request's
// own answer waiting for budget it holds itself, until its deadline.
func TestListingIsNotHeldUntilTheAnswerIsWritten(t *testing.T) {
	pad := strings.Repeat("p", 40<<10)
	up := fakemcp.New(t, fakemcp.Opts{Legacy: true, Handlers: map[string]fakemcp.Handler{
		mcp.MethodToolsList: func(json.RawMessage) (json.RawMessage, *jsonrpc.Error) {
			return json.RawMessage(`{"tools":[{"name":"x","description":"` + pad + `","inputSchema":{"type":"object"}}]}`), nil
		},
		mcp.MethodToolsCall: func(json.RawMessage) (json.RawMessage, *jsonrpc.Error) {
			return json.RawMessage(`{"content":[{"type":"text","text":"` + pad + `"}]}`), nil
		},
	}})
	budget := upstream.NewByteBudget(64 << 10) // room for one of the two answers at a time
	cat := newTestCatalog(t, Config{}, upSpec{name: "s", fake: up, tweak: func(c *upstream.Config) {
		c.AnswerBudget = budget
		c.RequestTimeout = 2 * time.Second
	}})
	client := cat.servers["s"].Client
	ctx, written := later.With(context.Background())
	defer written()
	if _, fail := cat.List(ctx, Query{Servers: []string{"s"}, Prefixed: true, Binding: "b"}, mcp.MethodToolsList, ""); fail != nil {
		t.Fatalf("list: %v", answer(fail).Err)
	}
	start := time.Now()
	if _, err := client.Call(ctx, mcp.MethodToolsCall, json.RawMessage(`{"name":"x","arguments":{}}`), upstream.Options{}); err != nil {
		t.Fatalf("the call after a listing in the same request: %v (after %v)", err, time.Since(start))
	}
}
