package e2e

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpgw/mcpgw/internal/app"
)

// vaultMarker is in every token the test authorization server issues: it must never reach the
// gateway's database file or its logs.
const vaultMarker = "VAULT-MARKER-5b1e"

// testAS is an OAuth authorization server speaking real HTTP: /authorize consents at once as
// the account set by consentAs and redirects back with a code; /token checks the code, the
// redirect_uri and the PKCE verifier, and refreshes; tokens live ttl.
type testAS struct {
	srv *httptest.Server
	ttl time.Duration

	mu        sync.Mutex
	consentAs string
	n         int
	codes     map[string]asCode
	access    map[string]asToken // access token → account and expiry
	refresh   map[string]string  // refresh token → account
	refreshes int
}

type asCode struct{ account, challenge, redirect string }
type asToken struct {
	account string
	expiry  time.Time
}

func newTestAS(t *testing.T, ttl time.Duration) *testAS {
	as := &testAS{ttl: ttl, codes: map[string]asCode{}, access: map[string]asToken{}, refresh: map[string]string{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /authorize", as.authorize)
	mux.HandleFunc("POST /token", as.token)
	as.srv = httptest.NewServer(mux)
	t.Cleanup(as.srv.Close)
	return as
}

func (as *testAS) authorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if q.Get("response_type") != "code" || q.Get("client_id") != "gw-client" || q.Get("code_challenge_method") != "S256" || q.Get("code_challenge") == "" {
		http.Error(w, "bad authorize request", http.StatusBadRequest)
		return
	}
	as.mu.Lock()
	as.n++
	code := fmt.Sprintf("code-%d", as.n)
	as.codes[code] = asCode{account: as.consentAs, challenge: q.Get("code_challenge"), redirect: q.Get("redirect_uri")}
	as.mu.Unlock()
	http.Redirect(w, r, q.Get("redirect_uri")+"?code="+code+"&state="+q.Get("state"), http.StatusFound)
}

func (as *testAS) issue(account string) map[string]any {
	as.n++
	at, rt := fmt.Sprintf("at-%s-%d-%s", account, as.n, vaultMarker), fmt.Sprintf("rt-%s-%d-%s", account, as.n, vaultMarker)
	as.access[at] = asToken{account: account, expiry: time.Now().Add(as.ttl)}
	as.refresh[rt] = account
	return map[string]any{"access_token": at, "refresh_token": rt, "token_type": "Bearer", "expires_in": as.ttl.Seconds()}
}

func (as *testAS) token(w http.ResponseWriter, r *http.Request) {
	_ = r.ParseForm()
	as.mu.Lock()
	defer as.mu.Unlock()
	refuse := func() {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(400)
		_, _ = w.Write([]byte(`{"error":"invalid_grant"}`))
	}
	if r.PostForm.Get("client_id") != "gw-client" || r.PostForm.Get("client_secret") != "gw-secret" {
		w.WriteHeader(401)
		return
	}
	var out map[string]any
	switch r.PostForm.Get("grant_type") {
	case "authorization_code":
		c, ok := as.codes[r.PostForm.Get("code")]
		delete(as.codes, r.PostForm.Get("code"))
		sum := sha256.Sum256([]byte(r.PostForm.Get("code_verifier")))
		if !ok || c.redirect != r.PostForm.Get("redirect_uri") || base64.RawURLEncoding.EncodeToString(sum[:]) != c.challenge {
			refuse()
			return
		}
		out = as.issue(c.account)
	case "refresh_token":
		account, ok := as.refresh[r.PostForm.Get("refresh_token")]
		if !ok {
			refuse()
			return
		}
		delete(as.refresh, r.PostForm.Get("refresh_token")) // rotated
		as.refreshes++
		out = as.issue(account)
	default:
		refuse()
		return
	}
	w.Header().Set("Content-Type", "application/json")
	b, _ := json.Marshal(out)
	_, _ = w.Write(b)
}

// revoke withdraws every token of account, as a user revoking the app at the provider does.
func (as *testAS) revoke(account string) {
	as.mu.Lock()
	defer as.mu.Unlock()
	for k, v := range as.access {
		if v.account == account {
			delete(as.access, k)
		}
	}
	for k, v := range as.refresh {
		if v == account {
			delete(as.refresh, k)
		}
	}
}

// accountOf is the account a live access token belongs to; "" when it is unknown or expired.
func (as *testAS) accountOf(token string) string {
	as.mu.Lock()
	defer as.mu.Unlock()
	t, ok := as.access[token]
	if !ok || time.Now().After(t.expiry) {
		return ""
	}
	return t.account
}

// vaultUpstream is a go-sdk MCP server behind StreamableHTTPHandler that admits only live
// tokens of as; its whoami tool names the account of the token the request carried.
func vaultUpstream(t *testing.T, as *testAS) string {
	server := sdk.NewServer(&sdk.Implementation{Name: "vaulted", Version: "1"}, nil)
	sdk.AddTool(server, &sdk.Tool{Name: "whoami", InputSchema: map[string]any{"type": "object"}},
		func(_ context.Context, req *sdk.CallToolRequest, _ map[string]any) (*sdk.CallToolResult, map[string]any, error) {
			account := as.accountOf(strings.TrimPrefix(req.Extra.Header.Get("Authorization"), "Bearer "))
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "account=" + account}}}, nil, nil
		})
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return server },
		&sdk.StreamableHTTPOptions{Stateless: true, DisableLocalhostProtection: true})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if as.accountOf(strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")) == "" {
			w.Header().Set("WWW-Authenticate", `Bearer error="invalid_token"`)
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/mcp"
}

