package e2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpgw/mcpgw/internal/testpeers"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// oidcRedirect is the redirect URI registered at the test provider; nothing listens there:
// the sign-in reads the code from the redirect without following it.
const oidcRedirect = "http://localhost:9/callback"

// noFollow is an HTTP client that returns redirects instead of following them.
var noFollow = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

// discovery reads the provider's OpenID configuration.
func discovery(t *testing.T, issuer string) map[string]any {
	t.Helper()
	resp, err := http.Get(issuer + ".well-known/openid-configuration")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var m map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&m); err != nil || resp.StatusCode != 200 {
		t.Fatalf("openid-configuration: %d %v", resp.StatusCode, err)
	}
	return m
}

// location follows one redirect by hand: the Location of a 302 answer, resolved against base.
func location(t *testing.T, resp *http.Response, err error) *url.URL {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusFound && resp.StatusCode != http.StatusSeeOther {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("%s: %d, want a redirect: %.300s", resp.Request.URL.Path, resp.StatusCode, b)
	}
	u, err := resp.Request.URL.Parse(resp.Header.Get("Location"))
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// oidcSignIn signs user in at the provider through its login form over plain HTTP (the
// authorization-code flow with PKCE, as client id with secret) and returns the ID token, a
// JWT signed by the provider.
func oidcSignIn(t *testing.T, issuer, client, secret, user string) string {
	t.Helper()
	d := discovery(t, issuer)
	verifier := rand.Text() + rand.Text()
	sum := sha256.Sum256([]byte(verifier))
	q := url.Values{"client_id": {client}, "redirect_uri": {oidcRedirect}, "response_type": {"code"},
		"scope": {"openid profile"}, "state": {"st"}, "nonce": {"n1"},
		"code_challenge": {base64.RawURLEncoding.EncodeToString(sum[:])}, "code_challenge_method": {"S256"}}
	resp, err := noFollow.Get(d["authorization_endpoint"].(string) + "?" + q.Encode())
	login := location(t, resp, err)
	resp, err = noFollow.PostForm(login.String(), url.Values{"username": {user}, "password": {"verysecure"},
		"id": {login.Query().Get("authRequestID")}})
	cb := location(t, resp, err)
	resp, err = noFollow.Get(cb.String())
	back := location(t, resp, err)
	code := back.Query().Get("code")
	if !strings.HasPrefix(back.String(), oidcRedirect) || code == "" || back.Query().Get("state") != "st" {
		t.Fatalf("sign-in ended at %s", back.Redacted())
	}
	req, _ := http.NewRequest(http.MethodPost, d["token_endpoint"].(string), strings.NewReader(url.Values{
		"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {oidcRedirect}, "code_verifier": {verifier},
	}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth(client, secret)
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var tok struct {
		IDToken string `json:"id_token"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&tok); err != nil || resp.StatusCode != 200 || strings.Count(tok.IDToken, ".") != 2 {
		t.Fatalf("token endpoint: %d %v", resp.StatusCode, err)
	}
	return tok.IDToken
}

// oidcGateway starts a gateway (SQLite store) trusting provider p for JWT callers: the token's
// sub is the user and its azp (the OAuth client the user signed in with) the team.
func oidcGateway(t *testing.T, p *testpeers.Peer, fixture string) string {
	t.Helper()
	d := discovery(t, p.URL)
	yaml := fmt.Sprintf(`general_settings:
  master_key: %s
  enable_jwt_auth: true
  litellm_jwtauth:
    user_id_jwt_field: sub
    team_id_jwt_field: azp
    scopes_supported: [openid, profile]
    jwks_refetch_gap_seconds: 1
mcp_servers:
  fx:
    url: %s
  other:
    url: %s
`, testKey, fixture, fixture)
	env := map[string]string{"JWT_PUBLIC_KEY_URL": d["jwks_uri"].(string), "JWT_AUDIENCE": "web", "JWT_ISSUER": p.URL}
	return startGatewayWithStoreEnv(t, storeBackends()[0], yaml, env).url
}

// TestOIDCCallerTeamPermissions: a user signs in at a real OpenID provider; the ID token alone
// lists and calls through the gateway as that user, limited by the team (created through the
// team API) its token names; keys keep working beside it; after the provider restarts with a
// new signing key, a fresh token works and one signed by the retired key is refused.
func TestOIDCCallerTeamPermissions(t *testing.T) {
	p := testpeers.StartOIDCProvider(t, oidcRedirect)
	fixture := testpeers.StartGoFixtureHTTP(t, false)
	gw := oidcGateway(t, p, fixture)
	mustManage(t, http.MethodPost, gw+"/team/new", `{"team_id":"web","team_alias":"web-app",
		"object_permission":{"mcp_servers":["fx"],"mcp_tool_permissions":{"fx":["test_simple_text"]}}}`)

	tok := oidcSignIn(t, p.URL, "web", "secret", "test-user2")
	status, body := listAs(t, gw, tok)
	if tools := toolsOf(body); status != 200 || !slices.Equal(tools, []string{"fx-test_simple_text"}) {
		t.Fatalf("tools/list with the ID token = %d %v, want only the team's fx-test_simple_text", status, tools)
	}
	status, body = callAs(t, gw, tok, "fx-test_simple_text")
	if res, _ := body["result"].(map[string]any); status != 200 || res == nil || res["isError"] == true {
		t.Fatalf("tools/call granted by the team = %d %v", status, body)
	}
	_, body = callAs(t, gw, tok, "other-test_simple_text")
	if res, _ := body["result"].(map[string]any); body["error"] == nil && (res == nil || res["isError"] != true) {
		t.Fatalf("tools/call outside the team's permission succeeded: %v", body)
	}
	if _, body := listAs(t, gw, testKey); !slices.Contains(toolsOf(body), "other-test_simple_text") {
		t.Fatalf("the master key beside JWT auth: %v", toolsOf(body))
	}

	p.Restart(t) // a new process: a new signing key with a new kid
	fresh := oidcSignIn(t, p.URL, "web", "secret", "test-user2")
	// The new key is fetched by the first token naming it once the refetch gap (1 s here)
	// since the last fetch has passed.
	status, body = listAs(t, gw, fresh)
	for deadline := time.Now().Add(3 * time.Second); status == 401 && time.Now().Before(deadline); {
		time.Sleep(100 * time.Millisecond)
		status, body = listAs(t, gw, fresh)
	}
	if status != 200 || len(toolsOf(body)) != 1 {
		t.Fatalf("a token signed by the rotated key = %d %v", status, body)
	}
	wantTokenRefused(t, gw, tok, "signature")
}

// wantTokenRefused asserts that tok is refused on /mcp with 401, an invalid_token challenge
// naming the resource metadata, and a message containing msg.
func wantTokenRefused(t *testing.T, gw, tok, msg string) {
	t.Helper()
	status, hdr, body := rpc(t, gw+"/mcp", modernAs(tok, "tools/list", ""),
		`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{`+modernMeta+`}}`)
	ch := hdr.Get("WWW-Authenticate")
	if status != 401 || !strings.Contains(ch, `error="invalid_token"`) ||
		!strings.Contains(ch, `resource_metadata="`+gw+`/.well-known/oauth-protected-resource/mcp"`) {
		t.Fatalf("status %d, WWW-Authenticate %q", status, ch)
	}
	if e, _ := body["error"].(map[string]any); e == nil || !strings.Contains(fmt.Sprint(e["message"]), msg) {
		t.Fatalf("error %v, want it to mention %q", body["error"], msg)
	}
}

// TestOIDCRefusesForeignTokens: real provider tokens the gateway must not accept — one issued
// to another client (foreign audience), one from another provider (unknown key and issuer),
// and one stripped of its signature (alg none) — are 401 with WWW-Authenticate; the
// protected-resource metadata names the provider.
func TestOIDCRefusesForeignTokens(t *testing.T) {
	p := testpeers.StartOIDCProvider(t, oidcRedirect)
	stranger := testpeers.StartOIDCProvider(t, oidcRedirect)
	fixture := testpeers.StartGoFixtureHTTP(t, false)
	gw := oidcGateway(t, p, fixture)

	good := oidcSignIn(t, p.URL, "web", "secret", "test-user2")
	if status, _ := listAs(t, gw, good); status != 200 {
		t.Fatalf("the provider's own token = %d", status)
	}
	wantTokenRefused(t, gw, oidcSignIn(t, p.URL, "api", "secret", "test-user2"), "audience")
	wantTokenRefused(t, gw, oidcSignIn(t, stranger.URL, "web", "secret", "test-user2"), "signature")
	parts := strings.Split(good, ".")
	wantTokenRefused(t, gw, base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"none","typ":"JWT"}`))+"."+parts[1]+".", "invalid token")

	noCred := modernHeaders("tools/list", "")
	delete(noCred, "Authorization")
	status, hdr, _ := rpc(t, gw+"/fx/mcp", noCred,
		`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{`+modernMeta+`}}`)
	if want := `Bearer resource_metadata="` + gw + `/.well-known/oauth-protected-resource/fx/mcp"`; status != 401 || hdr.Get("WWW-Authenticate") != want {
		t.Fatalf("no credential on /fx/mcp: %d %q, want %q", status, hdr.Get("WWW-Authenticate"), want)
	}
	for path, resource := range map[string]string{"": gw, "/mcp": gw + "/mcp", "/fx/mcp": gw + "/fx/mcp"} {
		resp, err := http.Get(gw + "/.well-known/oauth-protected-resource" + path)
		if err != nil {
			t.Fatal(err)
		}
		var md struct {
			Resource             string   `json:"resource"`
			AuthorizationServers []string `json:"authorization_servers"`
			Scopes               []string `json:"scopes_supported"`
		}
		err = json.NewDecoder(resp.Body).Decode(&md)
		resp.Body.Close()
		if err != nil || resp.StatusCode != 200 || md.Resource != resource || !slices.Equal(md.AuthorizationServers, []string{p.URL}) ||
			!slices.Equal(md.Scopes, []string{"openid", "profile"}) {
			t.Fatalf("metadata %q: %d %+v %v", path, resp.StatusCode, md, err)
		}
	}
	resp, err := http.Get(gw + "/.well-known/oauth-protected-resource/nope/mcp")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 404 {
		t.Fatalf("metadata for an unknown server: %d", resp.StatusCode)
	}
}

