package app_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpgw/mcpgw/internal/app"
)

// probedPeer is a go-sdk v1.8.0 server over streamable HTTP on a fixed
// loopback address that can be stopped and started again.
type probedPeer struct {
	t    *testing.T
	addr string
	mu   sync.Mutex
	srv  *http.Server
	sdk  *sdk.Server
}

func newProbedPeer(t *testing.T) *probedPeer {
	t.Helper()
	u := &probedPeer{t: t}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	u.addr = l.Addr().String()
	u.serve(l)
	t.Cleanup(u.stop)
	return u
}

func (u *probedPeer) url() string { return "http://" + u.addr + "/mcp" }

func (u *probedPeer) serve(l net.Listener) {
	s := sdk.NewServer(&sdk.Implementation{Name: "health-peer", Version: "1"}, nil)
	sdk.AddTool(s, &sdk.Tool{Name: "echo"}, func(context.Context, *sdk.CallToolRequest, struct{}) (*sdk.CallToolResult, any, error) {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "ok"}}}, nil, nil
	})
	srv := &http.Server{Handler: sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s }, nil)}
	u.mu.Lock()
	u.srv, u.sdk = srv, s
	u.mu.Unlock()
	go func() { _ = srv.Serve(l) }()
}

// stop closes the listener and every connection.
func (u *probedPeer) stop() {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.srv != nil {
		_ = u.srv.Close()
		for ss := range u.sdk.Sessions() { // a stopped process forgets its sessions
			_ = ss.Close()
		}
		u.srv, u.sdk = nil, nil
	}
}

// start listens on the same address again (a restarted server).
func (u *probedPeer) start() {
	u.t.Helper()
	var l net.Listener
	var err error
	for range 50 {
		if l, err = net.Listen("tcp", u.addr); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		u.t.Fatal(err)
	}
	u.serve(l)
}

// hangingUpstream accepts every request over real HTTP and never answers
// until the test ends.
func hangingUpstream(t *testing.T) string {
	t.Helper()
	done := make(chan struct{})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-done:
		}
	})}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { close(done); _ = srv.Close() })
	return "http://" + l.Addr().String() + "/mcp"
}

// healthEntry is one server of GET /v1/mcp/server/health.
type healthEntry struct {
	ServerID         string  `json:"server_id"`
	Status           string  `json:"status"`
	LastHealthCheck  *string `json:"last_health_check"`
	HealthCheckError *string `json:"health_check_error"`
}

// readinessServers returns /health/readiness's mcp_servers.
func readinessServers(t *testing.T, h http.Handler) map[string]string {
	t.Helper()
	_, body := readiness(t, h)
	var r struct {
		Servers map[string]string `json:"mcp_servers"`
	}
	if err := json.Unmarshal([]byte(body), &r); err != nil {
		t.Fatalf("readiness body %q: %v", body, err)
	}
	return r.Servers
}

