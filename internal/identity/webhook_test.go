package identity

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

const userKey = "sk-user-key-7f3a9c"

// bodySecret marks webhook response text that must never surface in errors or logs.
const bodySecret = "WEBHOOK-BODY-SECRET"

type webhook struct {
	srv   *httptest.Server
	calls atomic.Int32
	mu    sync.Mutex
	last  []byte
	ctype string
}

func newWebhook(t *testing.T, h http.HandlerFunc) *webhook {
	t.Helper()
	w := &webhook{}
	w.srv = httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		w.calls.Add(1)
		b, _ := io.ReadAll(r.Body)
		w.mu.Lock()
		w.last, w.ctype = b, r.Header.Get("Content-Type")
		w.mu.Unlock()
		if r.Method != http.MethodPost {
			http.Error(rw, "want POST", http.StatusMethodNotAllowed)
			return
		}
		h(rw, r)
	}))
	t.Cleanup(w.srv.Close)
	return w
}

func (w *webhook) seen() (body []byte, contentType string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.last, w.ctype
}

func respond(status int, body string) http.HandlerFunc {
	return func(rw http.ResponseWriter, _ *http.Request) {
		rw.Header().Set("Content-Type", "application/json")
		rw.WriteHeader(status)
		_, _ = io.WriteString(rw, body)
	}
}