// TestOIDCTypeScriptClientAuthorization: the TypeScript SDK client's OAuth support completes
// the MCP authorization flow against the gateway: 401 with resource_metadata → the gateway's
// protected-resource metadata → the provider's metadata → sign-in and code exchange (PKCE,
// RFC 8707 resource) → the same client lists and calls tools with the token it obtained, as the
// team its token names allows.
func TestOIDCTypeScriptClientAuthorization(t *testing.T) {
	node, dir := tsClients(t)
	p := testpeers.StartOIDCProvider(t, oidcRedirect)
	fixture := testpeers.StartGoFixtureHTTP(t, false)
	gw := oidcGateway(t, p, fixture)
	mustManage(t, http.MethodPost, gw+"/team/new", `{"team_id":"web","object_permission":{"mcp_servers":["fx"]}}`)

	ctx, cancel := context.WithTimeout(context.Background(), tsClientTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "oauth.mjs", gw+"/mcp", "test-user2", "verysecure", oidcRedirect, "web", "secret")
	cmd.Dir = dir
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()
	var res struct {
		Requests []string `json:"requests"`
		Tools    []string `json:"tools"`
		Call     string   `json:"call"`
		Step     string   `json:"step"`
		Error    string   `json:"error"`
	}
	if err := json.Unmarshal([]byte(tsLastLine(stdout.String())), &res); err != nil || runErr != nil || res.Error != "" {
		t.Fatalf("oauth.mjs: %v %v at %q: %s\nstderr: %s", runErr, err, res.Step, res.Error, tsTail(stderr.String(), 8<<10))
	}
	t.Logf("requests: %q", res.Requests)
	want := []string{
		"POST " + gw + "/mcp 401",
		"GET " + gw + "/.well-known/oauth-protected-resource/mcp 200",
		"POST " + gw + "/mcp 200",
	}
	at := 0
	for _, r := range res.Requests {
		if at < len(want) && r == want[at] {
			at++
		}
	}
	if at != len(want) {
		t.Fatalf("the client's requests %q lack, in order, %q", res.Requests, want)
	}
	if !slices.ContainsFunc(res.Requests, func(r string) bool {
		return strings.HasPrefix(r, "GET "+p.URL+".well-known/") && strings.HasSuffix(r, " 200")
	}) ||
		!slices.ContainsFunc(res.Requests, func(r string) bool { return strings.HasPrefix(r, "POST "+p.URL) && strings.HasSuffix(r, " 200") }) {
		t.Fatalf("the client did not read the provider's metadata and exchange the code: %q", res.Requests)
	}
	if res.Call != tsSimpleText || slices.ContainsFunc(res.Tools, func(n string) bool { return strings.HasPrefix(n, "other-") }) ||
		!slices.Contains(res.Tools, "fx-test_simple_text") {
		t.Fatalf("after authorization: tools %v, call %q", res.Tools, res.Call)
	}
}

