package auth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

const testSecret = "s3cr3t-Value-9"

// tokenEndpoint is an in-process OAuth2 token endpoint.
type tokenEndpoint struct {
	srv     *httptest.Server
	hits    atomic.Int32
	mu      sync.Mutex
	forms   []url.Values
	headers []http.Header
	respond atomic.Pointer[func(w http.ResponseWriter, r *http.Request, n int)]
}

// jsonToken answers a bearer token named tok-<n> with the given lifetime.
func jsonToken(expiresIn int, scope string) func(http.ResponseWriter, *http.Request, int) {
	return func(w http.ResponseWriter, _ *http.Request, n int) {
		body := map[string]any{"access_token": fmt.Sprintf("tok-%d", n), "token_type": "Bearer", "expires_in": expiresIn}
		if scope != "" {
			body["scope"] = scope
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(body)
	}
}

func newTokenEndpoint(t *testing.T, respond func(http.ResponseWriter, *http.Request, int)) *tokenEndpoint {
	t.Helper()
	e := &tokenEndpoint{}
	e.set(respond)
	e.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := int(e.hits.Add(1))
		_ = r.ParseForm()
		e.mu.Lock()
		e.forms = append(e.forms, r.PostForm)
		e.headers = append(e.headers, r.Header.Clone())
		e.mu.Unlock()
		(*e.respond.Load())(w, r, n)
	}))
	t.Cleanup(e.srv.Close)
	return e
}

func (e *tokenEndpoint) set(f func(http.ResponseWriter, *http.Request, int)) { e.respond.Store(&f) }

func (e *tokenEndpoint) newCC(t *testing.T, clock Clock, scopes ...string) *ClientCredentials {
	t.Helper()
	cc, err := NewClientCredentials(ClientCredentialsConfig{
		TokenURL: e.srv.URL + "/oauth/token", ClientID: "gw-client", ClientSecret: testSecret,
		Scopes: scopes, HTTPClient: e.srv.Client(), Clock: clock,
	})
	if err != nil {
		t.Fatal(err)
	}
	return cc
}

func mustToken(t *testing.T, cc *ClientCredentials) string {
	t.Helper()
	tok, err := cc.Token(context.Background())
	if err != nil {
		t.Fatalf("Token: %v", err)
	}
	return tok
}

func TestClientCredentialsRequestShape(t *testing.T) {
	e := newTokenEndpoint(t, jsonToken(3600, ""))
	cc := e.newCC(t, newFakeClock(), "read", "write", " read ")
	if tok := mustToken(t, cc); tok != "tok-1" {
		t.Fatalf("token %q", tok)
	}
	want := url.Values{
		"grant_type": {"client_credentials"}, "client_id": {"gw-client"},
		"client_secret": {testSecret}, "scope": {"read write"},
	}
	if !reflect.DeepEqual(e.forms[0], want) {
		t.Fatalf("form %v, want %v", e.forms[0], want)
	}
	h := e.headers[0]
	if h.Get("Content-Type") != "application/x-www-form-urlencoded" || h.Get("Accept") != "application/json" {
		t.Fatalf("headers %v", h)
	}
}

func TestClientCredentialsNoScopeParamWithoutScopes(t *testing.T) {
	e := newTokenEndpoint(t, jsonToken(3600, ""))
	mustToken(t, e.newCC(t, newFakeClock()))
	if e.forms[0].Has("scope") {
		t.Fatalf("form %v", e.forms[0])
	}
}

func TestTokenIsCached(t *testing.T) {
	e := newTokenEndpoint(t, jsonToken(3600, ""))
	cc := e.newCC(t, newFakeClock())
	a, b := mustToken(t, cc), mustToken(t, cc)
	if a != b || e.hits.Load() != 1 {
		t.Fatalf("tokens %q %q, POSTs %d", a, b, e.hits.Load())
	}
}

// TestTokenRenewsEarly: a 70 s token is renewed 60 s before expiry (at
// 10 s), by Token itself.
func TestTokenRenewsEarly(t *testing.T) {
	e := newTokenEndpoint(t, jsonToken(70, ""))
	clock := newFakeClock()
	cc := e.newCC(t, clock)
	mustToken(t, cc)
	clock.Advance(9 * time.Second)
	if tok := mustToken(t, cc); tok != "tok-1" || e.hits.Load() != 1 {
		t.Fatalf("before the margin: %q, POSTs %d", tok, e.hits.Load())
	}
	clock.Advance(2 * time.Second)
	if tok := mustToken(t, cc); tok != "tok-2" || e.hits.Load() != 2 {
		t.Fatalf("past the margin: %q, POSTs %d", tok, e.hits.Load())
	}
}

