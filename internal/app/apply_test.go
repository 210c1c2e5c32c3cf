package app_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpgw/mcpgw/internal/app"
	"github.com/mcpgw/mcpgw/internal/config"
	"github.com/mcpgw/mcpgw/internal/fakemcp"
	"github.com/mcpgw/mcpgw/internal/jsonrpc"
	"github.com/mcpgw/mcpgw/internal/notify"
)

// upstreamUnderTest is a legacy fake upstream behind a proxy that counts the
// DELETEs ending its sessions.
type upstreamUnderTest struct {
	fake    *fakemcp.Server
	url     string
	deletes atomic.Int64
}

func newUpstream(t *testing.T, opts fakemcp.Opts) *upstreamUnderTest {
	t.Helper()
	opts.Legacy = true
	u := &upstreamUnderTest{fake: fakemcp.New(t, opts)}
	target, _ := url.Parse(u.fake.URL())
	proxy := httputil.NewSingleHostReverseProxy(target)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodDelete {
			u.deletes.Add(1)
		}
		r.URL.Path = target.Path
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	u.url = srv.URL + "/mcp"
	return u
}

// serveApp serves a's handler on a loopback port until the test ends.
func serveApp(t *testing.T, a *app.App) string {
	t.Helper()
	srv := httptest.NewServer(a.Handler())
	a.Start()
	t.Cleanup(func() {
		a.Drain()
		srv.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = a.Close(ctx)
	})
	return srv.URL
}

