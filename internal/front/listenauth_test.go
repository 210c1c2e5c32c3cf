package front

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpgw/mcpgw/internal/fakemcp"
)

// One re-authentication answers for a stream's events for authReuse: a
// burst of events costs the webhook one call, and a verdict older than that
// is asked again, so a revocation is seen within it.
func TestAuthWatchReusesAVerdictBriefly(t *testing.T) {
	var calls, refuse atomic.Int32
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		calls.Add(1)
		if refuse.Load() != 0 {
			http.Error(w, "revoked", http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"user_id":"alice","object_permission":{"mcp_servers":["fs"]}}`)
	}))
	t.Cleanup(hook.Close)
	up := fakemcp.New(t, fakemcp.Opts{})
	f := newTestFront(t, frontSpec{ups: []upSpec{{name: "fs", fake: up}}, webhook: hook.URL})
	r := httptest.NewRequest(http.MethodPost, "/mcp", nil)
	r.Header.Set("Authorization", "Bearer sk-alice-key-00000001")
	ctx := context.Background()
	caller, err := f.mcp.cfg.Auth.Authenticate(ctx, r, "subscriptions/listen")
	if err != nil {
		t.Fatal(err)
	}
	calls.Store(0)
	watch := f.mcp.watchAuth(r, caller)
	for range 10 {
		if !watch.ok(ctx) {
			t.Fatal("alice refused")
		}
	}
	if n := calls.Load(); n != 1 {
		t.Fatalf("ten checks within a second cost the webhook %d calls, want 1", n)
	}
	refuse.Store(1)
	time.Sleep(authReuse + 50*time.Millisecond)
	if watch.ok(ctx) {
		t.Fatal("a revoked caller passed a check made after the reuse window")
	}
	if n := calls.Load(); n != 2 {
		t.Fatalf("webhook calls = %d, want 2", n)
	}
}