func TestRenewalTimes(t *testing.T) {
	t0 := time.Unix(0, 0)
	cases := []struct {
		life, renewAfter time.Duration
	}{
		{70 * time.Second, 10 * time.Second},
		{60 * time.Second, 10 * time.Second},
		{15 * time.Second, 7500 * time.Millisecond},
		{10 * time.Second, 5 * time.Second},
		{100 * time.Second, 40 * time.Second},
		{200 * time.Second, 140 * time.Second},
		{300 * time.Second, 240 * time.Second},
		{3600 * time.Second, 2880 * time.Second},
	}
	for _, tc := range cases {
		renewAt, expiry := renewalTimes(t0, tc.life)
		if renewAt.Sub(t0) != tc.renewAfter || expiry.Sub(t0) != tc.life {
			t.Errorf("life %v: renew after %v, expiry %v", tc.life, renewAt.Sub(t0), expiry.Sub(t0))
		}
	}
	if r, x := renewalTimes(t0, 0); !r.IsZero() || !x.IsZero() {
		t.Error("unknown lifetime must not schedule")
	}
}

func TestInvalidate(t *testing.T) {
	e := newTokenEndpoint(t, jsonToken(3600, ""))
	cc := e.newCC(t, newFakeClock())
	t1 := mustToken(t, cc)
	cc.Invalidate("some-other-token") // not the cached one: no effect
	if mustToken(t, cc) != t1 || e.hits.Load() != 1 {
		t.Fatal("invalidating another token minted anew")
	}
	cc.Invalidate(t1)
	t2 := mustToken(t, cc)
	if t2 == t1 || e.hits.Load() != 2 {
		t.Fatalf("after Invalidate: %q, POSTs %d", t2, e.hits.Load())
	}
	cc.Invalidate(t1) // stale again: a second 401 on the old token
	if mustToken(t, cc) != t2 || e.hits.Load() != 2 {
		t.Fatal("invalidating a replaced token minted anew")
	}
}

func TestConcurrentTokenCallsShareOneMint(t *testing.T) {
	release := make(chan struct{})
	e := newTokenEndpoint(t, func(w http.ResponseWriter, r *http.Request, n int) {
		<-release
		jsonToken(3600, "")(w, r, n)
	})
	cc := e.newCC(t, newFakeClock())
	const n = 32
	var wg sync.WaitGroup
	toks := make([]string, n)
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() { toks[i], errs[i] = cc.Token(context.Background()) })
	}
	eventually(t, "the first POST", func() bool { return e.hits.Load() == 1 })
	time.Sleep(20 * time.Millisecond) // let the others queue on the flight
	close(release)
	wg.Wait()
	for i := range n {
		if errs[i] != nil || toks[i] != "tok-1" {
			t.Fatalf("caller %d: %q %v", i, toks[i], errs[i])
		}
	}
	if e.hits.Load() != 1 {
		t.Fatalf("POSTs %d", e.hits.Load())
	}
}

// TestLeaderCancellationDoesNotFailWaiters: the caller leading the mint
// gives up; a waiter with a live context mints on its own.
func TestLeaderCancellationDoesNotFailWaiters(t *testing.T) {
	e := newTokenEndpoint(t, func(w http.ResponseWriter, r *http.Request, n int) {
		if n == 1 {
			<-r.Context().Done()
			return
		}
		jsonToken(3600, "")(w, r, n)
	})
	cc := e.newCC(t, newFakeClock())
	ctx, cancel := context.WithCancel(context.Background())
	leaderErr := make(chan error, 1)
	go func() { _, err := cc.Token(ctx); leaderErr <- err }()
	eventually(t, "the first POST", func() bool { return e.hits.Load() == 1 })
	waiter := make(chan string, 1)
	go func() { tok, _ := cc.Token(context.Background()); waiter <- tok }()
	time.Sleep(10 * time.Millisecond)
	cancel()
	if err := <-leaderErr; !errors.Is(err, context.Canceled) {
		t.Fatalf("leader: %v", err)
	}
	if tok := <-waiter; tok != "tok-2" {
		t.Fatalf("waiter got %q", tok)
	}
	// The abort is not an endpoint failure: no cooldown.
	cc.mu.Lock()
	failed := !cc.failedAt.IsZero()
	cc.mu.Unlock()
	if failed {
		t.Fatal("an aborted mint counted as a failure")
	}
}