// restTools lists the tools the master key sees as server/name pairs.
func restTools(t *testing.T, base string) []string {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, base+"/mcp-rest/tools/list", nil)
	req.Header.Set("Authorization", "Bearer "+testKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct {
		Tools []struct {
			Name string `json:"name"`
			Info struct {
				Server string `json:"server_name"`
			} `json:"mcp_info"`
		} `json:"tools"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil || resp.StatusCode != 200 {
		t.Fatalf("tools/list: %d %v", resp.StatusCode, err)
	}
	var out []string
	for _, tl := range body.Tools {
		out = append(out, tl.Info.Server+"/"+tl.Name)
	}
	slices.Sort(out)
	return out
}

// restCall calls server's tool and returns the HTTP status and body.
func restCall(t *testing.T, base, server, tool string) (int, string) {
	t.Helper()
	body := fmt.Sprintf(`{"server_id":%q,"name":%q,"arguments":{}}`, server, tool)
	req, _ := http.NewRequest(http.MethodPost, base+"/mcp-rest/tools/call", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+testKey)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func configOf(t *testing.T, servers string) *config.Config {
	t.Helper()
	return parse(t, minimal+"mcp_servers:\n"+servers)
}

// TestApplyKeepsUnchangedConnections: a config that changes one server's
// metadata, adds one and removes one keeps the first server's upstream
// session, serves the new server and closes the removed one's client.
func TestApplyKeepsUnchangedConnections(t *testing.T) {
	kept := newUpstream(t, fakemcp.Opts{Lists: map[string][]json.RawMessage{"tools/list": fakemcp.Tools("a", "b")}})
	gone := newUpstream(t, fakemcp.Opts{Lists: map[string][]json.RawMessage{"tools/list": fakemcp.Tools("g")}})
	added := newUpstream(t, fakemcp.Opts{Lists: map[string][]json.RawMessage{"tools/list": fakemcp.Tools("n")}})

	a, err := app.New(configOf(t, fmt.Sprintf("  kept:\n    url: %s\n    protocol_version: 2025-11-25\n    description: before\n  gone:\n    url: %s\n    protocol_version: 2025-11-25\n", kept.url, gone.url)),
		app.WithLookupEnv(noEnv))
	if err != nil {
		t.Fatal(err)
	}
	base := serveApp(t, a)
	if got, want := restTools(t, base), []string{"gone/g", "kept/a", "kept/b"}; !slices.Equal(got, want) {
		t.Fatalf("tools before = %q, want %q", got, want)
	}
	if kept.fake.Count("initialize") != 1 || gone.fake.Count("initialize") != 1 {
		t.Fatalf("initialize before: kept %d, gone %d", kept.fake.Count("initialize"), gone.fake.Count("initialize"))
	}

	next := configOf(t, fmt.Sprintf("  kept:\n    url: %s\n    protocol_version: 2025-11-25\n    description: after\n    allowed_tools: [a]\n  added:\n    url: %s\n    protocol_version: 2025-11-25\n", kept.url, added.url))
	if err := a.Apply(context.Background(), next); err != nil {
		t.Fatal(err)
	}
	if n := gone.deletes.Load(); n != 1 {
		t.Errorf("the removed server's session got %d DELETEs, want 1 (its client closed)", n)
	}
	if got, want := restTools(t, base), []string{"added/n", "kept/a"}; !slices.Equal(got, want) {
		t.Fatalf("tools after = %q, want %q", got, want)
	}
	if n := kept.fake.Count("initialize"); n != 1 {
		t.Errorf("the unchanged server was initialized %d times, want 1 (its session kept)", n)
	}
	if n := kept.deletes.Load(); n != 0 {
		t.Errorf("the unchanged server's session got %d DELETEs", n)
	}
	if n := added.fake.Count("initialize"); n != 1 {
		t.Errorf("the new server was initialized %d times, want 1", n)
	}
	if status, body := restCall(t, base, "gone", "g"); status != http.StatusNotFound {
		t.Errorf("call to the removed server = %d %s, want 404", status, body)
	}

	// A change to the connection (a static header) replaces the client.
	changed := configOf(t, fmt.Sprintf("  kept:\n    url: %s\n    protocol_version: 2025-11-25\n    static_headers:\n      X-Tenant: b\n  added:\n    url: %s\n    protocol_version: 2025-11-25\n", kept.url, added.url))
	if err := a.Apply(context.Background(), changed); err != nil {
		t.Fatal(err)
	}
	if n := kept.deletes.Load(); n != 1 {
		t.Errorf("the changed server's old session got %d DELETEs, want 1", n)
	}
	if got, want := restTools(t, base), []string{"added/n", "kept/a", "kept/b"}; !slices.Equal(got, want) {
		t.Fatalf("tools after the connection change = %q, want %q", got, want)
	}
	if n := kept.fake.Count("initialize"); n != 2 {
		t.Errorf("the changed server was initialized %d times in all, want 2", n)
	}
	if h := kept.fake.Last(t, "tools/list").Header.Get("X-Tenant"); h != "b" {
		t.Errorf("the new client sends X-Tenant %q", h)
	}
	if n := added.fake.Count("initialize"); n != 1 {
		t.Errorf("the untouched new server was initialized %d times, want 1", n)
	}
}

// TestApplyLetsRunningRequestsFinish: a call running when Apply removes its
// server finishes on the graph it started on; the client is closed after.
func TestApplyLetsRunningRequestsFinish(t *testing.T) {
	var answeredUpstream atomic.Bool
	slow := newUpstream(t, fakemcp.Opts{
		Lists: map[string][]json.RawMessage{"tools/list": fakemcp.Tools("x")},
		Handlers: map[string]fakemcp.Handler{"tools/call": func(json.RawMessage) (json.RawMessage, *jsonrpc.Error) {
			time.Sleep(300 * time.Millisecond)
			answeredUpstream.Store(true)
			return json.RawMessage(`{"content":[{"type":"text","text":"done"}]}`), nil
		}},
	})
	a, err := app.New(configOf(t, fmt.Sprintf("  slow:\n    url: %s\n    protocol_version: 2025-11-25\n", slow.url)), app.WithLookupEnv(noEnv))
	if err != nil {
		t.Fatal(err)
	}
	base := serveApp(t, a)
	type answer struct {
		status int
		body   string
	}
	answered := make(chan answer, 1)
	go func() {
		s, b := restCall(t, base, "slow", "x")
		answered <- answer{s, b}
	}()
	for deadline := time.Now().Add(5 * time.Second); slow.fake.Count("tools/call") == 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the call did not reach the upstream")
		}
	}
	if err := a.Apply(context.Background(), configOf(t, "  other:\n    url: http://127.0.0.1:1/mcp\n")); err != nil {
		t.Fatal(err)
	}
	// Apply waited for the request: the upstream had answered it (the
	// caller reads the answer a moment later, on its own goroutine).
	if !answeredUpstream.Load() {
		t.Error("Apply returned before the running call on the old graph finished")
	}
	select {
	case got := <-answered:
		if got.status != 200 || !strings.Contains(got.body, "done") {
			t.Errorf("the running call = %d %s", got.status, got.body)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the running call was never answered")
	}
	if n := slow.deletes.Load(); n != 1 {
		t.Errorf("the removed server's session got %d DELETEs, want 1", n)
	}
}

// TestApplyRefusesABadConfig: a config the gateway cannot run leaves the
// running one in place.
func TestApplyRefusesABadConfig(t *testing.T) {
	up := newUpstream(t, fakemcp.Opts{Lists: map[string][]json.RawMessage{"tools/list": fakemcp.Tools("a")}})
	a, err := app.New(configOf(t, fmt.Sprintf("  s:\n    url: %s\n    protocol_version: 2025-11-25\n", up.url)), app.WithLookupEnv(noEnv))
	if err != nil {
		t.Fatal(err)
	}
	base := serveApp(t, a)
	bad := parse(t, "general_settings:\n  master_key: sk-short\nmcp_servers:\n  t:\n    url: http://127.0.0.1:1/mcp\n")
	if err := a.Apply(context.Background(), bad); err == nil || !strings.Contains(err.Error(), "master_key") {
		t.Fatalf("Apply = %v, want the master key refused", err)
	}
	if got := restTools(t, base); !slices.Equal(got, []string{"s/a"}) {
		t.Errorf("tools after a refused apply = %q", got)
	}
	if n := up.deletes.Load(); n != 0 {
		t.Errorf("the running server's session got %d DELETEs", n)
	}
	if err := a.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := a.Apply(context.Background(), configOf(t, "")); err == nil {
		t.Error("Apply after Close succeeded")
	}
}

// countingHub is an in-process hub that counts its live subscriptions.
type countingHub struct {
	*notify.Memory
	live atomic.Int64
}

func (h *countingHub) Subscribe(f func(notify.Event)) func() {
	h.live.Add(1)
	cancel := h.Memory.Subscribe(f)
	var once sync.Once
	return func() { once.Do(func() { h.live.Add(-1); cancel() }) }
}

// TestOneHubSubscriptionPerRunningGraph: the catalog and gateway of the
// running graph follow the hub; a replaced graph stops following it.
func TestOneHubSubscriptionPerRunningGraph(t *testing.T) {
	hub := &countingHub{Memory: notify.NewMemory()}
	a, err := app.New(configOf(t, "  s:\n    url: http://127.0.0.1:1/mcp\n"), app.WithLookupEnv(noEnv), app.WithHub(hub))
	if err != nil {
		t.Fatal(err)
	}
	if n := hub.live.Load(); n != 1 {
		t.Fatalf("after New: %d subscriptions, want 1", n)
	}
	for i := range 3 {
		if err := a.Apply(context.Background(), configOf(t, fmt.Sprintf("  s%d:\n    url: http://127.0.0.1:1/mcp\n", i))); err != nil {
			t.Fatal(err)
		}
		if n := hub.live.Load(); n != 1 {
			t.Fatalf("after Apply %d: %d subscriptions, want 1", i, n)
		}
	}
	// Publishing reaches the running graph without a client in between.
	hub.Publish(notify.Event{Server: "s2", Method: "notifications/tools/list_changed"})
	if err := a.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := hub.live.Load(); n != 0 {
		t.Fatalf("after Close: %d subscriptions, want 0", n)
	}
}
