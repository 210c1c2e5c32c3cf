package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/mcpgw/mcpgw/internal/jsonrpc"
)

// observed is one request as a middleware saw it pass.
type observed struct {
	method, params, result string
	err                    error
}

// recorder is a middleware that records what passes through it, in order,
// under its name.
type recorder struct {
	name  string
	mu    sync.Mutex
	order *[]string
	seen  []observed
}

func (r *recorder) mw(next CallFunc) CallFunc {
	return func(ctx context.Context, method string, params json.RawMessage, opts Options) (Result, error) {
		r.mu.Lock()
		*r.order = append(*r.order, r.name+">")
		r.mu.Unlock()
		res, err := next(ctx, method, params, opts)
		r.mu.Lock()
		*r.order = append(*r.order, "<"+r.name)
		r.seen = append(r.seen, observed{method, string(params), string(res.Raw), err})
		r.mu.Unlock()
		return res, err
	}
}

func (r *recorder) methods() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, o := range r.seen {
		out = append(out, o.method)
	}
	return out
}

// toolServer answers tools/call "ok" with a result, any other tool with a
// JSON-RPC error, and tools/list with two pages.
func toolServer(t *testing.T) *fakeUpstream {
	return legacyServer(t, "2025-11-25", func(w http.ResponseWriter, r *http.Request, m *jsonrpc.Message) {
		switch m.Method {
		case "tools/call":
			if name, _ := jsonrpc.StringMember(m.Params, "name"); name == "ok" {
				writeJSON(w, 200, jsonrpc.EncodeResult(m.ID, json.RawMessage(`{"content":[]}`)))
				return
			}
			writeJSON(w, 200, jsonrpc.EncodeError(m.ID, &jsonrpc.Error{Code: -32602, Message: "no such tool"}))
		case "tools/list":
			if strings.Contains(string(m.Params), `"cursor"`) {
				writeJSON(w, 200, toolsPage(m.ID, "b"))
				return
			}
			writeJSON(w, 200, jsonrpc.EncodeResult(m.ID, json.RawMessage(`{"tools":[{"name":"a","inputSchema":{"type":"object"}}],"nextCursor":"2"}`)))
		default:
			writeJSON(w, 200, jsonrpc.EncodeError(m.ID, &jsonrpc.Error{Code: -32601, Message: "nope"}))
		}
	})
}

func TestMiddlewareObservesCallsInOrder(t *testing.T) {
	var order []string
	outer, inner := &recorder{name: "outer", order: &order}, &recorder{name: "inner", order: &order}
	f := toolServer(t)
	c := newClient(t, Config{Name: "up", URL: f.url(), ProtocolVersion: "2025-11-25", Middleware: []Middleware{outer.mw, inner.mw}})
	ctx := context.Background()

	if _, err := c.CallTool(ctx, "ok", json.RawMessage(`{"x":1}`), Options{}); err != nil {
		t.Fatal(err)
	}
	_, callErr := c.CallTool(ctx, "missing", nil, Options{})
	if re := rpcErr(callErr); re == nil || re.Code() != -32602 {
		t.Fatalf("err = %v, want the upstream's -32602", callErr)
	}
	if want := []string{"outer>", "inner>", "<inner", "<outer", "outer>", "inner>", "<inner", "<outer"}; !slices.Equal(order, want) {
		t.Fatalf("order = %v, want %v", order, want)
	}
	for _, r := range []*recorder{outer, inner} {
		if len(r.seen) != 2 {
			t.Fatalf("%s saw %d calls, want 2", r.name, len(r.seen))
		}
		ok, bad := r.seen[0], r.seen[1]
		if ok.method != "tools/call" || ok.params != `{"name":"ok","arguments":{"x":1}}` || ok.result != `{"content":[]}` || ok.err != nil {
			t.Errorf("%s saw %+v for the answered call", r.name, ok)
		}
		if bad.method != "tools/call" || bad.params != `{"name":"missing"}` || bad.result != "" || bad.err != callErr {
			t.Errorf("%s saw %+v for the refused call, want the caller's error %v", r.name, bad, callErr)
		}
	}
}