// lockedBuffer collects the gateway's log lines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}
func (l *lockedBuffer) String() string { l.mu.Lock(); defer l.mu.Unlock(); return l.b.String() }

var authorizeLink = regexp.MustCompile(`http://[^\s"]+/gh/authorize\?ticket=[A-Za-z0-9_%-]+`)

// mustAuthorize calls whoami as key and expects the authorization-required answer; it
// returns the authorize URL the answer names.
func mustAuthorize(t *testing.T, gw, key string) string {
	t.Helper()
	status, body := callAs(t, gw, key, "gh-whoami")
	res, _ := body["result"].(map[string]any)
	text := fmt.Sprint(res["content"])
	link := authorizeLink.FindString(text)
	if status != 200 || res["isError"] != true || link == "" {
		t.Fatalf("a caller without a token: %d %v", status, body)
	}
	return link
}

// consent opens link in a browser (a client with a cookie jar following redirects) that
// consents as account at the authorization server.
func consent(t *testing.T, as *testAS, link, account string) {
	t.Helper()
	as.mu.Lock()
	as.consentAs = account
	as.mu.Unlock()
	jar, _ := cookiejar.New(nil)
	resp, err := (&http.Client{Jar: jar, Timeout: 10 * time.Second}).Get(link)
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(page), "Authorized") {
		t.Fatalf("consent flow ended with %d: %s", resp.StatusCode, page)
	}
}

func whoami(t *testing.T, gw, key string) string {
	t.Helper()
	status, body := callAs(t, gw, key, "gh-whoami")
	res, _ := body["result"].(map[string]any)
	if status != 200 || res == nil || res["isError"] == true {
		return fmt.Sprintf("failed: %d %v", status, body)
	}
	return strings.Trim(fmt.Sprint(res["content"]), "[]{}map")
}

// TestUpstreamAuthorizationCodeVault: a server whose credential is each user's own token.
// A caller without one is told where to authorize; the consent flow runs through the
// gateway's endpoints with a real browser-like client; each user's calls carry only their own
// token; tokens are refreshed before expiry while a legacy session holds its GET stream; a
// refusal drops one user's token only; tokens never reach the database file or the logs;
// the user's DELETE and /user/delete remove them.
// vaultGateway serves a gateway over an authorization-code server "gh" (tokens living ttl)
// with a data dir and captured logs, and users alice and bob.
func vaultGateway(t *testing.T, ttl time.Duration) (*gatewayUnderTest, *testAS, string, *lockedBuffer) {
	t.Helper()
	as := newTestAS(t, ttl)
	up := vaultUpstream(t, as)
	dir := t.TempDir()
	logs := &lockedBuffer{}
	gw := startGatewayWith(t, fmt.Sprintf(`mcp_servers:
  gh:
    url: %s
    transport: http
    auth_type: oauth2
    oauth2_flow: authorization_code
    client_id: gw-client
    client_secret: gw-secret
    authorization_url: %s/authorize
    token_url: %s/token
general_settings:
  master_key: %s
`, up, as.srv.URL, as.srv.URL, testKey), map[string]string{"LITELLM_SALT_KEY": "vault-test-salt"},
		app.WithDataDir(dir), app.WithLogger(slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))))
	for _, u := range []string{"alice", "bob"} {
		if status, m := manage(t, http.MethodPost, gw.url+"/user/new", testKey, `{"user_id":"`+u+`"}`); status != 200 {
			t.Fatalf("/user/new: %d %v", status, m)
		}
	}
	return gw, as, dir, logs
}