func TestFailureCooldownAndFallback(t *testing.T) {
	e := newTokenEndpoint(t, jsonToken(70, ""))
	clock := newFakeClock()
	cc := e.newCC(t, clock)
	mustToken(t, cc)
	e.set(func(w http.ResponseWriter, _ *http.Request, _ int) { w.WriteHeader(http.StatusServiceUnavailable) })
	clock.Advance(40 * time.Second) // due for renewal, still valid
	if tok := mustToken(t, cc); tok != "tok-1" || e.hits.Load() != 2 {
		t.Fatalf("fallback: %q, POSTs %d", tok, e.hits.Load())
	}
	if tok := mustToken(t, cc); tok != "tok-1" || e.hits.Load() != 2 {
		t.Fatalf("cooldown: %q, POSTs %d", tok, e.hits.Load())
	}
	clock.Advance(31 * time.Second) // expired
	var te *TokenError
	if _, err := cc.Token(context.Background()); !errors.As(err, &te) || te.StatusCode != 503 || e.hits.Load() != 3 {
		t.Fatalf("expired: %v, POSTs %d", err, e.hits.Load())
	}
	if _, err := cc.Token(context.Background()); !errors.As(err, &te) || e.hits.Load() != 3 {
		t.Fatalf("expired, in cooldown: %v, POSTs %d", err, e.hits.Load())
	}
	e.set(jsonToken(70, ""))
	clock.Advance(6 * time.Second)
	if tok := mustToken(t, cc); tok != "tok-4" {
		t.Fatalf("recovered: %q", tok)
	}
}

// startWatch runs Watch in the background and returns its problems and a stop function.
func startWatch(t *testing.T, cc *ClientCredentials) (<-chan Problem, func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	problems := make(chan Problem, 16)
	done := make(chan struct{})
	go func() {
		defer close(done)
		cc.Watch(ctx, func(p Problem) { problems <- p })
	}()
	stop := func() { cancel(); <-done }
	t.Cleanup(stop)
	return problems, func() { cancel(); <-done }
}

func TestWatchRenewsProactively(t *testing.T) {
	e := newTokenEndpoint(t, jsonToken(70, ""))
	clock := newFakeClock()
	cc := e.newCC(t, clock)
	start := clock.Now()
	problems, stop := startWatch(t, cc)
	eventually(t, "the initial mint and a renewal timer", func() bool { return e.hits.Load() == 1 && clock.pending() == 1 })
	clock.Advance(36 * time.Second)
	eventually(t, "a proactive renewal", func() bool { return e.hits.Load() == 2 })
	if clock.Now().Sub(start) >= 70*time.Second {
		t.Fatal("renewed only after expiry")
	}
	if tok := mustToken(t, cc); tok != "tok-2" || e.hits.Load() != 2 {
		t.Fatalf("Token after renewal: %q, POSTs %d", tok, e.hits.Load())
	}
	eventually(t, "the next renewal timer", func() bool { return clock.pending() == 1 })
	clock.Advance(36 * time.Second)
	eventually(t, "a second renewal", func() bool { return e.hits.Load() == 3 })
	stop()
	select {
	case p := <-problems:
		t.Fatalf("unexpected problem %v", p)
	default:
	}
}

func TestWatchReportsFailedRenewal(t *testing.T) {
	e := newTokenEndpoint(t, jsonToken(70, ""))
	clock := newFakeClock()
	cc := e.newCC(t, clock)
	problems, stop := startWatch(t, cc)
	eventually(t, "the initial mint", func() bool { return e.hits.Load() == 1 && clock.pending() == 1 })
	e.set(func(w http.ResponseWriter, _ *http.Request, _ int) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprintf(w, `{"error":"invalid_client","error_description":"client_secret %s rejected: body-text"}`, testSecret)
	})
	clock.Advance(36 * time.Second)
	p := <-problems
	var te *TokenError
	if p.Kind != ProblemRenewalFailed || !errors.As(p.Err, &te) || te.StatusCode != 400 || te.Code != "invalid_client" {
		t.Fatalf("problem %+v", p)
	}
	for _, s := range []string{p.Err.Error(), p.String()} {
		if strings.Contains(s, testSecret) || strings.Contains(s, "body-text") {
			t.Fatalf("problem text leaks: %s", s)
		}
	}
	// Watch retries with backoff (1 s) and reports again.
	eventually(t, "a retry timer", func() bool { return clock.pending() == 1 })
	clock.Advance(time.Second)
	if p := <-problems; p.Kind != ProblemRenewalFailed {
		t.Fatalf("second problem %+v", p)
	}
	// The cached token is still valid and still served.
	if tok := mustToken(t, cc); tok != "tok-1" {
		t.Fatalf("Token = %q", tok)
	}
	stop()
}

