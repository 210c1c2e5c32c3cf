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

// A verdict answers for the events queued before its check began: a burst
// costs the webhook one call, and an event that arrived after a revocation
// is checked again and refused, however soon after the last check.
func TestAuthWatchReusesAVerdictOnlyForEarlierEvents(t *testing.T) {
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
	burst := time.Now() // ten events queued before any check
	time.Sleep(time.Millisecond)
	for range 10 {
		if !watch.ok(ctx, burst) {
			t.Fatal("alice refused")
		}
	}
	if n := calls.Load(); n != 1 {
		t.Fatalf("a burst of ten events cost the webhook %d calls, want 1", n)
	}
	refuse.Store(1)
	time.Sleep(100 * time.Millisecond)
	if watch.ok(ctx, time.Now()) {
		t.Fatal("an event that arrived 100 ms after a revocation was served on the earlier verdict")
	}
	if n := calls.Load(); n != 2 {
		t.Fatalf("webhook calls = %d, want 2", n)
	}
}
