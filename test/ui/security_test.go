package ui

import (
	"net/http"
	"strings"
	"testing"
)

// TestUISignInTakesOnlyAdmins: the master key and a proxy_admin user's key sign in; a wrong key
// and an internal_user's key do not (same answer for both), and such a key reaches no UI page
// or UI API route with its own Authorization header either.
func TestUISignInTakesOnlyAdmins(t *testing.T) {
	g, _ := startGateway(t, nil)
	if _, status := g.signIn(t, masterKey); status != http.StatusSeeOther {
		t.Fatalf("master key sign-in = %d", status)
	}
	if s, b := g.api(t, masterKey, "POST", "/user/new", `{"user_id":"boss","user_role":"proxy_admin"}`); s != 200 {
		t.Fatalf("/user/new = %d %s", s, b)
	}
	admin, _ := g.generateKey(t, `{"user_id":"boss"}`)
	if _, status := g.signIn(t, admin); status != http.StatusSeeOther {
		t.Fatalf("proxy_admin key sign-in = %d", status)
	}
	plain, _ := g.generateKey(t, `{}`)
	for name, key := range map[string]string{"internal user": plain, "wrong key": "sk-not-a-key-at-all-1234"} {
		b, status := g.signIn(t, key)
		if status != http.StatusUnauthorized || b.cookie != "" {
			t.Errorf("%s sign-in = %d (cookie %q), want 401 and no session", name, status, b.cookie)
		}
	}
	bearer := map[string]string{"Authorization": "Bearer " + plain}
	if s, h, _ := do(t, "GET", g.url+"/ui/keys", bearer, ""); s != http.StatusSeeOther || h.Get("Location") != "/ui/login" {
		t.Errorf("GET /ui/keys with a non-admin bearer = %d → %q, want the sign-in page", s, h.Get("Location"))
	}
	if s, _, _ := do(t, "GET", g.url+"/ui/api/key/list", bearer, ""); s != http.StatusUnauthorized {
		t.Errorf("GET /ui/api/key/list with a non-admin bearer = %d, want 401", s)
	}
	if s, _, _ := do(t, "GET", g.url+"/ui/api/key/list", map[string]string{"Authorization": "Bearer " + masterKey}, ""); s != http.StatusUnauthorized {
		t.Errorf("GET /ui/api/key/list with the master key but no session = %d, want 401", s)
	}
}

