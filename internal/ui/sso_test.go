package ui

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"

	"github.com/mcpgw/mcpgw/internal/identity"
)

// clock is a settable clock shared by the UI's sessions, the SSO state and the token verifier.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// fakeOP is an OpenID provider over real HTTP whose token endpoint answers an ID token the
// test mints: the faults a real provider will not produce (forged, expired, foreign tokens).
type fakeOP struct {
	srv       *httptest.Server
	key, evil *rsa.PrivateKey
	mu        sync.Mutex
	challenge string // the last authorization request's PKCE challenge
	nonce     string // and its nonce
	mint      func(nonce string) string
	pkceOK    bool // the last code exchange carried the verifier of the challenge
}

func newFakeOP(t *testing.T) *fakeOP {
	t.Helper()
	op := &fakeOP{}
	var err error
	if op.key, err = rsa.GenerateKey(rand.Reader, 2048); err != nil {
		t.Fatal(err)
	}
	if op.evil, err = rsa.GenerateKey(rand.Reader, 2048); err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/openid-configuration", func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewEncoder(w).Encode(map[string]any{"issuer": op.srv.URL, "authorization_endpoint": op.srv.URL + "/auth",
			"token_endpoint": op.srv.URL + "/token", "jwks_uri": op.srv.URL + "/keys",
			"id_token_signing_alg_values_supported": []string{"RS256"}})
	})
	mux.HandleFunc("GET /keys", func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewEncoder(w).Encode(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &op.key.PublicKey, KeyID: "k1", Algorithm: "RS256", Use: "sig"}}})
	})
	mux.HandleFunc("POST /token", func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		sum := sha256.Sum256([]byte(r.PostForm.Get("code_verifier")))
		op.mu.Lock()
		op.pkceOK = base64.RawURLEncoding.EncodeToString(sum[:]) == op.challenge
		tok := op.mint(op.nonce)
		op.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"access_token": "at", "token_type": "Bearer", "id_token": tok})
	})
	op.srv = httptest.NewServer(mux)
	t.Cleanup(op.srv.Close)
	return op
}

// sign makes a JWT of claims signed by key with kid k1.
func sign(t *testing.T, key *rsa.PrivateKey, claims map[string]any) string {
	t.Helper()
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: key}, (&jose.SignerOptions{}).WithHeader("kid", "k1").WithType("JWT"))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(claims)
	obj, err := s.Sign(b)
	if err != nil {
		t.Fatal(err)
	}
	out, err := obj.CompactSerialize()
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// ssoHarness is the UI with SSO against a fakeOP, served over real HTTP. Its API answers the
// user id the gateway's authenticator establishes for the request.
type ssoHarness struct {
	op    *fakeOP
	ui    *httptest.Server
	clock *clock
	sess  *Sessions
}

func newSSOHarness(t *testing.T) *ssoHarness {
	t.Helper()
	h := &ssoHarness{op: newFakeOP(t), clock: &clock{t: time.Now()}}
	sso, err := NewSSO(SSOConfig{Issuer: h.op.srv.URL, ClientID: "ui-client", ClientSecret: "s", Now: h.clock.now})
	if err != nil {
		t.Fatal(err)
	}
	h.sess = NewSessions(0, 0, 0)
	h.sess.now = h.clock.now
	authn, err := identity.New(identity.Config{MasterKey: "sk-a-strong-master-key-for-tests-9"})
	if err != nil {
		t.Fatal(err)
	}
	api := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := authn.Authenticate(r.Context(), r, "test")
		if err != nil {
			http.Error(w, err.Error(), http.StatusUnauthorized)
			return
		}
		_, _ = io.WriteString(w, "caller="+c.UserID)
	})
	rule := identity.NewClaimRule(identity.JWTConfig{AdminScope: "litellm_proxy_admin"})
	mux := http.NewServeMux()
	New(Config{Sessions: h.sess, SSO: sso, Claims: rule.Caller, API: api,
		Auth: func(context.Context, *http.Request, string) (*identity.Caller, error) { return nil, errNotAdmin{} }}).Register(mux)
	h.ui = httptest.NewServer(mux)
	t.Cleanup(h.ui.Close)
	return h
}

