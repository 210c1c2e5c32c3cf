package identity

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// An attacker repeating an unknown key must not cost one webhook call per request: a refusal
// is remembered briefly for the key's digest.
func TestWebhookNegativeAnswerCached(t *testing.T) {
	for _, tt := range []struct {
		name   string
		status int
	}{{"401", 401}, {"403", 403}} {
		t.Run(tt.name, func(t *testing.T) {
			w := newWebhook(t, respond(tt.status, `{}`))
			a := newAuth(t, w, 0, nil)
			for i := 0; i < 20; i++ {
				_, err := a.Authenticate(context.Background(), request(map[string]string{"Authorization": "Bearer " + userKey}), "tools/list")
				if e := authErr(t, err); e.Status != tt.status {
					t.Fatalf("attempt %d: status %d, want %d", i, e.Status, tt.status)
				}
			}
			if n := w.calls.Load(); n != 1 {
				t.Fatalf("webhook called %d times for one unknown key, want 1", n)
			}
			// Another key is not covered by the first key's refusal.
			_, _ = a.Authenticate(context.Background(), request(map[string]string{"Authorization": "Bearer other-key-123"}), "tools/list")
			if n := w.calls.Load(); n != 2 {
				t.Fatalf("webhook called %d times after a second key, want 2", n)
			}
		})
	}
}

// A 403 may depend on what is asked: it is remembered per key, method and path, so the same key
// asking for something else is decided by the webhook again.
func TestWebhookForbiddenCachedPerMethod(t *testing.T) {
	w := newWebhook(t, respond(403, `{}`))
	a := newAuth(t, w, 0, nil)
	for _, m := range []string{"tools/call", "tools/call", "tools/list", "tools/list"} {
		_, _ = a.Authenticate(context.Background(), request(map[string]string{"Authorization": "Bearer " + userKey}), m)
	}
	if n := w.calls.Load(); n != 2 {
		t.Fatalf("webhook called %d times, want 2 (one per method)", n)
	}
}

// Positive answers are never cached: revocation takes effect on the next request.
func TestWebhookPositiveAnswerNotCached(t *testing.T) {
	w := newWebhook(t, respond(200, `{"user_id":"alice"}`))
	a := newAuth(t, w, 0, nil)
	for i := 0; i < 3; i++ {
		if _, err := a.Authenticate(context.Background(), request(map[string]string{"Authorization": "Bearer " + userKey}), "tools/list"); err != nil {
			t.Fatal(err)
		}
	}
	if n := w.calls.Load(); n != 3 {
		t.Fatalf("webhook called %d times, want 3", n)
	}
}

// A caller sending ~1 MB of headers must not make the gateway post ~1 MB to the webhook for
// every request, nor choose which headers the webhook sees by crowding some out: beyond the
// bounds (count and bytes) the request is refused with 431 and the webhook is not asked; within
// them every non-credential header goes, and credentials never do.
func TestWebhookHeadersBounded(t *testing.T) {
	for _, tc := range []struct {
		name    string
		fillers int
		size    int
		refused bool
	}{
		{"many large headers", 500, 2000, true},
		{"too many small headers", 70, 1, true},
		{"too many bytes", 10, 2000, true},
		{"within the bounds", 40, 100, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWebhook(t, respond(401, `{}`))
			a := newAuth(t, w, 0, nil)
			r := request(map[string]string{"Authorization": "Bearer " + userKey, "X-Api-Key": "secret-value"})
			for i := 0; i < tc.fillers; i++ {
				r.Header.Set(fmt.Sprintf("X-Filler-%03d", i), strings.Repeat("v", tc.size))
			}
			r.Header.Set("X-Tenant", "acme")
			_, err := a.Authenticate(context.Background(), r, "tools/list")
			var ae *Error
			if tc.refused {
				if !errors.As(err, &ae) || ae.Status != 431 || w.calls.Load() != 0 {
					t.Fatalf("err %v, webhook calls %d; want 431 and no call", err, w.calls.Load())
				}
				return
			}
			body, _ := w.seen()
			var got webhookRequest
			if err := json.Unmarshal(body, &got); err != nil {
				t.Fatal(err)
			}
			if got.Headers["x-tenant"] != "acme" || len(got.Headers) < tc.fillers {
				t.Errorf("headers dropped: %d sent", len(got.Headers))
			}
			if strings.Contains(string(body), "secret-value") {
				t.Error("a credential header reached the webhook")
			}
		})
	}
}