// TestOIDCTokenNeverReachesUpstream: a JWT that authenticated the caller in Authorization is
// the gateway's credential and is never passed on, even to a server that asks for the caller's
// Authorization through extra_headers and is alone in scope.
func TestOIDCTokenNeverReachesUpstream(t *testing.T) {
	p := testpeers.StartOIDCProvider(t, oidcRedirect)
	var mu sync.Mutex
	var seen []string
	calls := 0
	s := mcp.NewServer(&mcp.Implementation{Name: "rec", Version: "1"}, nil)
	s.AddTool(&mcp.Tool{Name: "test_simple_text", InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) { return textResult("ok"), nil })
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s },
		&mcp.StreamableHTTPOptions{Stateless: true, DisableLocalhostProtection: true})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		calls++
		seen = append(seen, r.Header.Values("Authorization")...)
		mu.Unlock()
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(up.Close)
	d := discovery(t, p.URL)
	gw := startGateway(t, fmt.Sprintf("general_settings:\n  master_key: %s\n  enable_jwt_auth: true\nmcp_servers:\n  rec:\n    url: %s\n    extra_headers: [Authorization]\n",
		testKey, up.URL+"/mcp"), map[string]string{"JWT_PUBLIC_KEY_URL": d["jwks_uri"].(string), "JWT_AUDIENCE": "web"}).url

	tok := oidcSignIn(t, p.URL, "web", "secret", "test-user2")
	for _, path := range []string{"/mcp", "/rec/mcp"} {
		status, _, body := rpc(t, gw+path, modernAs(tok, "tools/call", "rec-test_simple_text"),
			`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"rec-test_simple_text","arguments":{},`+modernMeta+`}}`)
		if res, _ := body["result"].(map[string]any); status != 200 || res == nil || res["isError"] == true {
			t.Fatalf("tools/call on %s with the token = %d %v", path, status, body)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if calls == 0 {
		t.Fatal("the upstream saw no request")
	}
	for _, v := range seen {
		if strings.Contains(v, tok) || strings.Contains(v, strings.Split(tok, ".")[2]) {
			t.Fatalf("the upstream received the caller's token in Authorization")
		}
	}
}