func TestUpstreamAuthorizationCodeVault(t *testing.T) {
	gw, as, dir, logs := vaultGateway(t, 3*time.Second)
	alice := generateKey(t, gw.url, `{"user_id":"alice"}`)
	bob := generateKey(t, gw.url, `{"user_id":"bob"}`)

	consent(t, as, mustAuthorize(t, gw.url, alice), "alice-account")
	if got := whoami(t, gw.url, alice); !strings.Contains(got, "account=alice-account") {
		t.Fatalf("alice after consent: %s", got)
	}
	mustAuthorize(t, gw.url, bob) // alice's token is not bob's
	consent(t, as, mustAuthorize(t, gw.url, bob), "bob-account")
	if got := whoami(t, gw.url, bob); !strings.Contains(got, "account=bob-account") {
		t.Fatalf("bob: %s", got)
	}

	// A legacy session holds its GET stream across two token lifetimes; its calls keep working.
	client := sdk.NewClient(&sdk.Implementation{Name: "held", Version: "1"}, nil)
	cs, err := client.Connect(context.Background(), &sdk.StreamableClientTransport{Endpoint: gw.url + "/mcp",
		HTTPClient: &http.Client{Transport: authTransport{alice}}}, &sdk.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	for i := 0; i < 4; i++ {
		res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "gh-whoami", Arguments: map[string]any{}})
		if err != nil || res.IsError || !strings.Contains(textOf(res), "account=alice-account") {
			t.Fatalf("held session call %d: %v %v", i, err, res)
		}
		time.Sleep(2 * time.Second)
	}
	as.mu.Lock()
	refreshed := as.refreshes
	as.mu.Unlock()
	if refreshed == 0 {
		t.Fatal("no token was refreshed across its expiry")
	}

	// Alice revokes the app at the provider: her token is dropped, bob keeps working.
	as.revoke("alice-account")
	mustAuthorize(t, gw.url, alice)
	if got := whoami(t, gw.url, bob); !strings.Contains(got, "account=bob-account") {
		t.Fatalf("bob after alice's refusal: %s", got)
	}

	// Bob deletes his own token; then /user/delete removes alice's fresh one.
	if status, m := manage(t, http.MethodDelete, gw.url+"/gh/token", bob, ""); status != 200 || m["deleted"] != true {
		t.Fatalf("DELETE /gh/token: %d %v", status, m)
	}
	mustAuthorize(t, gw.url, bob)
	consent(t, as, mustAuthorize(t, gw.url, alice), "alice-account")
	if status, m := manage(t, http.MethodPost, gw.url+"/user/delete", testKey, `{"user_ids":["alice"]}`); status != 200 {
		t.Fatalf("/user/delete: %d %v", status, m)
	}
	assertNoMarker(t, dir, logs.String())
}

// assertNoMarker checks that no token reached the database files or the logs.
func assertNoMarker(t *testing.T, dir, logs string) {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "mcpgw.db*"))
	if len(files) == 0 {
		t.Fatal("no database file")
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(b, []byte(vaultMarker)) {
			t.Fatalf("a token is in clear in %s", filepath.Base(f))
		}
	}
	if strings.Contains(logs, vaultMarker) || strings.Contains(logs, "gw-secret") {
		t.Fatal("a token or the client secret reached the logs")
	}
	if !strings.Contains(logs, "upstream OAuth token dropped") {
		t.Fatal("the refused token's drop was not logged")
	}
}

