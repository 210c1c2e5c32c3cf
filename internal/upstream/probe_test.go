package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpgw/mcpgw/internal/jsonrpc"
	"github.com/mcpgw/mcpgw/internal/mcp"
)

// countingSDK serves a go-sdk server over real HTTP (stateless for the
// modern era, with sessions for the legacy one) and counts the JSON-RPC
// methods it receives; failDiscover makes server/discover answer -32603.
type countingSDK struct {
	srv *sdk.Server
	url string

	mu           sync.Mutex
	counts       map[string]int
	failDiscover bool
}

func startCountingSDK(t *testing.T, stateless bool) *countingSDK {
	t.Helper()
	c := &countingSDK{srv: sdk.NewServer(&sdk.Implementation{Name: "probe", Version: "1"}, nil), counts: map[string]int{}}
	inner := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return c.srv },
		&sdk.StreamableHTTPOptions{Stateless: stateless, JSONResponse: true})
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		_ = json.Unmarshal(body, &m)
		c.mu.Lock()
		c.counts[m.Method]++
		if r.Method == http.MethodDelete {
			c.counts[http.MethodDelete]++
		}
		fail := c.failDiscover && m.Method == mcp.MethodDiscover
		c.mu.Unlock()
		if fail {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":` + string(m.ID) + `,"error":{"code":-32603,"message":"Discovery unavailable"}}`))
			return
		}
		inner.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	c.url = ts.URL
	return c
}

func (c *countingSDK) count(method string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.counts[method]
}

// addTool gives the server a tool, so its capabilities change.
func (c *countingSDK) addTool() {
	c.srv.AddTool(&sdk.Tool{Name: "late", InputSchema: map[string]any{"type": "object"}}, func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		return &sdk.CallToolResult{}, nil
	})
}

// Discover answers what the upstream offers now: a modern upstream is asked
// server/discover each time, a legacy one gets a fresh handshake each time
// (and its session ended), while Info keeps what the conversation began
// with. A failing server/discover is the probe's failure.
func TestClientDiscoverIsLive(t *testing.T) {
	for _, tc := range []struct {
		name    string
		version string
		asked   string // the request each Discover sends
	}{
		{"modern", mcp.V20260728, mcp.MethodDiscover},
		{"legacy", mcp.V20251125, mcp.MethodInitialize},
	} {
		t.Run(tc.name, func(t *testing.T) {
			up := startCountingSDK(t, tc.name == "modern")
			c, err := New(Config{Name: "probe", URL: up.url, ProtocolVersion: tc.version, RequestTimeout: 5 * time.Second, ListTimeout: 5 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = c.Close(context.Background()) })
			ctx := context.Background()
			info, err := c.Info(ctx, Options{})
			if err != nil || info.Capabilities.HasTools() {
				t.Fatalf("Info before any tool: %+v %v", info.Capabilities, err)
			}
			up.addTool()
			before := up.count(tc.asked)
			live, err := c.Discover(ctx, Options{})
			if err != nil || !live.Capabilities.HasTools() || !live.Capabilities.ToolsListChanged() {
				t.Fatalf("Discover after a tool was added: %+v %v", live.Capabilities, err)
			}
			if n := up.count(tc.asked) - before; n != 1 {
				t.Fatalf("Discover sent %s %d times, want 1", tc.asked, n)
			}
			if cached, _ := c.Info(ctx, Options{}); cached.Capabilities.HasTools() {
				t.Fatal("Info changed: the probe must not replace the conversation's own answer")
			}
			if tc.name == "legacy" && up.count(http.MethodDelete) != 1 {
				t.Fatalf("the probe's own session was ended %d times, want 1", up.count(http.MethodDelete))
			}
		})
	}
	t.Run("legacy stdio", func(t *testing.T) {
		// The running child's handshake is the answer: no second child
		// (its binary is gone once the first runs, so one could not start).
		cfg := goFixtureStdio(mcp.V20251125)(t)
		bin, err := os.ReadFile(cfg.Command)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Command = filepath.Join(t.TempDir(), "fixture")
		if err := os.WriteFile(cfg.Command, bin, 0o700); err != nil {
			t.Fatal(err)
		}
		c, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close(context.Background()) })
		info, err := c.Info(context.Background(), Options{})
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Remove(cfg.Command); err != nil {
			t.Fatal(err)
		}
		live, err := c.Discover(context.Background(), Options{Ephemeral: true})
		if err != nil || live.Era != mcp.EraLegacy || !live.Capabilities.HasTools() || live.ServerInfo.Name != info.ServerInfo.Name {
			t.Fatalf("Discover on stdio: %+v %v", live, err)
		}
		if n := c.poolSize(); n != 1 {
			t.Fatalf("pool holds %d sessions, want the one child", n)
		}
	})
	t.Run("failure", func(t *testing.T) {
		up := startCountingSDK(t, true)
		c, err := New(Config{Name: "probe", URL: up.url, ProtocolVersion: mcp.V20260728, RequestTimeout: 5 * time.Second, ListTimeout: 5 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close(context.Background()) })
		if _, err := c.Info(context.Background(), Options{}); err != nil {
			t.Fatal(err)
		}
		up.mu.Lock()
		up.failDiscover = true
		up.mu.Unlock()
		_, err = c.Discover(context.Background(), Options{})
		var re *RPCError
		if !errors.As(err, &re) || re.Code() != jsonrpc.CodeInternalError {
			t.Fatalf("Discover against a failing server/discover: %v", err)
		}
	})
}