// TestUIRefusesCrossSiteAndMissingCSRF: every state-changing request needs the same origin and
// the session's CSRF token; the sign-in form needs its own token.
func TestUIRefusesCrossSiteAndMissingCSRF(t *testing.T) {
	g, _ := startGateway(t, nil)
	b, _ := g.signIn(t, masterKey)
	if b.csrf == "" {
		t.Fatal("no CSRF token on the page")
	}
	good := b.sameOriginHeaders()
	with := func(change func(map[string]string)) map[string]string {
		h := map[string]string{}
		for k, v := range good {
			h[k] = v
		}
		change(h)
		return h
	}
	cases := map[string]map[string]string{
		"no CSRF token":         with(func(h map[string]string) { delete(h, "X-CSRF-Token") }),
		"wrong CSRF token":      with(func(h map[string]string) { h["X-CSRF-Token"] = strings.Repeat("0", 64) }),
		"cross-site fetch":      with(func(h map[string]string) { h["Sec-Fetch-Site"] = "cross-site" }),
		"same-site fetch":       with(func(h map[string]string) { h["Sec-Fetch-Site"] = "same-site" }),
		"other origin":          with(func(h map[string]string) { h["Origin"] = "http://evil.example" }),
		"no origin, no fetch":   with(func(h map[string]string) { delete(h, "Origin"); delete(h, "Sec-Fetch-Site") }),
		"origin of other port":  with(func(h map[string]string) { h["Origin"] = "http://127.0.0.1:1" }),
		"https origin for http": with(func(h map[string]string) { h["Origin"] = strings.Replace(g.url, "http:", "https:", 1) }),
	}
	for name, hdr := range cases {
		if status, body := b.post(t, "/ui/api/key/generate", `{"key_alias":"x"}`, hdr); status != http.StatusForbidden {
			t.Errorf("%s: POST /ui/api/key/generate = %d %s, want 403", name, status, body)
		}
		if status, _ := b.post(t, "/ui/logout", "", hdr); status != http.StatusForbidden {
			t.Errorf("%s: POST /ui/logout = %d, want 403", name, status)
		}
	}
	if s, body := g.api(t, masterKey, "GET", "/key/list", ""); s != 200 || strings.Contains(body, `"total_count":1`) {
		t.Fatalf("a refused request made a key: %d %s", s, body)
	}
	if status, body := b.post(t, "/ui/api/key/generate", `{"key_alias":"made-by-ui"}`, good); status != 200 || !strings.Contains(body, `"key":"sk-`) {
		t.Fatalf("a same-origin POST with the token = %d %s", status, body)
	}
	// The sign-in form: its token must match its cookie, and it must come from this origin.
	status, _, _ := do(t, "POST", g.url+"/ui/login", map[string]string{"Content-Type": "application/x-www-form-urlencoded",
		"Origin": g.url, "Sec-Fetch-Site": "same-origin"}, "key="+masterKey+"&csrf=abc")
	if status != http.StatusForbidden {
		t.Errorf("sign-in without its token = %d, want 403", status)
	}
	status, _, _ = do(t, "POST", g.url+"/ui/login", map[string]string{"Content-Type": "application/x-www-form-urlencoded",
		"Sec-Fetch-Site": "cross-site", "Origin": g.url}, "key="+masterKey)
	if status != http.StatusForbidden {
		t.Errorf("cross-site sign-in = %d, want 403", status)
	}
	// A route outside the management API is not reachable through the UI.
	if status, _, _ := b.get(t, "/ui/api/metrics"); status != http.StatusNotFound {
		t.Errorf("GET /ui/api/metrics = %d, want 404", status)
	}
}

// TestUIBlockedKeyLosesItsSession: a proxy_admin key's session ends on its next request once
// the key is blocked, and signing out ends a session.
func TestUIBlockedKeyLosesItsSession(t *testing.T) {
	g, _ := startGateway(t, nil)
	if s, b := g.api(t, masterKey, "POST", "/user/new", `{"user_id":"boss","user_role":"proxy_admin"}`); s != 200 {
		t.Fatalf("/user/new = %d %s", s, b)
	}
	admin, token := g.generateKey(t, `{"user_id":"boss"}`)
	b, status := g.signIn(t, admin)
	if status != http.StatusSeeOther {
		t.Fatalf("sign-in = %d", status)
	}
	if s, _, _ := b.get(t, "/ui/api/v1/mcp/server"); s != 200 {
		t.Fatalf("GET /ui/api/v1/mcp/server = %d", s)
	}
	if s, body := g.api(t, masterKey, "POST", "/key/block", `{"key":"`+token+`"}`); s != 200 {
		t.Fatalf("/key/block = %d %s", s, body)
	}
	if s, _, _ := b.get(t, "/ui/api/v1/mcp/server"); s != http.StatusUnauthorized {
		t.Errorf("blocked key's session: GET /ui/api/v1/mcp/server = %d, want 401", s)
	}
	if s, _ := g.api(t, masterKey, "POST", "/key/unblock", `{"key":"`+token+`"}`); s != 200 {
		t.Fatal("unblock failed")
	}
	if s, h, _ := b.get(t, "/ui/servers"); s != http.StatusSeeOther || h.Get("Location") != "/ui/login" {
		t.Errorf("the ended session after unblocking: GET /ui/servers = %d, want the sign-in page", s)
	}
	m, _ := g.signIn(t, masterKey)
	if s, _ := m.post(t, "/ui/logout", "", m.sameOriginHeaders()); s != http.StatusSeeOther {
		t.Fatalf("sign out = %d", s)
	}
	if s, _, _ := m.get(t, "/ui/api/v1/mcp/server"); s != http.StatusUnauthorized {
		t.Errorf("after sign-out: %d, want 401", s)
	}
}