func TestWatchReportsNarrowedScope(t *testing.T) {
	e := newTokenEndpoint(t, jsonToken(3600, "read"))
	clock := newFakeClock()
	cc := e.newCC(t, clock, "read", "write")
	problems, stop := startWatch(t, cc)
	p := <-problems
	if p.Kind != ProblemScopeNarrowed || !reflect.DeepEqual(p.Missing, []string{"write"}) {
		t.Fatalf("problem %+v", p)
	}
	if !strings.Contains(p.String(), "write") {
		t.Fatalf("String() = %q", p.String())
	}
	stop()
	// Same or broader grants, or no scope field, are not narrowed.
	for _, scope := range []string{"write read", "read write admin", ""} {
		e2 := newTokenEndpoint(t, jsonToken(3600, scope))
		cc2 := e2.newCC(t, newFakeClock(), "read", "write")
		mustToken(t, cc2)
		cc2.mu.Lock()
		miss := cc2.lastMiss
		cc2.mu.Unlock()
		if len(miss) != 0 {
			t.Errorf("scope %q: missing %v", scope, miss)
		}
	}
}

// TestWatchReportsMintsByToken: a problem from a Token-triggered mint reaches
// a running Watch, and one from before Watch started is reported at start.
func TestWatchReportsMintsByToken(t *testing.T) {
	e := newTokenEndpoint(t, jsonToken(3600, "read"))
	cc := e.newCC(t, newFakeClock(), "read", "write")
	mustToken(t, cc)
	problems, stop := startWatch(t, cc)
	if p := <-problems; p.Kind != ProblemScopeNarrowed {
		t.Fatalf("problem %+v", p)
	}
	cc.Invalidate("tok-1")
	if p := <-problems; p.Kind != ProblemScopeNarrowed {
		t.Fatalf("problem %+v", p)
	}
	stop()
	if e.hits.Load() != 2 {
		t.Fatalf("POSTs %d", e.hits.Load())
	}
}

func TestTokenErrorsNeverLeak(t *testing.T) {
	cases := []struct {
		name     string
		respond  func(http.ResponseWriter, *http.Request, int)
		wantCode string
		wantStat int
	}{
		{"401 RFC 6749 error", func(w http.ResponseWriter, _ *http.Request, _ int) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(401)
			fmt.Fprintf(w, `{"error":"invalid_client","error_description":"bad %s body-text"}`, testSecret)
		}, "invalid_client", 401},
		{"500 plain body", func(w http.ResponseWriter, _ *http.Request, _ int) {
			w.WriteHeader(500)
			fmt.Fprintf(w, "stack trace body-text %s", testSecret)
		}, "", 500},
		{"error code echoing the secret", func(w http.ResponseWriter, _ *http.Request, _ int) {
			w.WriteHeader(400)
			fmt.Fprintf(w, `{"error":"bad_%s"}`, testSecret)
		}, "", 400},
		{"error code with junk", func(w http.ResponseWriter, _ *http.Request, _ int) {
			w.WriteHeader(400)
			fmt.Fprint(w, `{"error":"body-text\nX-Injected: 1"}`)
		}, "", 400},
		{"200 with an error object", func(w http.ResponseWriter, _ *http.Request, _ int) {
			fmt.Fprint(w, `{"error":"access_denied","error_description":"body-text"}`)
		}, "access_denied", 200},
		{"redirect not followed", func(w http.ResponseWriter, r *http.Request, _ int) {
			http.Redirect(w, r, "https://elsewhere.invalid/body-text", http.StatusTemporaryRedirect)
		}, "", 307},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newTokenEndpoint(t, tc.respond)
			_, err := e.newCC(t, newFakeClock()).Token(context.Background())
			var te *TokenError
			if !errors.As(err, &te) || te.StatusCode != tc.wantStat || te.Code != tc.wantCode {
				t.Fatalf("err = %#v (%v)", err, err)
			}
			if strings.Contains(err.Error(), testSecret) || strings.Contains(err.Error(), "body-text") {
				t.Fatalf("error leaks: %v", err)
			}
		})
	}
	malformed := []struct {
		name string
		ct   string
		body string
	}{
		{"html", "text/html", "<html>body-text " + testSecret + "</html>"},
		{"no access_token", "application/json", `{"token_type":"Bearer","note":"body-text"}`},
		{"mac token", "application/json", `{"access_token":"body-text","token_type":"mac"}`},
		{"control chars", "application/json", `{"access_token":"a\r\nb-body-text"}`},
	}
	for _, tc := range malformed {
		t.Run(tc.name, func(t *testing.T) {
			e := newTokenEndpoint(t, func(w http.ResponseWriter, _ *http.Request, _ int) {
				w.Header().Set("Content-Type", tc.ct)
				fmt.Fprint(w, tc.body)
			})
			_, err := e.newCC(t, newFakeClock()).Token(context.Background())
			if !errors.Is(err, ErrMalformedTokenResponse) {
				t.Fatalf("err = %v", err)
			}
			if strings.Contains(err.Error(), testSecret) || strings.Contains(err.Error(), "body-text") {
				t.Fatalf("error leaks: %v", err)
			}
		})
	}
	t.Run("transport error", func(t *testing.T) {
		srv := httptest.NewServer(http.NotFoundHandler())
		srv.Close()
		cc, err := NewClientCredentials(ClientCredentialsConfig{
			TokenURL: srv.URL + "/token?tenant=" + testSecret, ClientID: "id", ClientSecret: testSecret,
		})
		if err != nil {
			t.Fatal(err)
		}
		_, err = cc.Token(context.Background())
		if err == nil || strings.Contains(err.Error(), testSecret) {
			t.Fatalf("err = %v", err)
		}
	})
}

