package front

import (
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpgw/mcpgw/internal/fakemcp"
)

// statusWebhook admits alice while its status is 200, else answers that
// status (503: the auth service is down or busy; 401: alice is revoked).
func statusWebhook(t *testing.T) (url string, status *atomic.Int32) {
	status = &atomic.Int32{}
	status.Store(http.StatusOK)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		if s := int(status.Load()); s != http.StatusOK {
			http.Error(w, "nope", s)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"user_id":"alice","object_permission":{"mcp_servers":["fs"]}}`)
	}))
	t.Cleanup(srv.Close)
	return srv.URL, status
}

// Attack: strangers fill the webhook's call slots (or the auth service
// restarts) so every re-check answers 503; long-lived streams of callers
// who were never refused must not all be torn down at once.
func TestStreamSurvivesUnavailableAuthentication(t *testing.T) {
	hook, status := statusWebhook(t)
	up := fakemcp.New(t, fakemcp.Opts{Legacy: true})
	f := newTestFront(t, frontSpec{ups: []upSpec{{name: "fs", fake: up}}, webhook: hook,
		cfg: MCPConfig{Sessions: SessionConfig{RecheckInterval: 30 * time.Millisecond}}})
	c := dialSSE(t, f.url, map[string]string{"Authorization": "Bearer sk-alice-key-00000001"})
	c.initialize(1)
	status.Store(http.StatusServiceUnavailable)
	select {
	case <-c.ended:
		t.Fatal("the stream ended because the webhook was unavailable, though the caller was never refused")
	case <-time.After(400 * time.Millisecond):
	}
	status.Store(http.StatusOK)
	if m := c.call(2, "tools/list", `{}`); m.Error != nil {
		t.Fatalf("tools/list after the outage: %v", m.Error)
	}
	status.Store(http.StatusUnauthorized) // a refusal still ends it at once
	select {
	case <-c.ended:
	case <-time.After(5 * time.Second):
		t.Fatal("a refused caller's stream stayed open")
	}
}

// A webhook unavailable beyond the grace period ends the stream.
func TestStreamEndsAfterAuthUnavailableGrace(t *testing.T) {
	hook, status := statusWebhook(t)
	up := fakemcp.New(t, fakemcp.Opts{Legacy: true})
	f := newTestFront(t, frontSpec{ups: []upSpec{{name: "fs", fake: up}}, webhook: hook,
		cfg: MCPConfig{Sessions: SessionConfig{RecheckInterval: 30 * time.Millisecond, AuthUnavailableGrace: 300 * time.Millisecond}}})
	c := dialSSE(t, f.url, map[string]string{"Authorization": "Bearer sk-alice-key-00000001"})
	c.initialize(1)
	status.Store(http.StatusServiceUnavailable)
	start := time.Now()
	select {
	case <-c.ended:
		if d := time.Since(start); d < 250*time.Millisecond {
			t.Fatalf("the stream ended after %v, before the grace period", d)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the stream outlived the grace period of an unavailable webhook")
	}
}