// TestUINeverShowsASecret: no page, asset or UI API answer carries the master key or a
// server's credential, and every answer has the UI's security headers.
func TestUINeverShowsASecret(t *testing.T) {
	g, _ := startGateway(t, nil)
	b, _ := g.signIn(t, masterKey)
	// Traffic, so the log and statistics have entries.
	if s, body := b.post(t, "/ui/api/mcp-rest/tools/call", `{"server_id":"secretive","name":"test_simple_text","arguments":{}}`, b.sameOriginHeaders()); s != 200 {
		t.Logf("tools/call = %d %s", s, body)
	}
	paths := []string{"/ui/login", "/ui/servers", "/ui/catalog", "/ui/keys", "/ui/activity",
		"/ui/assets/app.js", "/ui/assets/catalog.js", "/ui/assets/app.css", "/ui/assets/theme.js", "/ui/stats",
		"/ui/api/v1/mcp/server", "/ui/api/v1/mcp/server/secretive", "/ui/api/v1/mcp/server/health",
		"/ui/api/v1/mcp/tools", "/ui/api/v1/mcp/access_groups", "/ui/api/health/readiness",
		"/ui/api/key/list?return_full_object=true", "/ui/api/team/list", "/ui/api/spend/logs"}
	for _, p := range paths {
		status, h, body := b.get(t, p)
		if status != 200 {
			t.Errorf("GET %s = %d", p, status)
		}
		for name, secret := range map[string]string{"server credential": marker, "master key": masterKey} {
			if strings.Contains(body, secret) {
				t.Errorf("GET %s shows the %s", p, name)
			}
		}
		if csp := h.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") || strings.Contains(csp, "unsafe-inline") {
			t.Errorf("GET %s: CSP %q", p, csp)
		}
		if h.Get("X-Frame-Options") != "DENY" || h.Get("Cache-Control") != "no-store" {
			t.Errorf("GET %s: headers %v", p, h)
		}
	}
	// The catalog's MCP requests answer without a secret either.
	for _, m := range []string{"tools/list", "prompts/list", "resources/list", "resources/templates/list"} {
		s, body := b.post(t, "/ui/mcp", `{"method":"`+m+`"}`, b.sameOriginHeaders())
		if s != 200 || strings.Contains(body, marker) || strings.Contains(body, masterKey) {
			t.Errorf("POST /ui/mcp %s = %d, shows a secret: %v", m, s, strings.Contains(body, marker) || strings.Contains(body, masterKey))
		}
	}
	// The preview of a server config answers without echoing its credential.
	cfg := `{"server_name":"x","url":"http://127.0.0.1:1/mcp","auth_type":"bearer_token","credentials":{"auth_value":"` + marker + `"}}`
	if s, body := b.post(t, "/ui/api/mcp-rest/test/connection", cfg, b.sameOriginHeaders()); s != 200 || strings.Contains(body, marker) {
		t.Errorf("test/connection = %d, shows the credential: %v", s, strings.Contains(body, marker))
	}
}

// TestUIOffWithDisableAdminUI: DISABLE_ADMIN_UI=true leaves /ui unserved.
func TestUIOffWithDisableAdminUI(t *testing.T) {
	g, _ := startGateway(t, map[string]string{"DISABLE_ADMIN_UI": "true"})
	for _, p := range []string{"/ui", "/ui/login", "/ui/servers"} {
		if s, _, _ := do(t, "GET", g.url+p, nil, ""); s != http.StatusNotFound {
			t.Errorf("GET %s = %d, want 404", p, s)
		}
	}
}