// waitStatus polls readiness until server has status want.
func waitStatus(t *testing.T, h http.Handler, server, want string, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	var got map[string]string
	for time.Now().Before(deadline) {
		if got = readinessServers(t, h); got[server] == want {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("server %s: status %q after %s, want %q (all: %v)", server, got[server], within, want, got)
}

// A real go-sdk upstream is healthy while it runs, unhealthy once stopped
// (with a classified error, never a body) and healthy again once back; the
// background checks find each change within a few intervals.
func TestProberFollowsAnUpstreamDownAndBack(t *testing.T) {
	up := newProbedPeer(t)
	cfg := parse(t, minimal+"  mcp_health_check_interval: 0.1\n  mcp_health_check_timeout: 1\nmcp_servers:\n  peer:\n    url: "+up.url()+"\n")
	a, err := app.New(cfg, app.WithLookupEnv(noEnv))
	if err != nil {
		t.Fatal(err)
	}
	h := a.Handler()
	if got := readinessServers(t, h)["peer"]; got != "unknown" {
		t.Fatalf("before Start: %q, want unknown (nothing checked yet)", got)
	}
	base := serveApp(t, a)
	waitStatus(t, h, "peer", "healthy", 5*time.Second)

	up.stop()
	waitStatus(t, h, "peer", "unhealthy", 5*time.Second)
	entries := serverHealth(t, base, "")
	if len(entries) != 1 || entries[0].Status != "unhealthy" || entries[0].HealthCheckError == nil ||
		!strings.HasPrefix(*entries[0].HealthCheckError, "unreachable") || entries[0].LastHealthCheck == nil {
		t.Fatalf("server health while down: %+v", entries)
	}

	up.start()
	waitStatus(t, h, "peer", "healthy", 5*time.Second)
	entries = serverHealth(t, base, "")
	if len(entries) != 1 || entries[0].Status != "healthy" || entries[0].HealthCheckError != nil {
		t.Fatalf("server health once back: %+v", entries)
	}
}

// Servers that never answer do not hold the others' checks back: the
// healthy one is reported healthy within a fraction of the hung one's
// timeout, and the hung one turns unhealthy with a timeout once its own
// check gives up.
func TestProberHungServerDoesNotDelayOthers(t *testing.T) {
	up := newProbedPeer(t)
	hung := hangingUpstream(t)
	cfg := parse(t, minimal+"  mcp_health_check_interval: 0.2\n  mcp_health_check_timeout: 3\nmcp_servers:\n"+
		"  hung:\n    url: "+hung+"\n  hung2:\n    url: "+hung+"\n  hung3:\n    url: "+hung+"\n  peer:\n    url: "+up.url()+"\n")
	a, err := app.New(cfg, app.WithLookupEnv(noEnv))
	if err != nil {
		t.Fatal(err)
	}
	h := a.Handler()
	start := time.Now()
	serveApp(t, a)
	waitStatus(t, h, "peer", "healthy", 2*time.Second)
	if took := time.Since(start); took > 2*time.Second {
		t.Fatalf("the healthy server took %s to be reported", took)
	}
	if got := readinessServers(t, h)["hung"]; got != "unknown" {
		t.Fatalf("hung server before its timeout: %q, want unknown", got)
	}
	waitStatus(t, h, "hung", "unhealthy", 6*time.Second)
	code, _ := readiness(t, h)
	if code != http.StatusOK {
		t.Fatalf("readiness with one upstream down: %d, want 200", code)
	}
}

// Apply moves the prober to the new config: a server added is checked, a
// removed one is forgotten.
func TestProberFollowsApply(t *testing.T) {
	up := newProbedPeer(t)
	a, err := app.New(parse(t, minimal+"  mcp_health_check_interval: 0.1\nmcp_servers:\n  one:\n    url: "+up.url()+"\n"), app.WithLookupEnv(noEnv))
	if err != nil {
		t.Fatal(err)
	}
	h := a.Handler()
	serveApp(t, a)
	waitStatus(t, h, "one", "healthy", 5*time.Second)
	next := parse(t, minimal+"  mcp_health_check_interval: 0.1\nmcp_servers:\n  two:\n    url: "+up.url()+"\n")
	if err := a.Apply(context.Background(), next); err != nil {
		t.Fatal(err)
	}
	waitStatus(t, h, "two", "healthy", 5*time.Second)
	if got := readinessServers(t, h); len(got) != 1 {
		t.Fatalf("after Apply: %v, want only two", got)
	}
}

// serverHealth calls GET /v1/mcp/server/health with the master key.
func serverHealth(t *testing.T, base, query string) []healthEntry {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, base+"/v1/mcp/server/health"+query, nil)
	req.Header.Set("Authorization", "Bearer "+testKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out []healthEntry
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("server health: %d", resp.StatusCode)
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatal(fmt.Errorf("server health body: %w", err))
	}
	return out
}

// An upstream that asks for authentication is unhealthy when the gateway
// holds a credential for it (the credential is wrong), and unknown when it
// holds none (its callers bring theirs).
func TestProberAuthAnswers(t *testing.T) {
	refuse := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("WWW-Authenticate", `Bearer realm="peer"`)
		http.Error(w, "who are you", http.StatusUnauthorized)
	}))
	t.Cleanup(refuse.Close)
	cfg := parse(t, minimal+"  mcp_health_check_interval: 0.1\nmcp_servers:\n"+
		"  bare:\n    url: "+refuse.URL+"/mcp\n"+
		"  keyed:\n    url: "+refuse.URL+"/mcp\n    auth_type: bearer_token\n    auth_value: not-the-right-one\n")
	a, err := app.New(cfg, app.WithLookupEnv(noEnv))
	if err != nil {
		t.Fatal(err)
	}
	base := serveApp(t, a)
	waitStatus(t, a.Handler(), "keyed", "unhealthy", 5*time.Second)
	got := serverHealth(t, base, "")
	if len(got) != 2 {
		t.Fatalf("health of %d servers, want bare and keyed: %v", len(got), got)
	}
	for _, e := range got {
		want := map[string]string{"bare": "unknown", "keyed": "unhealthy"}[e.ServerID]
		if e.Status != want || e.HealthCheckError == nil || !strings.HasPrefix(*e.HealthCheckError, "auth_required") ||
			strings.Contains(*e.HealthCheckError, "who are you") {
			t.Errorf("%s: %s %v, want %s with auth_required and no body", e.ServerID, e.Status, deref(e.HealthCheckError), want)
		}
	}
}

func deref(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}
