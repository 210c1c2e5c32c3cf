package front

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpgw/mcpgw/internal/identity"
)

// fakeServerRegistry records the writes that reach it.
type fakeServerRegistry struct {
	mu     sync.Mutex
	views  []MCPServerView
	writes []string
	err    error // returned by every write when set
}

func (f *fakeServerRegistry) Servers(context.Context) ([]MCPServerView, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]MCPServerView(nil), f.views...), nil
}

func (f *fakeServerRegistry) write(what string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.writes = append(f.writes, what)
	return f.err
}

func (f *fakeServerRegistry) Create(_ context.Context, s MCPServerSpec, by string) (MCPServerView, error) {
	return MCPServerView{ServerID: "new", ServerName: s.ServerName, CreatedBy: &by}, f.write("create " + s.ServerName)
}

func (f *fakeServerRegistry) Update(_ context.Context, s MCPServerSpec, _ string) (MCPServerView, error) {
	return MCPServerView{ServerID: s.ServerID}, f.write("update " + s.ServerID)
}

func (f *fakeServerRegistry) Delete(_ context.Context, id string) error {
	return f.write("delete " + id)
}

const userKey = "sk-plain-user-key-0123456789"

// newServersFront serves the server routes over real HTTP: testKey is the proxy admin,
// userKey an internal_user who may see server "a" only.
func newServersFront(t *testing.T, reg *fakeServerRegistry, health func(string) ServerHealth) string {
	t.Helper()
	authn, err := identity.New(identity.Config{MasterKey: testKey,
		Keys: func(context.Context, string, string) (identity.StoredKey, bool, error) {
			return identity.StoredKey{UserID: "u1", Role: identity.RoleInternalUser}, true, nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	NewMCPServers(MCPServersConfig{Auth: authn, Registry: reg, Health: health,
		Visible: func(c *identity.Caller) []string { return []string{"a"} }}).Register(mux)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv.URL
}

func serversCall(t *testing.T, method, url, key, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestServerWritesAreTheProxyAdminsOnly(t *testing.T) {
	reg := &fakeServerRegistry{}
	url := newServersFront(t, reg, nil)
	for _, c := range []struct{ method, path, body, verb string }{
		{"POST", "/v1/mcp/server", `{"server_name":"x","url":"https://x/mcp"}`, "create"},
		{"PUT", "/v1/mcp/server", `{"server_id":"x"}`, "update"},
		{"DELETE", "/v1/mcp/server/x", ``, "delete"},
	} {
		status, body := serversCall(t, c.method, url+c.path, userKey, c.body)
		want := "User does not have permission to " + c.verb + " mcp servers. You can only " + c.verb +
			" mcp servers if you are a PROXY_ADMIN."
		if status != http.StatusForbidden || !strings.Contains(body, want) {
			t.Errorf("%s %s as a user = %d %s", c.method, c.path, status, body)
		}
	}
	if len(reg.writes) != 0 {
		t.Fatalf("writes reached the registry: %v", reg.writes)
	}
	req, _ := http.NewRequest("GET", url+"/v1/mcp/server", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("no credential = %d, want 401", resp.StatusCode)
	}
	status, body := serversCall(t, "POST", url+"/v1/mcp/server", testKey, `{"server_name":"x","url":"https://x/mcp"}`)
	if status != http.StatusCreated || !strings.Contains(body, `"created_by":"default_user_id"`) {
		t.Fatalf("POST as admin = %d %s", status, body)
	}
	if status, _ := serversCall(t, "DELETE", url+"/v1/mcp/server/x", testKey, ``); status != http.StatusAccepted {
		t.Fatalf("DELETE as admin = %d", status)
	}
}

func TestServerListIsFilteredAndCarriesHealth(t *testing.T) {
	reg := &fakeServerRegistry{views: []MCPServerView{{ServerID: "id-a", ServerName: "a", MCPAccessGroups: []string{"g1"}},
		{ServerID: "id-b", ServerName: "b", MCPAccessGroups: []string{"g2"}}}}
	checked := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	url := newServersFront(t, reg, func(id string) ServerHealth {
		if id == "id-b" {
			return ServerHealth{Status: HealthUnhealthy, LastCheck: checked, Error: "connection refused"}
		}
		return ServerHealth{}
	})
	var all []MCPServerView
	status, body := serversCall(t, "GET", url+"/v1/mcp/server", testKey, "")
	if status != 200 || json.Unmarshal([]byte(body), &all) != nil || len(all) != 2 {
		t.Fatalf("admin list = %d %s", status, body)
	}
	if all[0].Status != HealthUnknown || all[1].Status != HealthUnhealthy || !all[1].LastHealthCheck.Equal(checked) ||
		*all[1].HealthCheckError != "connection refused" {
		t.Fatalf("health = %+v", all)
	}
	var mine []MCPServerView
	status, body = serversCall(t, "GET", url+"/v1/mcp/server", userKey, "")
	if status != 200 || json.Unmarshal([]byte(body), &mine) != nil || len(mine) != 1 || mine[0].ServerName != "a" {
		t.Fatalf("user list = %d %s", status, body)
	}
	if status, _ := serversCall(t, "GET", url+"/v1/mcp/server/id-b", userKey, ""); status != http.StatusNotFound {
		t.Fatalf("a user reading a server it may not see = %d, want 404", status)
	}
	if status, body := serversCall(t, "GET", url+"/v1/mcp/server/id-b", testKey, ""); status != 200 || !strings.Contains(body, `"server_name":"b"`) {
		t.Fatalf("admin get = %d %s", status, body)
	}
	if status, body := serversCall(t, "GET", url+"/v1/mcp/access_groups", userKey, ""); status != 200 || strings.TrimSpace(body) != `{"access_groups":["g1"]}` {
		t.Fatalf("user access groups = %d %s", status, body)
	}
	if status, body := serversCall(t, "GET", url+"/v1/mcp/tools", userKey, ""); status != 200 || strings.TrimSpace(body) != `{"tools":[]}` {
		t.Fatalf("tools without a lister = %d %s", status, body)
	}
}

func TestServerRequestValidation(t *testing.T) {
	reg := &fakeServerRegistry{}
	url := newServersFront(t, reg, nil)
	for _, c := range []struct{ method, body, param, msg string }{
		{"POST", `{"server_name":"x","models":["a"]}`, "models", `unknown field "models"`},
		{"POST", `{"server_name":1}`, "server_name", "server_name: want a string"},
		{"POST", `{"server_name":"x","env":{"A":1}}`, "env", "env: want an object of strings"},
		{"POST", `{"server_name":"x","credentials":{"auth_value":"SECRET-MARK","extra":"SECRET-MARK"}}`, "extra", `unknown field "extra"`},
		{"POST", `{"server_name":"x","credentials":{"auth_value":7}}`, "credentials.auth_value", "credentials.auth_value: want a string"},
		{"POST", `{"server_name":"x","timeout":-1}`, "timeout", "timeout: want a non-negative number"},
		{"POST", `not json`, "", "want a JSON object"},
		{"PUT", `{"description":"d"}`, "server_id", "server_id is required"},
	} {
		status, body := serversCall(t, c.method, url+"/v1/mcp/server", testKey, c.body)
		var e struct {
			Error struct {
				Message string  `json:"message"`
				Param   *string `json:"param"`
				Code    string  `json:"code"`
			} `json:"error"`
		}
		_ = json.Unmarshal([]byte(body), &e)
		param := ""
		if e.Error.Param != nil {
			param = *e.Error.Param
		}
		if status != 400 || e.Error.Code != "400" || param != c.param || !strings.Contains(e.Error.Message, c.msg) ||
			strings.Contains(body, "SECRET-MARK") {
			t.Errorf("%s %s = %d %s", c.method, c.body, status, body)
		}
	}
	if len(reg.writes) != 0 {
		t.Fatalf("invalid requests reached the registry: %v", reg.writes)
	}
	reg.err = &ServerError{Status: http.StatusConflict, Param: "server_id", Msg: "read-only"}
	if status, body := serversCall(t, "PUT", url+"/v1/mcp/server", testKey, `{"server_id":"y"}`); status != 409 ||
		!strings.Contains(body, `"type":"conflict_error"`) {
		t.Fatalf("a registry refusal = %d %s", status, body)
	}
	reg.err = errors.New("database said SECRET-MARK")
	if status, body := serversCall(t, "PUT", url+"/v1/mcp/server", testKey, `{"server_id":"y"}`); status != 500 ||
		strings.Contains(body, "SECRET-MARK") || !strings.Contains(body, "mcp server registry failed") {
		t.Fatalf("a registry failure = %d %s", status, body)
	}
}