func newJarClient(t *testing.T) *http.Client {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	return &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

func get(t *testing.T, c *http.Client, u string) (*http.Response, string) {
	t.Helper()
	resp, err := c.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// signIn starts a sign-in, checks the authorization request, and completes it with the ID
// token mint makes; it returns the callback's status and body.
func (h *ssoHarness) signIn(t *testing.T, c *http.Client, mint func(nonce string) string) (int, string) {
	t.Helper()
	resp, _ := get(t, c, h.ui.URL+"/ui/sso/start")
	loc, err := url.Parse(resp.Header.Get("Location"))
	if err != nil || resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(loc.String(), h.op.srv.URL+"/auth?") {
		t.Fatalf("start = %d → %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	q := loc.Query()
	if q.Get("client_id") != "ui-client" || q.Get("response_type") != "code" || q.Get("code_challenge_method") != "S256" ||
		q.Get("redirect_uri") != h.ui.URL+"/ui/sso/callback" || len(q.Get("state")) < 32 || len(q.Get("nonce")) < 32 ||
		!strings.Contains(q.Get("scope"), "openid") {
		t.Fatalf("authorization request %v", q)
	}
	h.op.mu.Lock()
	h.op.challenge, h.op.nonce, h.op.mint = q.Get("code_challenge"), q.Get("nonce"), mint
	h.op.mu.Unlock()
	resp, body := get(t, c, h.ui.URL+"/ui/sso/callback?code=c1&state="+url.QueryEscape(q.Get("state")))
	return resp.StatusCode, body
}

// claims are an admin's ID token claims for the harness, changed by edit.
func (h *ssoHarness) claims(nonce string, edit func(map[string]any)) map[string]any {
	now := h.clock.now()
	m := map[string]any{"iss": h.op.srv.URL, "aud": "ui-client", "sub": "alice", "nonce": nonce,
		"iat": now.Unix(), "exp": now.Add(10 * time.Minute).Unix(), "scope": "openid litellm_proxy_admin"}
	if edit != nil {
		edit(m)
	}
	return m
}

// TestSSORefusesBadIDTokens: over real HTTP against an in-process provider, the code exchange
// sends the PKCE verifier; an admin's valid ID token signs in and the UI's API acts as that
// identity; an ID token signed by another key, expired, for another audience, from another
// issuer, with another nonce or unsigned is refused with no session; a valid token of an
// identity that is not the proxy admin gets a page saying so, and no session either.
func TestSSORefusesBadIDTokens(t *testing.T) {
	h := newSSOHarness(t)
	bad := map[string]func(nonce string) string{
		"forged": func(n string) string { return sign(t, h.op.evil, h.claims(n, nil)) },
		"expired": func(n string) string {
			return sign(t, h.op.key, h.claims(n, func(m map[string]any) { m["exp"] = h.clock.now().Add(-time.Minute).Unix() }))
		},
		"foreign audience": func(n string) string {
			return sign(t, h.op.key, h.claims(n, func(m map[string]any) { m["aud"] = "another-client" }))
		},
		"foreign issuer": func(n string) string {
			return sign(t, h.op.key, h.claims(n, func(m map[string]any) { m["iss"] = "https://elsewhere.example" }))
		},
		"wrong nonce": func(string) string { return sign(t, h.op.key, h.claims("not-the-nonce", nil)) },
		"unsigned": func(n string) string {
			b, _ := json.Marshal(h.claims(n, nil))
			return base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"none","typ":"JWT"}`)) + "." + base64.RawURLEncoding.EncodeToString(b) + "."
		},
	}
	for name, mint := range bad {
		c := newJarClient(t)
		status, body := h.signIn(t, c, mint)
		if status != http.StatusUnauthorized || !strings.Contains(body, "could not be verified") {
			t.Errorf("%s ID token: %d %.200s", name, status, body)
		}
		if resp, _ := get(t, c, h.ui.URL+"/ui/servers"); resp.StatusCode != http.StatusSeeOther {
			t.Errorf("%s ID token: /ui/servers = %d, want the sign-in page", name, resp.StatusCode)
		}
	}
	if h.sess.Len() != 0 {
		t.Fatalf("%d sessions after refused sign-ins", h.sess.Len())
	}

	c := newJarClient(t)
	status, body := h.signIn(t, c, func(n string) string {
		return sign(t, h.op.key, h.claims(n, func(m map[string]any) { m["sub"] = "bob"; m["scope"] = "openid" }))
	})
	if status != http.StatusForbidden || !strings.Contains(body, "bob") || !strings.Contains(body, "not a proxy admin") || h.sess.Len() != 0 {
		t.Fatalf("a non-admin identity: %d %.300s (%d sessions)", status, body, h.sess.Len())
	}

	status, body = h.signIn(t, c, func(n string) string { return sign(t, h.op.key, h.claims(n, nil)) })
	h.op.mu.Lock()
	pkce := h.op.pkceOK
	h.op.mu.Unlock()
	if status != http.StatusOK || !strings.Contains(body, "Signed in as alice") || !pkce {
		t.Fatalf("an admin's valid ID token: %d (PKCE verifier sent: %v) %.300s", status, pkce, body)
	}
	if resp, body := get(t, c, h.ui.URL+"/ui/api/key/list"); resp.StatusCode != 200 || body != "caller=alice" {
		t.Fatalf("the UI's API as the SSO identity: %d %q", resp.StatusCode, body)
	}
}

// TestSSOSessionEndsAtIDTokenExpiry: an SSO session in use ends when its ID token expires,
// although neither its idle time nor its lifetime has passed; its API calls end with it.
func TestSSOSessionEndsAtIDTokenExpiry(t *testing.T) {
	h := newSSOHarness(t)
	c := newJarClient(t)
	status, _ := h.signIn(t, c, func(n string) string {
		return sign(t, h.op.key, h.claims(n, func(m map[string]any) { m["exp"] = h.clock.now().Add(5 * time.Minute).Unix() }))
	})
	if status != http.StatusOK {
		t.Fatalf("sign-in = %d", status)
	}
	for i := 0; i < 4; i++ {
		if resp, _ := get(t, c, h.ui.URL+"/ui/servers"); resp.StatusCode != 200 {
			t.Fatalf("in use after %d min: %d", i, resp.StatusCode)
		}
		h.clock.add(time.Minute)
	}
	h.clock.add(time.Minute + time.Second)
	if resp, _ := get(t, c, h.ui.URL+"/ui/servers"); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("after the ID token's expiry: %d, want the sign-in page", resp.StatusCode)
	}
	if resp, _ := get(t, c, h.ui.URL+"/ui/api/key/list"); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("the API after the ID token's expiry: %d", resp.StatusCode)
	}
}

// TestSSOPendingSignInsAreBounded: beyond MaxPending the oldest pending sign-in is forgotten,
// one older than PendingTTL is refused, and a state is good once.
func TestSSOPendingSignInsAreBounded(t *testing.T) {
	ck := &clock{t: time.Unix(1_000_000, 0)}
	s, err := NewSSO(SSOConfig{Issuer: "https://op.example", ClientID: "c", MaxPending: 2, PendingTTL: time.Minute, Now: ck.now})
	if err != nil {
		t.Fatal(err)
	}
	p := &ssoProvider{}
	st1, b1, _ := s.begin(p, "https://gw.example/ui/sso/callback")
	ck.add(time.Second)
	st2, b2, _ := s.begin(p, "https://gw.example/ui/sso/callback")
	ck.add(time.Second)
	st3, b3, _ := s.begin(p, "https://gw.example/ui/sso/callback")
	if s.Pending() != 2 || s.take(st1, b1) != nil {
		t.Fatalf("pending %d, the oldest still there: %v", s.Pending(), s.take(st1, b1) != nil)
	}
	if s.take(st2, b3) != nil || s.take(st2, b2) != nil {
		t.Fatal("a state taken with another browser's binding, or again after that")
	}
	ck.add(2 * time.Minute)
	if s.take(st3, b3) != nil || s.Pending() != 0 {
		t.Fatalf("an expired sign-in was taken (pending %d)", s.Pending())
	}
	st4, b4, _ := s.begin(p, "https://gw.example/ui/sso/callback")
	if s.take(st4, b4) == nil || s.take(st4, b4) != nil {
		t.Fatal("a fresh state is not good exactly once")
	}
}
