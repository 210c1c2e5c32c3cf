package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpgw/mcpgw/internal/jsonrpc"
)

// streamingGETs makes f hold every GET open as an SSE stream, counting the
// ones open at once.
func streamingGETs(f *fakeUpstream) (open *atomic.Int32) {
	open = new(atomic.Int32)
	f.srv.Config.Handler = getHook(f.srv.Config.Handler, func(w http.ResponseWriter, r *http.Request) {
		open.Add(1)
		defer open.Add(-1)
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(200)
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	})
	return open
}

func okCall(w http.ResponseWriter, _ *http.Request, m *jsonrpc.Message) {
	writeJSON(w, 200, jsonrpc.EncodeResult(m.ID, json.RawMessage(`{"content":[]}`)))
}

// Each distinct forwarded header value (X-Request-Id, a rotated delegated
// token) gets a session of its own; the pool must not grow without bound,
// each evicted session is ended upstream (DELETE), and calls that cannot
// receive anything on a GET stream do not open one.
func TestDistinctCredentialsDoNotGrowThePool(t *testing.T) {
	f := legacyServer(t, "2025-11-25", okCall)
	open := streamingGETs(f)
	c := newClient(t, Config{Name: "up", URL: f.url(), ProtocolVersion: "2025-11-25", MaxSessions: 8})
	for i := range 40 {
		opts := Options{Header: http.Header{"X-Request-Id": {fmt.Sprint("req-", i)}}}
		if _, err := c.CallTool(context.Background(), "t", json.RawMessage(`{}`), opts); err != nil {
			t.Fatal(err)
		}
	}
	if n := c.poolSize(); n > 8 {
		t.Fatalf("%d pooled sessions, want at most 8", n)
	}
	for deadline := time.Now().Add(5 * time.Second); len(deletes(f)) < 32; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d DELETEs for 32 evicted sessions", len(deletes(f)))
		}
	}
	if n := open.Load(); n != 0 {
		t.Fatalf("%d GET streams open for calls that need none", n)
	}
}

// A session nobody uses for SessionIdle is ended, and its GET stream with it.
func TestIdleSessionsAreEnded(t *testing.T) {
	f := legacyServer(t, "2025-11-25", okCall)
	open := streamingGETs(f)
	c := newClient(t, Config{Name: "up", URL: f.url(), ProtocolVersion: "2025-11-25", SessionIdle: 100 * time.Millisecond})
	if _, err := c.CallTool(context.Background(), "t", json.RawMessage(`{}`), Options{}); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(5 * time.Second); c.poolSize() != 0 || len(deletes(f)) != 1 || open.Load() != 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("pool=%d deletes=%v open GETs=%d after the idle time", c.poolSize(), deletes(f), open.Load())
		}
	}
	if _, err := c.CallTool(context.Background(), "t", json.RawMessage(`{}`), Options{}); err != nil {
		t.Fatalf("a new session after eviction: %v", err)
	}
}

// A full pool whose sessions all have calls in flight never evicts one of
// them: the new caller gets a retryable error, and a slot once free is used.
func TestFullPoolOfBusySessionsRefusesRetryably(t *testing.T) {
	release := make(chan struct{})
	f := legacyServer(t, "2025-11-25", func(w http.ResponseWriter, r *http.Request, m *jsonrpc.Message) {
		if r.Header.Get("X-Request-Id") != "new" {
			select {
			case <-release:
			case <-r.Context().Done():
			}
		}
		okCall(w, r, m)
	})
	c := newClient(t, Config{Name: "up", URL: f.url(), ProtocolVersion: "2025-11-25", MaxSessions: 2})
	done := make(chan error, 2)
	for i := range 2 {
		go func() {
			_, err := c.CallTool(context.Background(), "t", json.RawMessage(`{}`), Options{Header: http.Header{"X-Request-Id": {fmt.Sprint(i)}}})
			done <- err
		}()
	}
	for deadline := time.Now().Add(5 * time.Second); len(f.calls()) < 4; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("calls = %v", f.calls())
		}
	}
	newOpts := Options{Header: http.Header{"X-Request-Id": {"new"}}}
	_, err := c.CallTool(context.Background(), "t", json.RawMessage(`{}`), newOpts)
	if cl := Classify(err); !errors.As(err, new(*PoolFullError)) || cl.HTTPStatus != http.StatusServiceUnavailable {
		t.Fatalf("err = %v (%+v), want a retryable pool-full error", err, cl)
	}
	close(release)
	for range 2 {
		if err := <-done; err != nil {
			t.Fatalf("a call in flight failed: %v", err)
		}
	}
	if len(deletes(f)) != 0 {
		t.Fatalf("a busy session was ended: %v", deletes(f))
	}
	if _, err := c.CallTool(context.Background(), "t", json.RawMessage(`{}`), newOpts); err != nil {
		t.Fatalf("after the calls ended: %v", err)
	}
}

// A follower (a downstream session or listen following an upstream session)
// keeps that session from eviction and its GET stream open; when it lets go,
// the session is idle again.
func TestFollowPinsTheSessionAndOpensItsStream(t *testing.T) {
	f := legacyServer(t, "2025-11-25", okCall)
	open := streamingGETs(f)
	c := newClient(t, Config{Name: "up", URL: f.url(), ProtocolVersion: "2025-11-25", MaxSessions: 1})
	followed := Options{Header: http.Header{"X-User": {"a"}}}
	_, release, err := c.FollowContext(context.Background(), followed)
	if err != nil {
		t.Fatal(err)
	}
	if open.Load() != 1 {
		t.Fatalf("%d GET streams open for a follower, want 1", open.Load())
	}
	_, err = c.CallTool(context.Background(), "t", json.RawMessage(`{}`), Options{Header: http.Header{"X-User": {"b"}}})
	if !errors.As(err, new(*PoolFullError)) {
		t.Fatalf("err = %v: the followed session must not be evicted", err)
	}
	release()
	release() // idempotent
	if _, err := c.CallTool(context.Background(), "t", json.RawMessage(`{}`), Options{Header: http.Header{"X-User": {"b"}}}); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(5 * time.Second); open.Load() != 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the evicted session's GET stream is still open")
		}
	}
}
