package front

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpgw/mcpgw/internal/fakemcp"
	"github.com/mcpgw/mcpgw/internal/mcp"
)

var legacyInit = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`

// initLegacy opens a legacy session on /mcp and returns its id.
func initLegacy(t *testing.T, base, key string) string {
	t.Helper()
	resp, body := post(t, base+"/mcp", map[string]string{"Authorization": "Bearer " + key}, legacyInit)
	sid := resp.Header.Get(mcp.HeaderSessionID)
	if resp.StatusCode != http.StatusOK || sid == "" {
		t.Fatalf("initialize: %d %s", resp.StatusCode, body)
	}
	return sid
}

// legacyCall sends one request on a legacy session and returns the status.
func legacyCall(t *testing.T, base, key, sid, method, params string) int {
	t.Helper()
	resp, _ := post(t, base+"/mcp", map[string]string{"Authorization": "Bearer " + key, mcp.HeaderSessionID: sid,
		mcp.HeaderProtocolVersion: mcp.V20251125}, fmt.Sprintf(`{"jsonrpc":"2.0","id":2,"method":%q,"params":%s}`, method, params))
	return resp.StatusCode
}

func ping(t *testing.T, base, key, sid string) int {
	return legacyCall(t, base, key, sid, mcp.MethodPing, `{}`)
}

// A legacy session that subscribed to a resource and then went quiet must
// not hold its upstream subscription (and goroutines) forever: it is swept
// like any idle session, and its id is then not found.
func TestIdleLegacySessionWithSubscriptionIsSwept(t *testing.T) {
	up, seen := subscribableUpstream(t)
	f := newTestFront(t, frontSpec{ups: []upSpec{{name: "fs", fake: up}},
		cfg: MCPConfig{Sessions: SessionConfig{IdleTimeout: 200 * time.Millisecond}}})
	sid := initLegacy(t, f.url, testKey)
	if st := legacyCall(t, f.url, testKey, sid, mcp.MethodResourcesSubscribe, `{"uri":"file:///r1"}`); st != http.StatusOK {
		t.Fatalf("subscribe: %d", st)
	}
	if !eventually(5*time.Second, func() bool { return seen(mcp.MethodResourcesSubscribe, "file:///r1") == 1 }) {
		t.Fatal("upstream did not get the subscription")
	}
	if !eventually(5*time.Second, func() bool { return seen(mcp.MethodResourcesUnsubscribe, "file:///r1") == 1 }) {
		t.Fatal("an idle session's upstream subscription was never released")
	}
	if st := ping(t, f.url, testKey, sid); st != http.StatusNotFound {
		t.Fatalf("a swept session answered %d, want 404 (the client re-initializes)", st)
	}
}

// An open GET stream holds its session: it is not idle.
func TestLegacySessionWithOpenStreamIsNotSwept(t *testing.T) {
	up := fakemcp.New(t, fakemcp.Opts{Legacy: true})
	f := newTestFront(t, frontSpec{ups: []upSpec{{name: "fs", fake: up}},
		cfg: MCPConfig{Sessions: SessionConfig{IdleTimeout: 100 * time.Millisecond}}})
	sid := initLegacy(t, f.url, testKey)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, f.url+"/mcp", nil)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Authorization", "Bearer "+testKey)
	req.Header.Set(mcp.HeaderSessionID, sid)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET stream: %v %v", resp, err)
	}
	defer resp.Body.Close()
	time.Sleep(500 * time.Millisecond)
	if st := ping(t, f.url, testKey, sid); st != http.StatusOK {
		t.Fatalf("a session with an open GET stream answered %d after the idle period", st)
	}
}

// A session whose sealed expiry passed is not served from live state.
func TestLiveLegacySessionExpiryIsRechecked(t *testing.T) {
	var skew atomic.Int64
	up := fakemcp.New(t, fakemcp.Opts{Legacy: true})
	f := newTestFront(t, frontSpec{ups: []upSpec{{name: "fs", fake: up}},
		clock: func() time.Time { return time.Now().Add(time.Duration(skew.Load())) }})
	sid := initLegacy(t, f.url, testKey)
	if st := ping(t, f.url, testKey, sid); st != http.StatusOK {
		t.Fatalf("fresh session: %d", st)
	}
	skew.Store(int64(sessionTTL + time.Hour))
	if st := ping(t, f.url, testKey, sid); st != http.StatusNotFound {
		t.Fatalf("a live session past its sealed expiry answered %d, want 404", st)
	}
}

// Live sessions are capped: beyond the cap the least recently used ends
// (404), and one caller beyond its own cap ends only its own sessions.
func TestLiveLegacySessionsAreCapped(t *testing.T) {
	t.Run("all callers", func(t *testing.T) {
		up := fakemcp.New(t, fakemcp.Opts{Legacy: true})
		f := newTestFront(t, frontSpec{ups: []upSpec{{name: "fs", fake: up}},
			cfg: MCPConfig{Sessions: SessionConfig{MaxLive: 2}}})
		var sids []string
		for range 3 {
			sid := initLegacy(t, f.url, testKey)
			if st := ping(t, f.url, testKey, sid); st != http.StatusOK {
				t.Fatalf("ping: %d", st)
			}
			sids = append(sids, sid)
		}
		if st := ping(t, f.url, testKey, sids[0]); st != http.StatusNotFound {
			t.Fatalf("least recently used session beyond the cap answered %d, want 404", st)
		}
		for _, sid := range sids[1:] {
			if st := ping(t, f.url, testKey, sid); st != http.StatusOK {
				t.Fatalf("a recent session answered %d", st)
			}
		}
	})
	t.Run("per caller", func(t *testing.T) {
		idHook := webhookFor(t, map[string]string{
			"sk-alice-key-00000001": `{"user_id":"alice","object_permission":{"mcp_servers":["fs"]}}`,
			"sk-bob-key-000000001":  `{"user_id":"bob","object_permission":{"mcp_servers":["fs"]}}`,
		})
		up := fakemcp.New(t, fakemcp.Opts{Legacy: true})
		f := newTestFront(t, frontSpec{ups: []upSpec{{name: "fs", fake: up}}, webhook: idHook,
			cfg: MCPConfig{Sessions: SessionConfig{MaxLivePerCaller: 2, MaxLive: 10}}})
		bob := initLegacy(t, f.url, "sk-bob-key-000000001")
		if st := ping(t, f.url, "sk-bob-key-000000001", bob); st != http.StatusOK {
			t.Fatalf("bob: %d", st)
		}
		var alice []string
		for range 3 {
			sid := initLegacy(t, f.url, "sk-alice-key-00000001")
			if st := ping(t, f.url, "sk-alice-key-00000001", sid); st != http.StatusOK {
				t.Fatalf("alice: %d", st)
			}
			alice = append(alice, sid)
		}
		if st := ping(t, f.url, "sk-alice-key-00000001", alice[0]); st != http.StatusNotFound {
			t.Fatalf("alice's oldest session beyond her cap answered %d, want 404", st)
		}
		if st := ping(t, f.url, "sk-bob-key-000000001", bob); st != http.StatusOK {
			t.Fatalf("bob's session was ended by alice's sessions: %d", st)
		}
	})
}

// Ended sessions' ids are remembered only up to a cap, oldest forgotten
// first.
func TestDeletedLegacySessionsAreCapped(t *testing.T) {
	up := fakemcp.New(t, fakemcp.Opts{Legacy: true})
	f := newTestFront(t, frontSpec{ups: []upSpec{{name: "fs", fake: up}},
		cfg: MCPConfig{Sessions: SessionConfig{MaxDeleted: 2}}})
	var sids []string
	for range 3 {
		sid := initLegacy(t, f.url, testKey)
		req, _ := http.NewRequest(http.MethodDelete, f.url+"/mcp", nil)
		req.Header.Set("Authorization", "Bearer "+testKey)
		req.Header.Set(mcp.HeaderSessionID, sid)
		resp, err := http.DefaultClient.Do(req)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("DELETE: %v %v", resp, err)
		}
		resp.Body.Close()
		sids = append(sids, sid)
	}
	for _, sid := range sids[1:] {
		if st := ping(t, f.url, testKey, sid); st != http.StatusNotFound {
			t.Fatalf("a deleted session answered %d", st)
		}
	}
	n := f.mcp.sessions.tombs.(*MemoryTombstones).len()
	if n > 2 {
		t.Fatalf("%d deleted ids remembered, want at most 2", n)
	}
}

// /mcp/sse connections are capped: beyond the cap, 503.
func TestSSEConnectionsAreCapped(t *testing.T) {
	up := fakemcp.New(t, fakemcp.Opts{Legacy: true})
	f := newTestFront(t, frontSpec{ups: []upSpec{{name: "fs", fake: up}},
		cfg: MCPConfig{Sessions: SessionConfig{MaxSSEConns: 1}}})
	dialSSE(t, f.url, map[string]string{"Authorization": "Bearer " + testKey})
	req, _ := http.NewRequest(http.MethodGet, f.url+"/mcp/sse", nil)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Authorization", "Bearer "+testKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("connection beyond the cap: %d, want 503", resp.StatusCode)
	}
}

// One caller cannot take every /mcp/sse connection: beyond its own cap it
// gets 503 while another caller still connects.
func TestSSEConnectionsAreCappedPerCaller(t *testing.T) {
	hook := webhookFor(t, map[string]string{
		"sk-alice-key-00000001": `{"user_id":"alice","object_permission":{"mcp_servers":["fs"]}}`,
		"sk-bob-key-000000001":  `{"user_id":"bob","object_permission":{"mcp_servers":["fs"]}}`,
	})
	up := fakemcp.New(t, fakemcp.Opts{Legacy: true})
	f := newTestFront(t, frontSpec{ups: []upSpec{{name: "fs", fake: up}}, webhook: hook,
		cfg: MCPConfig{Sessions: SessionConfig{MaxSSEConnsPerCaller: 1}}})
	dialSSE(t, f.url, map[string]string{"Authorization": "Bearer sk-alice-key-00000001"})
	req, _ := http.NewRequest(http.MethodGet, f.url+"/mcp/sse", nil)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Authorization", "Bearer sk-alice-key-00000001")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("alice's connection beyond her cap: %d, want 503", resp.StatusCode)
	}
	dialSSE(t, f.url, map[string]string{"Authorization": "Bearer sk-bob-key-000000001"})
}

// A panic in a goroutine the front starts is logged at ERROR without its
// value (which may carry arguments or tokens), and the goroutine's fallback
// runs.
func TestRecoverPanicLogsWithoutValue(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&buf, nil))
	fellBack := make(chan struct{})
	go func() {
		defer recoverPanic(log, "test goroutine", func() { close(fellBack) })
		panic("Bearer sk-secret-token-in-a-panic")
	}()
	select {
	case <-fellBack:
	case <-time.After(5 * time.Second):
		t.Fatal("fallback did not run")
	}
	var rec map[string]any
	if err := json.Unmarshal(buf.Bytes(), &rec); err != nil {
		t.Fatalf("log: %v %q", err, buf.String())
	}
	if rec["level"] != "ERROR" || rec["in"] != "test goroutine" {
		t.Fatalf("log record %v", rec)
	}
	if strings.Contains(buf.String(), "sk-secret") {
		t.Fatalf("the panic value was logged: %s", buf.String())
	}
}

// A held stream's duties share one timer: the re-check is due every
// interval from the start, the keepalive only once the stream is open.
func TestDutiesShareOneTimer(t *testing.T) {
	wake := make(chan struct{}, 1)
	d := newWakingDuties(20*time.Millisecond, wake)
	defer d.stop()
	<-wake
	if recheck, keepalive := d.due(); !recheck || keepalive {
		t.Fatalf("due before open = %v, %v; want a re-check alone", recheck, keepalive)
	}
	d.open()
	if recheck, keepalive := d.due(); recheck || keepalive {
		t.Fatalf("due right after a re-check = %v, %v; want nothing", recheck, keepalive)
	}
	select {
	case <-wake: // armed for the next re-check, before the keepalive
	case <-time.After(5 * time.Second):
		t.Fatal("the timer was not armed for the next re-check")
	}
	if recheck, _ := d.due(); !recheck {
		t.Fatal("the re-check was not due when the timer fired")
	}
	d.keepAt = time.Now() // the keepalive is due
	if _, keepalive := d.due(); !keepalive {
		t.Fatal("the keepalive was not due")
	}
	if !d.keepAt.After(time.Now().Add(keepaliveInterval - time.Second)) {
		t.Fatal("the next keepalive is not an interval away")
	}
}
