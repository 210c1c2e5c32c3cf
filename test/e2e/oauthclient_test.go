package e2e

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
)

// getJSON fetches u and decodes its JSON body.
func getJSON(t *testing.T, u string) (int, map[string]any) {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var m map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&m)
	return resp.StatusCode, m
}

// postForm posts a form and decodes the JSON answer.
func postForm(t *testing.T, u string, form url.Values) (int, map[string]any) {
	t.Helper()
	resp, err := http.PostForm(u, form)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var m map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&m)
	return resp.StatusCode, m
}

// clientRedirect is the MCP client's redirect_uri: a local listener recording what the
// browser brought back.
type clientRedirect struct {
	srv *httptest.Server
	mu  sync.Mutex
	got url.Values
}

func newClientRedirect(t *testing.T) *clientRedirect {
	c := &clientRedirect{}
	c.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.mu.Lock()
		c.got = r.URL.Query()
		c.mu.Unlock()
		_, _ = io.WriteString(w, "client got it")
	}))
	t.Cleanup(c.srv.Close)
	return c
}

// browse opens u in a browser that follows redirects and returns the final status.
func browse(t *testing.T, u string) int {
	t.Helper()
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Get(u)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func pkce(verifier string) string {
	sum := sha256.Sum256([]byte(verifier))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

// whoamiOn calls whoami on /gh/mcp with the gateway key in x-litellm-api-key and the upstream
// token in Authorization.
func whoamiOn(t *testing.T, gw, key, token string) string {
	t.Helper()
	h := modernHeaders("tools/call", "gh-whoami")
	h["Authorization"] = "Bearer " + token
	h["x-litellm-api-key"] = key
	status, _, body := rpc(t, gw+"/gh/mcp", h,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"gh-whoami","arguments":{},`+modernMeta+`}}`)
	res, _ := body["result"].(map[string]any)
	if status != 200 || res == nil || res["isError"] == true {
		return fmt.Sprintf("failed: %d %v", status, body)
	}
	return fmt.Sprint(res["content"])
}

// TestClientRunOAuthFlow: an MCP client runs the OAuth flow of an authorization-code server
// itself through the gateway: protected-resource metadata names the per-server authorization
// server, whose RFC 8414 metadata names authorize, token and register; it registers its
// redirect_uri, authorizes in a browser (through the upstream's authorization server and the
// gateway's callback back to its own listener), exchanges the code with its PKCE verifier,
// calls the server's route with the upstream token (which reaches the upstream), and refreshes.
// Forged states and codes, a wrong verifier, plain PKCE and unregistered redirects are refused.
func TestClientRunOAuthFlow(t *testing.T) {
	gw, as, _, _ := vaultGateway(t, time.Hour)
	alice := generateKey(t, gw.url, `{"user_id":"alice"}`)
	cb := newClientRedirect(t)
	redirect := cb.srv.URL + "/cb"

	status, pr := getJSON(t, gw.url+"/.well-known/oauth-protected-resource/gh/mcp")
	if ases, _ := pr["authorization_servers"].([]any); status != 200 || len(ases) != 1 || ases[0] != gw.url+"/gh" {
		t.Fatalf("protected-resource metadata: %d %v", status, pr)
	}
	status, md := getJSON(t, gw.url+"/.well-known/oauth-authorization-server/gh")
	if status != 200 || md["issuer"] != gw.url+"/gh" || md["authorization_endpoint"] != gw.url+"/gh/authorize" ||
		md["token_endpoint"] != gw.url+"/gh/token" || md["registration_endpoint"] != gw.url+"/gh/register" ||
		fmt.Sprint(md["code_challenge_methods_supported"]) != "[S256]" {
		t.Fatalf("authorization server metadata: %d %v", status, md)
	}
	for _, p := range []string{"/gh/.well-known/oauth-authorization-server", "/.well-known/oauth-authorization-server/gh/mcp"} {
		if status, md2 := getJSON(t, gw.url+p); status != 200 || md2["issuer"] != md["issuer"] {
			t.Fatalf("LiteLLM's metadata path %s: %d %v", p, status, md2)
		}
	}
	if status, _ := getJSON(t, gw.url+"/.well-known/oauth-authorization-server/nope"); status != 404 {
		t.Fatalf("metadata of an unknown server: %d", status)
	}

	status, reg := manage(t, http.MethodPost, gw.url+"/gh/register", "", `{"redirect_uris":["`+redirect+`"],"client_name":"t"}`)
	clientID, _ := reg["client_id"].(string)
	if status != 201 || clientID == "" || reg["client_secret"] != nil || strings.Contains(fmt.Sprint(reg), "gw-secret") {
		t.Fatalf("register: %d %v", status, reg)
	}

	verifier := "client-verifier-0123456789-0123456789-0123456789"
	authorize := func(challenge, method, redirectURI, state string) string {
		q := url.Values{"response_type": {"code"}, "client_id": {clientID}, "redirect_uri": {redirectURI},
			"code_challenge": {challenge}, "code_challenge_method": {method}, "state": {state}}
		return gw.url + "/gh/authorize?" + q.Encode()
	}
	as.mu.Lock()
	as.consentAs = "carol-account"
	as.mu.Unlock()
	if s := browse(t, authorize(pkce(verifier), "S256", redirect, "client-state-1")); s != 200 {
		t.Fatalf("the browser ended with %d", s)
	}
	cb.mu.Lock()
	got := cb.got
	cb.mu.Unlock()
	code := got.Get("code")
	if code == "" || got.Get("state") != "client-state-1" {
		t.Fatalf("the client's redirect got %v", got)
	}

	// A wrong verifier: the upstream's PKCE check refuses it (and spends the code).
	if status, m := postForm(t, gw.url+"/gh/token", url.Values{"grant_type": {"authorization_code"}, "code": {code},
		"code_verifier": {"wrong-verifier-0123456789-0123456789-0123456789"}, "redirect_uri": {redirect}, "client_id": {clientID}}); status != 400 || m["error"] != "invalid_grant" {
		t.Fatalf("wrong verifier: %d %v", status, m)
	}
	// A second authorization, exchanged properly.
	browse(t, authorize(pkce(verifier), "S256", redirect, "client-state-2"))
	cb.mu.Lock()
	code = cb.got.Get("code")
	cb.mu.Unlock()
	if status, m := postForm(t, gw.url+"/gh/token", url.Values{"grant_type": {"authorization_code"}, "code": {code},
		"code_verifier": {verifier}, "redirect_uri": {"http://elsewhere/cb"}}); status != 400 || m["error"] != "invalid_grant" {
		t.Fatalf("another redirect_uri at the token endpoint: %d %v", status, m)
	}
	status, tok := postForm(t, gw.url+"/gh/token", url.Values{"grant_type": {"authorization_code"}, "code": {code},
		"code_verifier": {verifier}, "redirect_uri": {redirect}, "client_id": {clientID}})
	access, _ := tok["access_token"].(string)
	refresh, _ := tok["refresh_token"].(string)
	if status != 200 || access == "" || refresh == "" || tok["token_type"] != "Bearer" {
		t.Fatalf("token exchange: %d %v", status, tok)
	}

	if got := whoamiOn(t, gw.url, alice, access); !strings.Contains(got, "account=carol-account") {
		t.Fatalf("call with the client's upstream token: %s", got)
	}

	status, tok = postForm(t, gw.url+"/gh/token", url.Values{"grant_type": {"refresh_token"}, "refresh_token": {refresh}, "client_id": {clientID}})
	access2, _ := tok["access_token"].(string)
	if status != 200 || access2 == "" || access2 == access {
		t.Fatalf("refresh: %d %v", status, tok)
	}
	if got := whoamiOn(t, gw.url, alice, access2); !strings.Contains(got, "account=carol-account") {
		t.Fatalf("call with the refreshed token: %s", got)
	}
	if status, m := postForm(t, gw.url+"/gh/token", url.Values{"grant_type": {"refresh_token"}, "refresh_token": {refresh}}); status != 400 || m["error"] != "invalid_grant" {
		t.Fatalf("a rotated refresh token: %d %v", status, m)
	}

	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for _, c := range []struct {
		name, u string
		want    int
		errCode string
	}{
		{"plain PKCE", authorize(verifier, "plain", redirect, "s"), 400, "invalid_request"},
		{"no PKCE", authorize("", "", redirect, "s"), 400, "invalid_request"},
		{"unregistered redirect", authorize(pkce(verifier), "S256", "http://attacker.example/cb", "s"), 400, "invalid_request"},
		{"forged client_id", strings.Replace(authorize(pkce(verifier), "S256", redirect, "s"), "client_id=", "client_id=x", 1), 400, "invalid_client"},
		{"forged state", gw.url + "/callback?code=x&state=forged", 400, ""},
		{"good request", authorize(pkce(verifier), "S256", redirect, "s"), 302, ""},
	} {
		resp, err := noRedirect.Get(c.u)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&m)
		resp.Body.Close()
		if resp.StatusCode != c.want || (c.errCode != "" && m["error"] != c.errCode) ||
			(c.want == 302 && !strings.HasPrefix(resp.Header.Get("Location"), as.srv.URL+"/authorize?")) {
			t.Fatalf("%s: %d %v %s", c.name, resp.StatusCode, m, resp.Header.Get("Location"))
		}
	}
	if status, m := postForm(t, gw.url+"/gh/token", url.Values{"grant_type": {"authorization_code"}, "code": {"forged"},
		"code_verifier": {verifier}, "redirect_uri": {redirect}}); status != 400 || m["error"] != "invalid_grant" {
		t.Fatalf("forged code: %d %v", status, m)
	}
	if status, m := postForm(t, gw.url+"/gh/token", url.Values{"grant_type": {"password"}}); status != 400 || m["error"] != "unsupported_grant_type" {
		t.Fatalf("other grant: %d %v", status, m)
	}
	if status, m := manage(t, http.MethodPost, gw.url+"/gh/register", "", `{"redirect_uris":["javascript:alert(1)"]}`); status != 400 {
		t.Fatalf("a javascript: redirect registered: %d %v", status, m)
	}
}