func TestMiddlewareShortCircuitIsClassified(t *testing.T) {
	for _, tc := range []struct {
		name      string
		err       error
		fault     Fault
		status    int
		logReason string
	}{
		{"rate limited", &StatusError{Status: http.StatusTooManyRequests}, FaultUpstreamError, 429, "upstream answered HTTP 429 Too Many Requests"},
		{"pool full", &PoolFullError{}, FaultUpstreamError, 503, "too many upstream sessions in use; retry later"},
		{"forbidden", &StatusError{Status: http.StatusForbidden}, FaultForbidden, 403, "upstream refused access (HTTP 403)"},
		{"guardrail", errors.New("refused by a guardrail"), FaultInternal, 500, "internal error"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := toolServer(t)
			var logs logBuffer
			refuse := func(next CallFunc) CallFunc {
				return func(ctx context.Context, method string, params json.RawMessage, opts Options) (Result, error) {
					if method == "tools/call" {
						return Result{}, tc.err
					}
					return next(ctx, method, params, opts)
				}
			}
			c := newClient(t, Config{Name: "up", URL: f.url(), ProtocolVersion: "2025-11-25", Logger: logs.logger(), Middleware: []Middleware{refuse}})
			_, err := c.CallTool(context.Background(), "ok", nil, Options{LogErrors: true})
			if !errors.Is(err, tc.err) {
				t.Fatalf("err = %v, want the middleware's %v", err, tc.err)
			}
			if cl := Classify(err); cl.Fault != tc.fault || cl.HTTPStatus != tc.status {
				t.Fatalf("classified %+v, want %s %d", cl, tc.fault, tc.status)
			}
			for _, s := range f.requests() {
				if s.Method == "tools/call" {
					t.Fatal("a short-circuited call reached the upstream")
				}
			}
			lines := logs.lines("ERROR", "tools/call failed")
			if len(lines) != 1 || !strings.Contains(lines[0], `"fault":"`+string(tc.fault)+`"`) || !strings.Contains(lines[0], tc.logReason) {
				t.Fatalf("failure log = %v", lines)
			}
			// Requests it lets through still reach the upstream.
			if _, err := c.ListTools(context.Background(), Options{}); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestMiddlewareSeesListPagesNotInfo(t *testing.T) {
	for _, ephemeral := range []bool{false, true} {
		var order []string
		r := &recorder{name: "r", order: &order}
		f := toolServer(t)
		c := newClient(t, Config{Name: "up", URL: f.url(), ProtocolVersion: "2025-11-25", Middleware: []Middleware{r.mw}})
		ctx := context.Background()
		if _, err := c.Info(ctx, Options{Ephemeral: ephemeral}); err != nil {
			t.Fatal(err)
		}
		tools, err := c.ListTools(ctx, Options{Ephemeral: ephemeral})
		if err != nil || len(tools) != 2 {
			t.Fatalf("ephemeral=%v: %d tools, %v", ephemeral, len(tools), err)
		}
		if got := r.methods(); !slices.Equal(got, []string{"tools/list", "tools/list"}) {
			t.Fatalf("ephemeral=%v: middleware saw %v, want one tools/list per page and nothing for Info", ephemeral, got)
		}
		if r.seen[1].params != `{"cursor":"2"}` {
			t.Fatalf("second page params = %s", r.seen[1].params)
		}
	}
}

func TestChainWithoutMiddlewareIsNil(t *testing.T) {
	end := func(context.Context, string, json.RawMessage, Options) (Result, error) { return Result{}, nil }
	if chain(nil, end) != nil || chain([]Middleware{}, end) != nil {
		t.Fatal("an empty chain must leave Call on its direct path")
	}
}