func newAuth(t *testing.T, w *webhook, timeout time.Duration, logs *bytes.Buffer) *Authenticator {
	t.Helper()
	cfg := Config{MasterKey: strongKey, CustomAuthURL: w.srv.URL + "/auth", HTTPClient: w.srv.Client(), Timeout: timeout}
	if logs != nil {
		cfg.Logger = slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	a, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func TestWebhookRequestJSON(t *testing.T) {
	w := newWebhook(t, respond(200, `{}`))
	a := newAuth(t, w, 0, nil)
	r := httptest.NewRequest(http.MethodPost, "/github/mcp?token=abc", nil)
	r.Header.Set("Authorization", "Bearer "+userKey)
	r.Header.Set("Cookie", "sid=1")
	r.Header.Set("Mcp-Session-Id", "sess")
	r.Header.Set("X-Tenant", "acme")
	r.Header.Set("Accept", "application/json")
	if _, err := a.Authenticate(context.Background(), r, "tools/call"); err != nil {
		t.Fatal(err)
	}
	want := `{"api_key":"sk-user-key-7f3a9c","method":"tools/call","path":"/github/mcp","headers":{"accept":"application/json","x-tenant":"acme"}}`
	last, ctype := w.seen()
	if string(last) != want {
		t.Errorf("webhook body\n got %s\nwant %s", last, want)
	}
	if ctype != "application/json" {
		t.Errorf("Content-Type = %q", ctype)
	}

	// With both headers the gateway credential is x-litellm-api-key, and the caller's own
	// Authorization is a credential header that is not sent either.
	r = httptest.NewRequest(http.MethodGet, "/mcp", nil)
	r.Header.Set("X-Litellm-Api-Key", "Bearer "+userKey)
	r.Header.Set("Authorization", "Bearer upstream-token")
	if _, err := a.Authenticate(context.Background(), r, "GET /mcp"); err != nil {
		t.Fatal(err)
	}
	want = `{"api_key":"sk-user-key-7f3a9c","method":"GET /mcp","path":"/mcp","headers":{}}`
	if last, _ := w.seen(); string(last) != want {
		t.Errorf("webhook body\n got %s\nwant %s", last, want)
	}
}

func TestWebhookIdentity(t *testing.T) {
	tests := []struct {
		name string
		body string
		want Caller
	}{
		{"contract example", `{"user_id": "alice", "team_id": "team-a", "org_id": null, "end_user_id": null,
 "user_role": "internal_user",
 "object_permission": {"mcp_servers": ["server-id-or-name"], "mcp_access_groups": [],
                       "mcp_tool_permissions": {"server-id": ["tool"]}}}`,
			Caller{UserID: "alice", TeamID: "team-a", Role: "internal_user", Servers: []string{"server-id-or-name"},
				ToolPermissions: map[string][]string{"server-id": {"tool"}}}},
		{"every field", `{"user_id":"u","team_id":"t","org_id":"o","end_user_id":"e","user_role":"proxy_admin",
 "object_permission":{"mcp_servers":["a","b"],"mcp_access_groups":["g"],"mcp_tool_permissions":{"a":["x","y"],"b":["z"]}}}`,
			Caller{UserID: "u", TeamID: "t", OrgID: "o", EndUserID: "e", Role: "proxy_admin", Servers: []string{"a", "b"},
				AccessGroups: []string{"g"}, ToolPermissions: map[string][]string{"a": {"x", "y"}, "b": {"z"}}}},
		{"empty object", `{}`, Caller{}},
		{"all null", `{"user_id":null,"team_id":null,"org_id":null,"end_user_id":null,"user_role":null,"object_permission":null}`, Caller{}},
		{"null lists", `{"object_permission":{"mcp_servers":null,"mcp_access_groups":null,"mcp_tool_permissions":null}}`, Caller{}},
		{"empty lists are unset", `{"object_permission":{"mcp_servers":[],"mcp_access_groups":[""],"mcp_tool_permissions":{"a":[],"b":null}}}`, Caller{}},
		{"empty strings dropped", `{"object_permission":{"mcp_servers":["","a"],"mcp_tool_permissions":{"":["x"],"b":["","y"]}}}`,
			Caller{Servers: []string{"a"}, ToolPermissions: map[string][]string{"b": {"y"}}}},
		{"unknown and differently cased keys ignored", `{"USER_ID":"mallory","user_id":"alice","spend":1.5,"models":[],"object_permission":{"MCP_SERVERS":["x"]}}`,
			Caller{UserID: "alice"}},
		{"extra whitespace", " \n {\"user_id\":\"alice\"} \n", Caller{UserID: "alice"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWebhook(t, respond(200, tt.body))
			a := newAuth(t, w, 0, nil)
			c, err := a.Authenticate(context.Background(), request(map[string]string{"Authorization": "Bearer " + userKey}), "tools/list")
			if err != nil {
				t.Fatal(err)
			}
			tt.want.KeyHash = hashOf(userKey)
			if !reflect.DeepEqual(*c, tt.want) {
				t.Errorf("caller\n got %+v\nwant %+v", *c, tt.want)
			}
		})
	}
}

func TestWebhookRefusals(t *testing.T) {
	big := `{"user_id":"` + strings.Repeat("a", 1<<20) + `"}`
	tests := []struct {
		name      string
		handler   http.HandlerFunc
		status    int
		challenge string
	}{
		{"401", respond(401, `{"error":"`+bodySecret+`"}`), 401, `Bearer error="invalid_token"`},
		{"403", respond(403, bodySecret), 403, ""},
		{"500", respond(500, bodySecret), 503, ""},
		{"502", respond(502, bodySecret), 503, ""},
		{"404", respond(404, bodySecret), 503, ""},
		{"429", respond(429, bodySecret), 503, ""},
		{"201 is not 200", respond(201, `{"user_id":"alice"}`), 503, ""},
		{"204", respond(204, ``), 503, ""},
		{"redirect not followed", func(rw http.ResponseWriter, r *http.Request) {
			http.Redirect(rw, r, "/elsewhere", http.StatusTemporaryRedirect)
		}, 503, ""},
		{"garbage", respond(200, bodySecret), 503, ""},
		{"empty body", respond(200, ``), 503, ""},
		{"truncated", respond(200, `{"user_id":"`+bodySecret), 503, ""},
		{"null", respond(200, `null`), 503, ""},
		{"array", respond(200, `[{"user_id":"alice"}]`), 503, ""},
		{"string", respond(200, `"`+bodySecret+`"`), 503, ""},
		{"number user_id", respond(200, `{"user_id":5}`), 503, ""},
		{"object user_id", respond(200, `{"user_id":{"x":"`+bodySecret+`"}}`), 503, ""},
		{"servers not a list", respond(200, `{"object_permission":{"mcp_servers":"`+bodySecret+`"}}`), 503, ""},
		{"servers of numbers", respond(200, `{"object_permission":{"mcp_servers":[1]}}`), 503, ""},
		{"groups not a list", respond(200, `{"object_permission":{"mcp_access_groups":{}}}`), 503, ""},
		{"tool permissions a list", respond(200, `{"object_permission":{"mcp_tool_permissions":["a"]}}`), 503, ""},
		{"tool permission a string", respond(200, `{"object_permission":{"mcp_tool_permissions":{"a":"x"}}}`), 503, ""},
		{"object_permission a list", respond(200, `{"object_permission":[]}`), 503, ""},
		{"oversize", respond(200, big), 503, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var logs bytes.Buffer
			w := newWebhook(t, tt.handler)
			a := newAuth(t, w, 0, &logs)
			c, err := a.Authenticate(context.Background(), request(map[string]string{"x-litellm-api-key": userKey}), "tools/call")
			if c != nil {
				t.Fatalf("admitted %+v", c)
			}
			e := authErr(t, err)
			if e.Status != tt.status || e.Challenge != tt.challenge {
				t.Errorf("error = %+v, want status %d challenge %q", e, tt.status, tt.challenge)
			}
			checkNoLeak(t, e.Error(), logs.String())
		})
	}
}

func checkNoLeak(t *testing.T, texts ...string) {
	t.Helper()
	for _, s := range texts {
		for _, secret := range []string{bodySecret, userKey, strongKey, "/auth"} {
			if strings.Contains(s, secret) {
				t.Errorf("%q leaks %q", s, secret)
			}
		}
	}
}

func TestWebhookTimeout(t *testing.T) {
	w := newWebhook(t, func(rw http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(10 * time.Second):
		}
	})
	var logs bytes.Buffer
	a := newAuth(t, w, 50*time.Millisecond, &logs)
	start := time.Now()
	_, err := a.Authenticate(context.Background(), request(map[string]string{"Authorization": "Bearer " + userKey}), "tools/list")
	if e := authErr(t, err); e.Status != 503 {
		t.Fatalf("error = %+v, want 503", e)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("timeout took %v", d)
	}
	if !strings.Contains(logs.String(), `"reason":"timeout"`) {
		t.Errorf("log does not classify the timeout: %s", logs.String())
	}
	checkNoLeak(t, logs.String())
}

