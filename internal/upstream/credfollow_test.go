package upstream

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpgw/mcpgw/internal/upstream/auth"
)

// tokenServer is an OAuth2 token endpoint that records every form it gets
// and answers the first request with a token granting "read write" and the
// later ones as renew says.
type tokenServer struct {
	srv   *httptest.Server
	mu    sync.Mutex
	forms []url.Values
	hits  atomic.Int32
	renew atomic.Pointer[func(w http.ResponseWriter, n int)]
}

// grant answers a bearer token with the given lifetime and scope.
func grant(expiresIn int, scope string) func(http.ResponseWriter, int) {
	return func(w http.ResponseWriter, n int) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"access_token":"tok-%d","token_type":"Bearer","expires_in":%d,"scope":%q}`, n, expiresIn, scope)
	}
}

func newTokenServer(t *testing.T, expiresIn int) *tokenServer {
	ts := &tokenServer{}
	ts.setRenew(grant(expiresIn, "read write"))
	ts.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		n := int(ts.hits.Add(1))
		ts.mu.Lock()
		ts.forms = append(ts.forms, r.PostForm)
		ts.mu.Unlock()
		if n == 1 {
			grant(expiresIn, "read write")(w, n)
			return
		}
		(*ts.renew.Load())(w, n)
	}))
	t.Cleanup(ts.srv.Close)
	return ts
}

func (ts *tokenServer) setRenew(f func(http.ResponseWriter, int)) { ts.renew.Store(&f) }

// sameForms fails unless every token request carried the client's form.
func (ts *tokenServer) sameForms(t *testing.T) {
	t.Helper()
	ts.mu.Lock()
	defer ts.mu.Unlock()
	want := url.Values{"grant_type": {"client_credentials"}, "client_id": {"subscription-service"},
		"client_secret": {"synthetic-client-secret"}, "scope": {"read write"}}
	for i, f := range ts.forms {
		if f.Encode() != want.Encode() {
			t.Fatalf("token request %d carried %v, want %v", i+1, f, want)
		}
	}
}

// credentialClient is a client of a go-sdk 2026-07-28 upstream whose
// credential the token server mints.
func credentialClient(t *testing.T, ts *tokenServer) *Client {
	srv := sdk.NewServer(&sdk.Implementation{Name: "renewal-peer", Version: "1"}, nil)
	srv.AddTool(&sdk.Tool{Name: "echo", InputSchema: map[string]any{"type": "object"}}, func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		return &sdk.CallToolResult{}, nil
	})
	peer := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv },
		&sdk.StreamableHTTPOptions{Stateless: true, JSONResponse: true}))
	t.Cleanup(peer.Close)
	return newClient(t, Config{Name: "peer", URL: peer.URL, ProtocolVersion: "2026-07-28",
		Auth: auth.PolicyConfig{AuthType: "oauth2"},
		OAuth2: &auth.ClientCredentialsConfig{TokenURL: ts.srv.URL, ClientID: "subscription-service",
			ClientSecret: "synthetic-client-secret", Scopes: []string{"read", "write"}}})
}

// While a follow holds the upstream, its minted credential is renewed
// before expiry without any call asking for it, always with the same form,
// and the follow survives; with no follower left, nothing renews it.
func TestFollowRenewsTheCredentialProactively(t *testing.T) {
	ts := newTokenServer(t, 2) // renewed at half-life, 1 s
	c := credentialClient(t, ts)
	fctx, release, err := c.FollowContext(context.Background(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, 4*time.Second, "no proactive renewal", func() bool { return ts.hits.Load() >= 3 })
	if fctx.Err() != nil {
		t.Fatalf("the follow ended on a good renewal: %v", context.Cause(fctx))
	}
	ts.sameForms(t)
	release()
	after := ts.hits.Load()
	stays(t, 2500*time.Millisecond, "the credential was still renewed with nobody following", func() bool { return ts.hits.Load() == after })
}

// A renewal that grants fewer scopes than the follow started with ends the
// follow (ErrCredentialLost); a follow that started with the narrowed grant
// is not ended by the next narrowed renewal.
func TestFollowEndsWhenRenewalNarrowsScopes(t *testing.T) {
	ts := newTokenServer(t, 2)
	ts.setRenew(grant(2, "read"))
	c := credentialClient(t, ts)
	fctx, release, err := c.FollowContext(context.Background(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	select {
	case <-fctx.Done():
	case <-time.After(4 * time.Second):
		t.Fatal("the follow survived a narrowed renewal")
	}
	if !errors.Is(context.Cause(fctx), ErrCredentialLost) {
		t.Fatalf("cause %v, want ErrCredentialLost", context.Cause(fctx))
	}
	ts.sameForms(t)

	narrowed, release2, err := c.FollowContext(context.Background(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer release2()
	hits := ts.hits.Load()
	waitFor(t, 4*time.Second, "no further renewal", func() bool { return ts.hits.Load() > hits })
	time.Sleep(100 * time.Millisecond)
	if narrowed.Err() != nil {
		t.Fatalf("a follow that started narrowed ended on the same narrowing: %v", context.Cause(narrowed))
	}
}

// A renewal the token endpoint refuses (401 invalid_client) ends the follow.
func TestFollowEndsWhenRenewalIsRefused(t *testing.T) {
	ts := newTokenServer(t, 2)
	ts.setRenew(func(w http.ResponseWriter, _ int) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprint(w, `{"error":"invalid_client"}`)
	})
	c := credentialClient(t, ts)
	fctx, release, err := c.FollowContext(context.Background(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	select {
	case <-fctx.Done():
	case <-time.After(4 * time.Second):
		t.Fatal("the follow survived a refused renewal")
	}
	if !errors.Is(context.Cause(fctx), ErrCredentialLost) {
		t.Fatalf("cause %v, want ErrCredentialLost", context.Cause(fctx))
	}
	ts.sameForms(t)
}

// A renewal failing in a way the endpoint may recover from (503) does not
// end the follow while the token is still valid; once no unexpired token
// is left, it does.
func TestFollowSurvivesTransientRenewalFailureUntilExpiry(t *testing.T) {
	ts := newTokenServer(t, 4) // renewed at 2 s, expires at 4 s
	ts.setRenew(func(w http.ResponseWriter, _ int) { w.WriteHeader(http.StatusServiceUnavailable) })
	c := credentialClient(t, ts)
	start := time.Now()
	fctx, release, err := c.FollowContext(context.Background(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	waitFor(t, 5*time.Second, "no retried renewal", func() bool { return ts.hits.Load() >= 3 })
	if time.Since(start) < 3500*time.Millisecond && fctx.Err() != nil {
		t.Fatalf("the follow ended on a transient failure of a valid token: %v", context.Cause(fctx))
	}
	select {
	case <-fctx.Done():
	case <-time.After(6 * time.Second):
		t.Fatal("the follow outlived its expired credential")
	}
	if !errors.Is(context.Cause(fctx), ErrCredentialLost) {
		t.Fatalf("cause %v, want ErrCredentialLost", context.Cause(fctx))
	}
}