// A flood of distinct unknown keys must not open unbounded concurrent connections to the webhook.
func TestWebhookConcurrencyBounded(t *testing.T) {
	const limit = 64 // DefaultMaxWebhookCalls
	var inFlight, peak atomic.Int32
	release := make(chan struct{})
	w := newWebhook(t, func(rw http.ResponseWriter, r *http.Request) {
		n := inFlight.Add(1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		select {
		case <-release:
		case <-r.Context().Done():
		}
		inFlight.Add(-1)
		rw.WriteHeader(401)
	})
	a := newAuth(t, w, 5*time.Second, nil)
	var wg sync.WaitGroup
	for i := 0; i < limit+16; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _ = a.Authenticate(context.Background(), request(map[string]string{"Authorization": fmt.Sprintf("Bearer flood-%d", i)}), "tools/list")
		}()
	}
	deadline := time.Now().Add(3 * time.Second)
	for inFlight.Load() < limit && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond) // let any excess call arrive
	close(release)
	wg.Wait()
	if p := peak.Load(); p > limit {
		t.Fatalf("peak concurrent webhook calls %d, want at most %d", p, limit)
	}
	w.srv.Client().CloseIdleConnections()
}

// Distinct unknown keys cannot grow the refusal cache without bound: the least recently used
// refusal is evicted and its key goes back to the webhook.
func TestWebhookNegativeCacheBounded(t *testing.T) {
	w := newWebhook(t, respond(401, `{}`))
	a, err := New(Config{MasterKey: strongKey, CustomAuthURL: w.srv.URL, HTTPClient: w.srv.Client(), NegativeCacheSize: 4})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 10; i++ {
		_, _ = a.Authenticate(context.Background(), request(map[string]string{"Authorization": fmt.Sprintf("Bearer k-%d", i)}), "tools/list")
		if n := a.refused.len(); n > 4 {
			t.Fatalf("negative cache holds %d entries, want at most 4", n)
		}
	}
	before := w.calls.Load()
	_, _ = a.Authenticate(context.Background(), request(map[string]string{"Authorization": "Bearer k-9"}), "tools/list")
	if w.calls.Load() != before {
		t.Fatal("a recent refusal was not remembered")
	}
	_, _ = a.Authenticate(context.Background(), request(map[string]string{"Authorization": "Bearer k-0"}), "tools/list")
	if w.calls.Load() != before+1 {
		t.Fatal("an evicted refusal was still answered from the cache")
	}
}

// A refusal is forgotten after its TTL, so a key minted just after being refused works soon.
func TestWebhookNegativeCacheExpires(t *testing.T) {
	allow := atomic.Bool{}
	w := newWebhook(t, func(rw http.ResponseWriter, r *http.Request) {
		if allow.Load() {
			respond(200, `{"user_id":"alice"}`)(rw, r)
			return
		}
		rw.WriteHeader(401)
	})
	a, err := New(Config{MasterKey: strongKey, CustomAuthURL: w.srv.URL, HTTPClient: w.srv.Client(), NegativeCacheTTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	a.refused.now = func() time.Time { return now }
	req := func() (*Caller, error) {
		return a.Authenticate(context.Background(), request(map[string]string{"Authorization": "Bearer " + userKey}), "tools/list")
	}
	_, _ = req()
	allow.Store(true)
	if _, err := req(); err == nil {
		t.Fatal("refusal not remembered within its TTL")
	}
	now = now.Add(time.Minute)
	if c, err := req(); err != nil || c.UserID != "alice" {
		t.Fatalf("after the TTL: %+v, %v", c, err)
	}
}

// With every webhook slot taken, a further caller waits at most its deadline (and the webhook
// timeout) for a slot, then gets 503.
func TestWebhookBusyIs503(t *testing.T) {
	release := make(chan struct{})
	w := newWebhook(t, func(rw http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
		rw.WriteHeader(401)
	})
	a, err := New(Config{MasterKey: strongKey, CustomAuthURL: w.srv.URL, HTTPClient: w.srv.Client(),
		MaxWebhookCalls: 1, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = a.Authenticate(context.Background(), request(map[string]string{"Authorization": "Bearer first-key"}), "tools/list")
	}()
	for w.calls.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err = a.Authenticate(ctx, request(map[string]string{"Authorization": "Bearer second-key"}), "tools/list")
	if e := authErr(t, err); e.Status != 503 {
		t.Fatalf("busy webhook: %+v, want 503", e)
	}
	if n := w.calls.Load(); n != 1 {
		t.Fatalf("webhook called %d times, want 1", n)
	}
	close(release)
	<-done
	w.srv.Client().CloseIdleConnections()
}
