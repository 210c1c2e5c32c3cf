package ui

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/mcpgw/mcpgw/internal/admit"
	"github.com/mcpgw/mcpgw/internal/app"
	"github.com/mcpgw/mcpgw/internal/config"
	"github.com/mcpgw/mcpgw/internal/testpeers"
)

// The example provider's users (testpeers.StartOIDCProvider): the first has the subject id1,
// the second id2; both sign in with the same password.
const (
	ssoAdminUser    = "test-user@localhost"
	ssoAdminSubject = "id1"
	ssoPlainUser    = "test-user2"
	ssoPassword     = "verysecure"
)

// startSSOGateway starts the zitadel example provider with the gateway's callback registered
// for its "web" client, then the gateway (store on) with the UI's SSO configured against it,
// and makes the provider's first user a proxy_admin in the gateway's user table (the role a
// JWT caller's stored user gives it). The gateway's listener exists before the provider starts,
// so the registered redirect URI names the gateway's real address.
func startSSOGateway(t *testing.T) (*gateway, *testpeers.Peer) {
	t.Helper()
	srv := httptest.NewUnstartedServer(nil)
	base := "http://" + srv.Listener.Addr().String()
	p := testpeers.StartOIDCProvider(t, base+"/ui/sso/callback")
	env := map[string]string{"GENERIC_CLIENT_ID": "web", "GENERIC_CLIENT_SECRET": "secret", "GENERIC_ISSUER": p.URL}
	yaml := fmt.Sprintf("general_settings:\n  master_key: %s\n  store_model_in_db: true\n", masterKey)
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	path := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, problems, err := config.Load(path, app.ConfigOptions(lookup))
	if err != nil {
		t.Fatalf("config: %v %v", err, problems)
	}
	a, err := app.New(cfg, app.WithLookupEnv(lookup), app.WithDataDir(t.TempDir()),
		app.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	if err != nil {
		t.Fatal(err)
	}
	srv.Config = a.Server()
	srv.Listener = admit.LimitListener(srv.Listener, cfg.General.HTTP.MaxConnections)
	srv.Start()
	a.Start()
	t.Cleanup(func() {
		a.Drain()
		srv.CloseClientConnections()
		srv.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = a.Close(ctx)
	})
	g := &gateway{url: srv.URL}
	if s, b := g.api(t, masterKey, "POST", "/user/new", `{"user_id":"`+ssoAdminSubject+`","user_role":"proxy_admin"}`); s != 200 {
		t.Fatalf("/user/new = %d %s", s, b)
	}
	return g, p
}

// ssoSignInInBrowser starts SSO from the sign-in page and signs user in on the provider's
// own login form.
func ssoSignInInBrowser(t *testing.T, ctx context.Context, g *gateway, user string) {
	t.Helper()
	run(t, ctx, "the sign-in page offers SSO", chromedp.Navigate(g.url+"/ui/login"), chromedp.WaitVisible(chromedp.ID("sso")))
	run(t, ctx, "to the provider's login form", chromedp.Click(chromedp.ID("sso")), chromedp.WaitVisible(chromedp.ID("username")))
	run(t, ctx, "sign in at the provider", chromedp.SendKeys(chromedp.ID("username"), user),
		chromedp.SendKeys(chromedp.ID("password"), ssoPassword), chromedp.Click(chromedp.CSS(`button[type="submit"]`)))
}

// TestUISSOSignInInBrowser: in chromium, "Sign in with SSO" leads to the real provider's login
// page; its admin user lands on the servers page, signed in as that identity, and creates a
// key through the UI as that identity; after signing out, the provider's other user, whose
// stored role is not proxy_admin, gets a page saying so and no session.
func TestUISSOSignInInBrowser(t *testing.T) {
	g, _ := startSSOGateway(t)
	ctx := newBrowser(t)
	dir := artifacts(t)

	run(t, ctx, "sign-in page", chromedp.Navigate(g.url+"/ui/login"), chromedp.WaitVisible(chromedp.ID("sso")))
	screenshot(t, ctx, dir, "login-sso")
	ssoSignInInBrowser(t, ctx, g, ssoAdminUser)
	waitText(t, ctx, "land on the servers page, signed in as the provider's admin user", "header .who", ssoAdminSubject)
	if at := evaluate[string](t, ctx, "the page's address", "location.pathname"); at != "/ui/servers" {
		t.Fatalf("after SSO sign-in the browser is at %s", at)
	}
	// The SSO session drives the management API as its identity.
	run(t, ctx, "keys page", chromedp.Navigate(g.url+"/ui/keys"), chromedp.WaitVisible(chromedp.CSS(`#new-key input[name="key_alias"]`)))
	run(t, ctx, "create a key as the SSO admin", chromedp.SendKeys(chromedp.CSS(`#new-key input[name="key_alias"]`), "made-by-sso"),
		chromedp.Click(chromedp.ID("create-key")), chromedp.WaitVisible(chromedp.ID("secret")))
	waitText(t, ctx, "the new key in the list", "#keys tbody", "made-by-sso")
	screenshot(t, ctx, dir, "servers-sso")

	run(t, ctx, "sign out", chromedp.Navigate(g.url+"/ui/servers"), chromedp.WaitVisible(chromedp.CSS(`header form button`)),
		chromedp.Click(chromedp.CSS(`header form button`)), chromedp.WaitVisible(chromedp.ID("sso")))
	ssoSignInInBrowser(t, ctx, g, ssoPlainUser)
	run(t, ctx, "the refusal page", chromedp.WaitVisible(chromedp.ID("sso-error")))
	msg := waitText(t, ctx, "the refusal says why", "#sso-error", "not a proxy admin")
	if !strings.Contains(msg, ssoPlainUser) && !strings.Contains(msg, "id2") {
		t.Errorf("the refusal %q does not name the identity", msg)
	}
	screenshot(t, ctx, dir, "sso-refused")
	run(t, ctx, "no session", chromedp.Navigate(g.url+"/ui/servers"), chromedp.WaitVisible(chromedp.ID("key")))
}

// ssoClient is a browser as plain HTTP: a cookie jar, redirects shown not followed.
func ssoClient(t *testing.T) *http.Client {
	t.Helper()
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &http.Client{Jar: jar, Timeout: 30 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// redirectOf sends req and returns the Location of its redirect answer.
func redirectOf(t *testing.T, c *http.Client, method, u string, form url.Values) *url.URL {
	t.Helper()
	var resp *http.Response
	var err error
	if method == http.MethodPost {
		resp, err = c.PostForm(u, form)
	} else {
		resp, err = c.Get(u)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusFound && resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("%s %s = %d, want a redirect: %.300s", method, resp.Request.URL.Path, resp.StatusCode, b)
	}
	loc, err := resp.Request.URL.Parse(resp.Header.Get("Location"))
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

// ssoCallbackURL runs a sign-in over plain HTTP up to the provider's redirect back to the
// gateway and returns that callback URL, not yet visited.
func ssoCallbackURL(t *testing.T, c *http.Client, g *gateway, user string) *url.URL {
	t.Helper()
	authz := redirectOf(t, c, http.MethodGet, g.url+"/ui/sso/start", nil)
	login := redirectOf(t, c, http.MethodGet, authz.String(), nil)
	cb := redirectOf(t, c, http.MethodPost, login.String(), url.Values{"username": {user}, "password": {ssoPassword},
		"id": {login.Query().Get("authRequestID")}})
	back := redirectOf(t, c, http.MethodGet, cb.String(), nil)
	if !strings.HasPrefix(back.String(), g.url+"/ui/sso/callback?") || back.Query().Get("code") == "" {
		t.Fatalf("the provider sent the browser to %s", back.Redacted())
	}
	return back
}

// visit GETs u and returns the status and body.
func visit(t *testing.T, c *http.Client, u string) (int, string) {
	t.Helper()
	resp, err := c.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestUISSOStateIsSingleUseAndBound: against the real provider, a callback whose state names
// no pending sign-in is refused; the real callback signs in; the same callback replayed is
// refused; and a callback presented by another browser (without the cookie binding the
// sign-in to the browser that started it) is refused, after which the state is spent.
func TestUISSOStateIsSingleUseAndBound(t *testing.T) {
	g, _ := startSSOGateway(t)
	c := ssoClient(t)
	back := ssoCallbackURL(t, c, g, ssoAdminUser)

	forged := *back
	q := forged.Query()
	q.Set("state", strings.Repeat("ab", 32))
	forged.RawQuery = q.Encode()
	if s, body := visit(t, c, forged.String()); s != http.StatusBadRequest || !strings.Contains(body, "Start again") {
		t.Fatalf("callback with a state of no pending sign-in = %d %.200s", s, body)
	}
	resp, err := c.Get(back.String())
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), "Signed in as") {
		t.Fatalf("the real callback = %d %.300s", resp.StatusCode, b)
	}
	var session string
	for _, sc := range resp.Header.Values("Set-Cookie") {
		if strings.HasPrefix(sc, "mcpgw_ui=") {
			session = sc
		}
	}
	for _, attr := range []string{"HttpOnly", "SameSite=Strict", "Path=/ui"} {
		if !strings.Contains(session, attr) {
			t.Errorf("session cookie %q lacks %s", session, attr)
		}
	}
	if s, _ := visit(t, c, g.url+"/ui/servers"); s != http.StatusOK {
		t.Fatalf("GET /ui/servers after SSO sign-in = %d", s)
	}
	if s, body := visit(t, ssoClient(t), back.String()); s != http.StatusBadRequest {
		t.Fatalf("the callback replayed by another browser = %d %.200s", s, body)
	}
	if s, body := visit(t, c, back.String()); s != http.StatusBadRequest {
		t.Fatalf("the callback replayed = %d %.200s", s, body)
	}

	other := ssoClient(t)
	back2 := ssoCallbackURL(t, c, g, ssoAdminUser)
	if s, _ := visit(t, other, back2.String()); s != http.StatusBadRequest {
		t.Fatalf("a callback in a browser that did not start the sign-in = %d", s)
	}
	if s, _ := visit(t, c, back2.String()); s != http.StatusBadRequest {
		t.Fatalf("the state presented to another browser is spent, yet its own browser = %d", s)
	}
	if s, _, _ := do(t, "GET", g.url+"/ui/sso/start", map[string]string{"Sec-Fetch-Site": "cross-site"}, ""); s != http.StatusForbidden {
		t.Fatalf("a sign-in started by another site = %d, want 403", s)
	}
}
