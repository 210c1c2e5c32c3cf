package oauthvault

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/mcpgw/mcpgw/internal/seal"
	"github.com/mcpgw/mcpgw/internal/secretbox"
	"github.com/mcpgw/mcpgw/internal/store"
	"github.com/mcpgw/mcpgw/internal/upstream/auth"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// newTestVault is a vault over a fresh SQLite store and a token endpoint answering with
// answer; now is the vault's clock.
func newTestVault(t *testing.T, answer http.HandlerFunc, now func() time.Time, maxLocks int) *Vault {
	t.Helper()
	srv := httptest.NewServer(answer)
	t.Cleanup(srv.Close)
	st, err := store.OpenSQLite(context.Background(), t.TempDir(), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	box, _ := secretbox.New("salt")
	sealer, _ := seal.New("salt", StatePurpose, TicketPurpose)
	v, err := New(Config{Store: st, Box: box, Sealer: sealer, Now: now, MaxLocks: maxLocks,
		Servers: []Server{{Name: "gh", ClientID: "c", TokenURL: srv.URL, AuthorizationURL: srv.URL}}})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestRefreshIsOneFlightPerPair: many callers finding the same token due for renewal cause
// one refresh, and all of them get the refreshed token.
func TestRefreshIsOneFlightPerPair(t *testing.T) {
	var grants atomic.Int32
	later := time.Now().Add(time.Hour)
	v := newTestVault(t, func(w http.ResponseWriter, r *http.Request) {
		grants.Add(1)
		time.Sleep(50 * time.Millisecond)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"access_token":"fresh","refresh_token":"r2","token_type":"bearer","expires_in":7200}`)
	}, func() time.Time { return later }, 0)
	ctx := context.Background()
	if err := v.put(ctx, "alice", "gh", auth.UserToken{Access: "old", Refresh: "r1", RenewAt: time.Now(), Expiry: time.Now().Add(time.Minute)}); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	got := make([]string, 8)
	for i := range got {
		wg.Add(1)
		go func() { defer wg.Done(); got[i], _ = v.Token(ctx, "alice", "gh") }()
	}
	wg.Wait()
	for _, g := range got {
		if g != "fresh" {
			t.Fatalf("tokens %v", got)
		}
	}
	if n := grants.Load(); n != 1 {
		t.Fatalf("%d refreshes for one pair", n)
	}
	if len(v.locks) != 0 {
		t.Fatalf("%d locks left", len(v.locks))
	}
}

// TestRefusedRefreshDropsOnlyThatToken: a refresh the authorization server refuses deletes
// that user's token; another user's stays.
func TestRefusedRefreshDropsOnlyThatToken(t *testing.T) {
	v := newTestVault(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(400)
		fmt.Fprint(w, `{"error":"invalid_grant"}`)
	}, time.Now, 0)
	ctx := context.Background()
	for _, u := range []string{"alice", "bob"} {
		if err := v.put(ctx, u, "gh", auth.UserToken{Access: u + "-token", Refresh: "r"}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := v.Refused(ctx, "alice", "gh", "alice-token"); !errors.Is(err, ErrNoToken) {
		t.Fatalf("refused refresh: %v", err)
	}
	if _, err := v.Token(ctx, "alice", "gh"); !errors.Is(err, ErrNoToken) {
		t.Fatalf("alice's token survived: %v", err)
	}
	if tok, err := v.Token(ctx, "bob", "gh"); err != nil || tok != "bob-token" {
		t.Fatalf("bob: %q %v", tok, err)
	}
}

// TestLockMapIsBounded: beyond MaxLocks pairs refreshing at once a refresh is refused with
// ErrBusy instead of growing the map.
func TestLockMapIsBounded(t *testing.T) {
	v := newTestVault(t, func(http.ResponseWriter, *http.Request) {}, time.Now, 1)
	release, err := v.lock(context.Background(), "a")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := v.lock(context.Background(), "b"); !errors.Is(err, ErrBusy) {
		t.Fatalf("second pair: %v", err)
	}
	release()
	r2, err := v.lock(context.Background(), "b")
	if err != nil {
		t.Fatal(err)
	}
	r2()
}

// TestTicketAndStateAreBound: a ticket opens only for its server; a callback without the
// browser's cookie is refused.
func TestTicketAndStateAreBound(t *testing.T) {
	v := newTestVault(t, func(http.ResponseWriter, *http.Request) {}, time.Now, 0)
	link, err := v.AuthorizeLink("alice", "gh")
	if err != nil {
		t.Fatal(err)
	}
	u, _ := http.NewRequest(http.MethodGet, "http://gw"+link, nil)
	if user, err := v.OpenTicket(u.URL.Query().Get("ticket"), "gh"); err != nil || user != "alice" {
		t.Fatalf("ticket: %q %v", user, err)
	}
	if _, err := v.OpenTicket(u.URL.Query().Get("ticket"), "other"); !errors.Is(err, ErrFlow) {
		t.Fatalf("ticket for another server: %v", err)
	}
	to, cookie, err := v.Begin("http://gw", "alice", "gh")
	if err != nil {
		t.Fatal(err)
	}
	redirect, _ := http.NewRequest(http.MethodGet, to, nil)
	cb := httptest.NewRequest(http.MethodGet, "http://gw/callback?code=x&state="+redirect.URL.Query().Get("state"), nil)
	if _, _, _, err := v.Complete(context.Background(), "http://gw", cb); !errors.Is(err, ErrFlow) {
		t.Fatalf("callback without the cookie: %v", err)
	}
	cookie.Value = "forged"
	cb.AddCookie(cookie)
	if _, _, _, err := v.Complete(context.Background(), "http://gw", cb); !errors.Is(err, ErrFlow) {
		t.Fatalf("callback with a forged cookie: %v", err)
	}
}
