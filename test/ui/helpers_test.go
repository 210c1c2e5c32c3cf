package ui

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mcpgw/mcpgw/internal/app"
	"github.com/mcpgw/mcpgw/internal/app/apptest"
	"github.com/mcpgw/mcpgw/internal/config"
	"github.com/mcpgw/mcpgw/internal/testpeers"
)

const (
	masterKey = "sk-ui-test-master-key-0123"
	// marker is a server credential that must never reach the browser.
	marker = "MARKER-upstream-secret-9f3b2c"
)

// gateway is a gateway under test.
type gateway struct {
	url string
}

// startGateway starts a gateway with the store on, one config server
// ("secretive", on the go-sdk fixture, with a marker credential) and the
// given extra environment.
func startGateway(t *testing.T, env map[string]string) (*gateway, string) {
	t.Helper()
	return startGatewayWith(t, env, "")
}

// startGatewayWith is startGateway with more servers: servers is YAML
// appended under mcp_servers (indented by two spaces).
func startGatewayWith(t *testing.T, env map[string]string, servers string) (*gateway, string) {
	t.Helper()
	fixture := testpeers.StartGoFixtureHTTP(t, false)
	yaml := fmt.Sprintf(`general_settings:
  master_key: %s
  store_model_in_db: true
  mcp_preview_allow_private_networks: true
mcp_servers:
  secretive:
    url: %s
    auth_type: bearer_token
    auth_value: %s
%s`, masterKey, fixture, marker, servers)
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
	base, _ := apptest.Serve(t, a, cfg.General.HTTP.MaxConnections)
	return &gateway{url: base}, fixture
}

// noRedirect is a client that shows redirects instead of following them.
var noRedirect = &http.Client{Timeout: 30 * time.Second,
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

// do sends one request and returns its status, headers and body.
func do(t *testing.T, method, u string, hdr map[string]string, body string) (int, http.Header, string) {
	t.Helper()
	req, err := http.NewRequest(method, u, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := noRedirect.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

// api calls a gateway route directly with key.
func (g *gateway) api(t *testing.T, key, method, route, body string) (int, string) {
	t.Helper()
	status, _, b := do(t, method, g.url+route, map[string]string{"Authorization": "Bearer " + key, "Content-Type": "application/json"}, body)
	return status, b
}

// generateKey mints a key with the master key and returns its secret and token.
func (g *gateway) generateKey(t *testing.T, body string) (secret, token string) {
	t.Helper()
	status, b := g.api(t, masterKey, "POST", "/key/generate", body)
	if status != 200 {
		t.Fatalf("/key/generate = %d %s", status, b)
	}
	var out struct{ Key, Token string }
	if err := json.Unmarshal([]byte(b), &out); err != nil {
		t.Fatal(err)
	}
	return out.Key, out.Token
}

var (
	formCSRF = regexp.MustCompile(`name="csrf" value="([0-9a-f]+)"`)
	metaCSRF = regexp.MustCompile(`name="csrf-token" content="([0-9a-f]+)"`)
)

// browser is a signed-in (or signing-in) session as plain HTTP: its cookie
// and CSRF token.
type browser struct {
	g      *gateway
	cookie string
	csrf   string
}

// signIn signs in with key the way the form does and reports the status
// of the POST; on success the browser holds the session and its token.
func (g *gateway) signIn(t *testing.T, key string) (*browser, int) {
	t.Helper()
	status, h, body := do(t, "GET", g.url+"/ui/login", nil, "")
	if status != 200 {
		t.Fatalf("GET /ui/login = %d", status)
	}
	m := formCSRF.FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("no csrf field in the login form: %s", body)
	}
	pre := cookieOf(h, "mcpgw_ui_login")
	form := url.Values{"key": {key}, "csrf": {m[1]}}.Encode()
	status, h, _ = do(t, "POST", g.url+"/ui/login", map[string]string{
		"Content-Type": "application/x-www-form-urlencoded", "Origin": g.url, "Sec-Fetch-Site": "same-origin",
		"Cookie": "mcpgw_ui_login=" + pre}, form)
	b := &browser{g: g}
	if status != http.StatusSeeOther {
		return b, status
	}
	sc := h.Get("Set-Cookie")
	for _, c := range h.Values("Set-Cookie") {
		if strings.HasPrefix(c, "mcpgw_ui=") {
			sc = c
		}
	}
	for _, attr := range []string{"HttpOnly", "SameSite=Strict", "Path=/ui"} {
		if !strings.Contains(sc, attr) {
			t.Errorf("session cookie %q lacks %s", sc, attr)
		}
	}
	b.cookie = cookieOf(h, "mcpgw_ui")
	status, _, page := b.get(t, "/ui/servers")
	if status != 200 {
		t.Fatalf("GET /ui/servers after sign-in = %d", status)
	}
	if m := metaCSRF.FindStringSubmatch(page); m != nil {
		b.csrf = m[1]
	}
	return b, http.StatusSeeOther
}

func cookieOf(h http.Header, name string) string {
	for _, c := range (&http.Response{Header: h}).Cookies() {
		if c.Name == name {
			return c.Value
		}
	}
	return ""
}

// get fetches a UI path with the session.
func (b *browser) get(t *testing.T, path string) (int, http.Header, string) {
	t.Helper()
	return do(t, "GET", b.g.url+path, map[string]string{"Cookie": "mcpgw_ui=" + b.cookie}, "")
}

// post sends a state-changing request with the session and the given
// extra headers (the CSRF token and origin are the caller's to set).
func (b *browser) post(t *testing.T, path, body string, hdr map[string]string) (int, string) {
	t.Helper()
	all := map[string]string{"Cookie": "mcpgw_ui=" + b.cookie, "Content-Type": "application/json"}
	for k, v := range hdr {
		all[k] = v
	}
	status, _, out := do(t, "POST", b.g.url+path, all, body)
	return status, out
}

// sameOriginHeaders are what a page of the UI sends with a fetch.
func (b *browser) sameOriginHeaders() map[string]string {
	return map[string]string{"Origin": b.g.url, "Sec-Fetch-Site": "same-origin", "X-CSRF-Token": b.csrf}
}