func TestWebhookUnreachable(t *testing.T) {
	w := newWebhook(t, respond(200, `{}`))
	url := w.srv.URL
	w.srv.Close()
	var logs bytes.Buffer
	a, err := New(Config{MasterKey: strongKey, CustomAuthURL: url + "/auth?secret=" + bodySecret,
		Logger: slog.New(slog.NewJSONHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	_, err = a.Authenticate(context.Background(), request(map[string]string{"Authorization": "Bearer " + userKey}), "tools/list")
	e := authErr(t, err)
	if e.Status != 503 {
		t.Fatalf("error = %+v, want 503", e)
	}
	checkNoLeak(t, e.Error(), logs.String())
	if !strings.Contains(logs.String(), "network error") {
		t.Errorf("log does not classify the failure: %s", logs.String())
	}
}

func TestWebhookCallerGone(t *testing.T) {
	w := newWebhook(t, respond(200, `{}`))
	a := newAuth(t, w, 0, nil)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := a.Authenticate(ctx, request(map[string]string{"Authorization": "Bearer " + userKey}), "tools/list")
	if e := authErr(t, err); e.Status != 503 {
		t.Fatalf("error = %+v, want 503", e)
	}
}

// With custom_auth configured, the webhook decides every request, including
// one presenting the master key: the webhook's identity governs (not the
// proxy admin), its refusal refuses the master key, and its failure is 503
// for the master key too. Only a request without a credential is decided
// locally.
func TestWebhookDecidesMasterKey(t *testing.T) {
	tests := []struct {
		name   string
		answer http.HandlerFunc
		status int // 0 = admitted with the webhook's identity
	}{
		{"identity governs", respond(200, `{"user_id":"alice","team_id":"team-a","object_permission":{"mcp_servers":["interaction-server"]}}`), 0},
		{"refused", respond(401, `{"detail":"`+bodySecret+`"}`), 401},
		{"forbidden", respond(403, `{}`), 403},
		{"webhook failing", respond(500, bodySecret), 503},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWebhook(t, tt.answer)
			a := newAuth(t, w, 0, nil)
			c, err := a.Authenticate(context.Background(), request(map[string]string{"Authorization": "Bearer " + strongKey}), "tools/list")
			if n := w.calls.Load(); n != 1 {
				t.Fatalf("webhook called %d times for the master key, want 1", n)
			}
			body, _ := w.seen()
			if !strings.Contains(string(body), `"api_key":"`+strongKey+`"`) {
				t.Errorf("webhook was not asked about the master key: %s", body)
			}
			if tt.status != 0 {
				if e := authErr(t, err); e.Status != tt.status {
					t.Fatalf("error = %+v, want %d", e, tt.status)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.IsMaster || c.UserID != "alice" || c.TeamID != "team-a" || c.Role == RoleProxyAdmin ||
				!reflect.DeepEqual(c.Servers, []string{"interaction-server"}) || c.KeyHash != hashOf(strongKey) {
				t.Fatalf("master key with webhook: %+v, want the webhook's alice/team-a", c)
			}
		})
	}
}

func TestWebhookNotCalledWithoutCredential(t *testing.T) {
	w := newWebhook(t, respond(200, `{"user_id":"alice"}`))
	a := newAuth(t, w, 0, nil)
	_, err := a.Authenticate(context.Background(), request(nil), "tools/list")
	if e := authErr(t, err); e.Status != 401 || e.Challenge != "Bearer" {
		t.Fatalf("no credential with webhook: %+v", e)
	}
	if n := w.calls.Load(); n != 0 {
		t.Errorf("webhook called %d times; a missing credential is decided locally", n)
	}
	if _, err := a.Authenticate(context.Background(), request(map[string]string{"Authorization": "Bearer " + userKey}), "tools/list"); err != nil {
		t.Fatal(err)
	}
	if n := w.calls.Load(); n != 1 {
		t.Errorf("webhook called %d times, want 1", n)
	}
}

func TestWebhookDefaultClient(t *testing.T) {
	w := newWebhook(t, respond(200, `{"user_id":"alice"}`))
	a, err := New(Config{MasterKey: strongKey, CustomAuthURL: w.srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.client.CloseIdleConnections)
	c, err := a.Authenticate(context.Background(), request(map[string]string{"Authorization": "Bearer " + userKey}), "tools/list")
	if err != nil || c.UserID != "alice" {
		t.Fatalf("default client: %+v, %v", c, err)
	}
}

func TestWebhookConcurrent(t *testing.T) {
	w := newWebhook(t, func(rw http.ResponseWriter, r *http.Request) {
		rw.WriteHeader(200)
		_, _ = io.WriteString(rw, `{"user_id":"alice"}`)
	})
	a := newAuth(t, w, 0, nil)
	var wg sync.WaitGroup
	for i := 0; i < 16; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := a.Authenticate(context.Background(), request(map[string]string{"Authorization": "Bearer " + userKey}), "tools/list")
			if err != nil || c.UserID != "alice" {
				t.Errorf("concurrent: %+v, %v", c, err)
			}
		}()
	}
	wg.Wait()
}