func TestTokenResponseShapes(t *testing.T) {
	cases := []struct {
		name, ct, body string
		wantLife       time.Duration
	}{
		{"string expires_in", "application/json", `{"access_token":"a","token_type":"bearer","expires_in":"120"}`, 120 * time.Second},
		{"no token_type, no expiry", "application/json", `{"access_token":"a"}`, 0},
		{"form encoded", "application/x-www-form-urlencoded", "access_token=a&token_type=bearer&expires_in=90&scope=read", 90 * time.Second},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newTokenEndpoint(t, func(w http.ResponseWriter, _ *http.Request, _ int) {
				w.Header().Set("Content-Type", tc.ct)
				fmt.Fprint(w, tc.body)
			})
			clock := newFakeClock()
			cc := e.newCC(t, clock)
			if tok := mustToken(t, cc); tok != "a" {
				t.Fatalf("token %q", tok)
			}
			cc.mu.Lock()
			cur := cc.cur
			cc.mu.Unlock()
			var life time.Duration
			if !cur.expiry.IsZero() {
				life = cur.expiry.Sub(cur.issued)
			}
			if life != tc.wantLife {
				t.Fatalf("lifetime %v, want %v", life, tc.wantLife)
			}
		})
	}
}

func TestNewClientCredentialsErrors(t *testing.T) {
	cases := []ClientCredentialsConfig{
		{TokenURL: "", ClientID: "a"},
		{TokenURL: "/relative", ClientID: "a"},
		{TokenURL: "ftp://x/token", ClientID: "a"},
		{TokenURL: "https://x/token", ClientID: " "},
		{TokenURL: "https://x/token", ClientID: "a", Scopes: []string{"read write"}},
	}
	for _, cfg := range cases {
		cfg.ClientSecret = testSecret
		_, err := NewClientCredentials(cfg)
		if err == nil || strings.Contains(err.Error(), testSecret) {
			t.Errorf("%+v: err = %v", cfg, err)
		}
	}
}

func TestHTTPClientIsCopied(t *testing.T) {
	called := false
	hc := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { called = true; return nil }}
	cc, err := NewClientCredentials(ClientCredentialsConfig{TokenURL: "https://x/token", ClientID: "a", HTTPClient: hc})
	if err != nil {
		t.Fatal(err)
	}
	if cc.client == hc || hc.CheckRedirect == nil {
		t.Fatal("the caller's client was modified")
	}
	_ = hc.CheckRedirect(nil, nil)
	if !called {
		t.Fatal("unexpected")
	}
	var _ TokenSource = cc
}

// A token URL may carry a credential in its path or query; a failed token
// request must not repeat it.
func TestTokenRequestErrorOmitsTheURL(t *testing.T) {
	const marker = "URL-SECRET-41d"
	cc, err := NewClientCredentials(ClientCredentialsConfig{TokenURL: "http://127.0.0.1:1/tenant/" + marker + "/token?k=" + marker,
		ClientID: "id", ClientSecret: testSecret})
	if err != nil {
		t.Fatal(err)
	}
	_, err = cc.Token(context.Background())
	if err == nil || strings.Contains(err.Error(), marker) || strings.Contains(err.Error(), testSecret) {
		t.Fatalf("err = %v, want a failure that names neither the URL nor the secret", err)
	}
}