// TestUpstreamAuthorizationByURLElicitation: callers that declared URL-mode elicitation are
// sent to the authorize link by an elicitation. A 2025-11-25 session gets elicitation/create
// (mode url) mid-call; its user completes the flow in a browser and accepts, and the same call
// then runs with the new token. A 2026-07-28 caller gets input_required with the URL-mode
// request; after the flow, its retry runs the call.
func TestUpstreamAuthorizationByURLElicitation(t *testing.T) {
	gw, as, _, _ := vaultGateway(t, time.Hour)
	alice := generateKey(t, gw.url, `{"user_id":"alice"}`)
	bob := generateKey(t, gw.url, `{"user_id":"bob"}`)

	var asked []*sdk.ElicitParams
	client := sdk.NewClient(&sdk.Implementation{Name: "legacy-url", Version: "1"}, &sdk.ClientOptions{
		Capabilities: &sdk.ClientCapabilities{Elicitation: &sdk.ElicitationCapabilities{URL: &sdk.URLElicitationCapabilities{}}},
		ElicitationHandler: func(_ context.Context, req *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
			asked = append(asked, req.Params)
			consent(t, as, req.Params.URL, "alice-account")
			return &sdk.ElicitResult{Action: "accept"}, nil
		},
	})
	cs, err := client.Connect(context.Background(), &sdk.StreamableClientTransport{Endpoint: gw.url + "/mcp",
		HTTPClient: &http.Client{Transport: authTransport{alice}}, DisableStandaloneSSE: true}, &sdk.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "gh-whoami", Arguments: map[string]any{}})
	if err != nil || res.IsError || !strings.Contains(textOf(res), "account=alice-account") {
		t.Fatalf("legacy call after URL elicitation: %v %v", err, res)
	}
	if len(asked) != 1 || asked[0].Mode != "url" || !authorizeLink.MatchString(asked[0].URL) || asked[0].ElicitationID == "" {
		t.Fatalf("elicitations: %+v", asked)
	}

	call := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"gh-whoami","arguments":{},` + urlElicitMeta + `}}`
	status, _, body := rpc(t, gw.url+"/mcp", modernAs(bob, "tools/call", "gh-whoami"), call)
	res1, _ := body["result"].(map[string]any)
	req, _ := res1["inputRequests"].(map[string]any)["mcpgw/authorize"].(map[string]any)
	params, _ := req["params"].(map[string]any)
	link, _ := params["url"].(string)
	state, _ := res1["requestState"].(string)
	if status != 200 || res1["resultType"] != "input_required" || req["method"] != "elicitation/create" || params["mode"] != "url" || !authorizeLink.MatchString(link) || state == "" {
		t.Fatalf("modern call without a token: %d %v", status, body)
	}
	consent(t, as, link, "bob-account")
	retry := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"gh-whoami","arguments":{},` + urlElicitMeta +
		`,"inputResponses":{"mcpgw/authorize":{"action":"accept"}},"requestState":"` + state + `"}}`
	status, _, body = rpc(t, gw.url+"/mcp", modernAs(bob, "tools/call", "gh-whoami"), retry)
	if res2, _ := body["result"].(map[string]any); status != 200 || !strings.Contains(fmt.Sprint(res2["content"]), "account=bob-account") {
		t.Fatalf("modern retry after authorizing: %d %v", status, body)
	}
	// The flow endpoints refuse what does not name a user, a server or a flow of this browser.
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for _, c := range []struct {
		path, key string
		want      int
	}{
		{"/gh/authorize", "", 401}, {"/gh/authorize?ticket=forged", "", 401}, {"/nope/authorize", alice, 404},
		{"/callback?code=x&state=forged", "", 400}, {"/gh/authorize", alice, 302},
	} {
		req, _ := http.NewRequest(http.MethodGet, gw.url+c.path, nil)
		if c.key != "" {
			req.Header.Set("Authorization", "Bearer "+c.key)
		}
		resp, err := noRedirect.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != c.want || (c.want == 302 && !strings.HasPrefix(resp.Header.Get("Location"), as.srv.URL+"/authorize?")) {
			t.Fatalf("GET %s = %d (Location %q), want %d", c.path, resp.StatusCode, resp.Header.Get("Location"), c.want)
		}
	}
}
