package app_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcpgw/mcpgw/internal/app"
	"github.com/mcpgw/mcpgw/internal/fakemcp"
	"github.com/mcpgw/mcpgw/internal/store"
)

// Distinct markers, one per credential field of a stored server.
var secretMarkers = []string{"MARK-AUTH-VALUE-1", "MARK-CLIENT-SECRET-1", "MARK-STATIC-HDR-1", "MARK-ENV-VAL-1",
	"MARK-AUTH-VALUE-2", "MARK-STATIC-HDR-2"}

func envWith(vars map[string]string) func(string) (string, bool) {
	return func(name string) (string, bool) {
		v, ok := vars[name]
		return v, ok
	}
}

// api calls a management route with the master key.
func api(t *testing.T, method, url, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+testKey)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func noMarkers(t *testing.T, what, s string) {
	t.Helper()
	for _, m := range secretMarkers {
		if strings.Contains(s, m) {
			t.Errorf("%s holds the secret %s: %s", what, m, s)
		}
	}
}

// storedApp is an App with store_model_in_db, a salt key and one file server, "filesrv".
func storedApp(t *testing.T, vars map[string]string, log *fakemcp.LogBuffer) (*app.App, string, string) {
	t.Helper()
	file := newUpstream(t, fakemcp.Opts{Lists: map[string][]json.RawMessage{"tools/list": fakemcp.Tools("f")}})
	dir := t.TempDir()
	cfg := parse(t, minimal+"  store_model_in_db: true\nmcp_servers:\n  filesrv:\n    url: "+file.url+
		"\n    protocol_version: 2025-11-25\n    auth_type: bearer_token\n    auth_value: file-secret\n")
	a, err := app.New(cfg, app.WithLookupEnv(envWith(vars)), app.WithDataDir(dir), app.WithLogger(log.Logger()))
	if err != nil {
		t.Fatal(err)
	}
	return a, serveApp(t, a), dir
}

// TestStoredServerLifecycleThroughTheAPI: a server added, changed and deleted through
// /v1/mcp/server is served at once; its credentials work upstream, never come back, and are
// not in the database file; a metadata change keeps its upstream session, a connection change
// replaces it; the file's server is read-only.
func TestStoredServerLifecycleThroughTheAPI(t *testing.T) {
	up := newUpstream(t, fakemcp.Opts{Lists: map[string][]json.RawMessage{"tools/list": fakemcp.Tools("a", "b")}})
	var log fakemcp.LogBuffer
	a, base, dir := storedApp(t, map[string]string{"LITELLM_SALT_KEY": "salt-for-tests", "TENANT": "from-env"}, &log)
	_ = a
	create := fmt.Sprintf(`{"server_name":"dyn","url":%q,"description":"before","auth_type":"bearer_token",
		"credentials":{"auth_value":"MARK-AUTH-VALUE-1","client_secret":"MARK-CLIENT-SECRET-1","client_id":"cid"},
		"static_headers":{"X-Static":"MARK-STATIC-HDR-1","X-Tenant":"os.environ/TENANT"},
		"env":{"E":"MARK-ENV-VAL-1"},"mcp_access_groups":["team-x"],"mcp_info":{"protocol_version":"2025-11-25"}}`, up.url)
	status, body := api(t, "POST", base+"/v1/mcp/server", create)
	if status != http.StatusCreated {
		t.Fatalf("POST = %d %s", status, body)
	}
	noMarkers(t, "the POST answer", body)
	var created struct {
		ServerID      string            `json:"server_id"`
		StaticHeaders map[string]string `json:"static_headers"`
		Credentials   map[string]string `json:"credentials"`
		Env           map[string]string `json:"env"`
	}
	_ = json.Unmarshal([]byte(body), &created)
	if created.StaticHeaders["X-Static"] != "****" || created.StaticHeaders["X-Tenant"] != "os.environ/TENANT" ||
		created.Credentials["auth_value"] != "****" || created.Credentials["client_secret"] != "****" ||
		created.Credentials["client_id"] != "cid" || created.Env["E"] != "****" {
		t.Fatalf("POST answer not masked as documented: %s", body)
	}
	if got := restTools(t, base); !slices.Equal(got, []string{"dyn/a", "dyn/b", "filesrv/f"}) {
		t.Fatalf("tools after POST = %q", got)
	}
	last := up.fake.Last(t, "tools/list")
	if last.Header.Get("Authorization") != "Bearer MARK-AUTH-VALUE-1" || last.Header.Get("X-Static") != "MARK-STATIC-HDR-1" ||
		last.Header.Get("X-Tenant") != "from-env" {
		t.Fatalf("upstream saw Authorization %q, X-Static %q, X-Tenant %q", last.Header.Get("Authorization"),
			last.Header.Get("X-Static"), last.Header.Get("X-Tenant"))
	}
	gen := func() int64 { _, cs, _ := readConfigStatus(t, a); return cs.Generation }
	if g := gen(); g != 2 {
		t.Fatalf("generation after POST = %d, want 2", g)
	}

	// Metadata only: the upstream session is kept; masked credentials keep their values.
	status, body = api(t, "PUT", base+"/v1/mcp/server", fmt.Sprintf(`{"server_id":%q,"description":"after",
		"allowed_tools":["a"],"credentials":{"auth_value":"****"},"static_headers":{"X-Static":"****","X-Tenant":"os.environ/TENANT"}}`, created.ServerID))
	if status != http.StatusOK || !strings.Contains(body, `"description":"after"`) {
		t.Fatalf("PUT metadata = %d %s", status, body)
	}
	noMarkers(t, "the PUT answer", body)
	if got := restTools(t, base); !slices.Equal(got, []string{"dyn/a", "filesrv/f"}) {
		t.Fatalf("tools after the metadata change = %q", got)
	}
	if n := up.fake.Count("initialize"); n != 1 || up.deletes.Load() != 0 {
		t.Fatalf("a metadata change: initialize %d, DELETEs %d; want the session kept", n, up.deletes.Load())
	}
	// A connection change (a credential) is a new target.
	status, body = api(t, "PUT", base+"/v1/mcp/server", fmt.Sprintf(`{"server_id":%q,
		"static_headers":{"X-Static":"MARK-STATIC-HDR-2"}}`, created.ServerID))
	if status != http.StatusOK {
		t.Fatalf("PUT connection = %d %s", status, body)
	}
	noMarkers(t, "the second PUT answer", body)
	restTools(t, base)
	// The PUT answers once the new generation serves; the old session is closed (its DELETE
	// sent) after that, by the Apply that retires the old generation.
	for end := time.Now().Add(5 * time.Second); up.deletes.Load() == 0 && time.Now().Before(end); {
		time.Sleep(5 * time.Millisecond)
	}
	if n := up.fake.Count("initialize"); n != 2 || up.deletes.Load() != 1 {
		t.Fatalf("a connection change: initialize %d, DELETEs %d; want a new session", n, up.deletes.Load())
	}
	if h := up.fake.Last(t, "tools/list").Header; h.Get("X-Static") != "MARK-STATIC-HDR-2" || h.Get("Authorization") != "Bearer MARK-AUTH-VALUE-1" {
		t.Fatalf("after the change the upstream saw X-Static %q, Authorization %q", h.Get("X-Static"), h.Get("Authorization"))
	}
	if g := gen(); g != 4 {
		t.Fatalf("generation after two PUTs = %d, want 4", g)
	}

	// Refusals, with a secret in the refused request.
	for _, c := range []struct{ method, path, body, want string }{
		{"PUT", "/v1/mcp/server", `{"server_id":"filesrv","description":"x"}`, "read-only through the API"},
		{"DELETE", "/v1/mcp/server/filesrv", ``, "read-only through the API"},
		{"POST", "/v1/mcp/server", `{"server_name":"filesrv","url":"https://x.example/mcp"}`, "already the name, server_id or alias of server"},
		{"POST", "/v1/mcp/server", `{"server_name":"bad","url":"https://x.example/mcp","auth_type":"nope",
			"credentials":{"auth_value":"MARK-AUTH-VALUE-2"}}`, "unknown or unsupported auth type"},
		{"PUT", "/v1/mcp/server", fmt.Sprintf(`{"server_id":%q,"auth_type":"nope","credentials":{"auth_value":"MARK-AUTH-VALUE-2"}}`,
			created.ServerID), "unknown or unsupported auth type"},
		{"POST", "/v1/mcp/server", `{"server_name":"cmd","transport":"stdio","command":"/bin/sh"}`, "a stdio server stored through the API runs one of"},
		{"PUT", "/v1/mcp/server", `{"server_id":"nope","description":"x"}`, "not found"},
	} {
		status, body := api(t, c.method, base+c.path, c.body)
		if status < 400 || status >= 500 || !strings.Contains(body, c.want) {
			t.Errorf("%s %s %s = %d %s, want a 4xx with %q", c.method, c.path, c.body, status, body, c.want)
		}
		noMarkers(t, "a refusal", body)
	}
	if g := gen(); g != 4 {
		t.Fatalf("refused writes changed the generation to %d", g)
	}

	status, body = api(t, "GET", base+"/v1/mcp/server", "")
	if status != 200 || !strings.Contains(body, `"server_name":"filesrv"`) || !strings.Contains(body, `"read_only":true`) ||
		strings.Contains(body, "file-secret") {
		t.Fatalf("list = %d %s", status, body)
	}
	noMarkers(t, "the list", body)
	status, body = api(t, "GET", base+"/v1/mcp/server/"+created.ServerID, "")
	if status != 200 {
		t.Fatalf("get = %d %s", status, body)
	}
	noMarkers(t, "the get", body)
	if status, body := api(t, "GET", base+"/v1/mcp/access_groups", ""); status != 200 || !strings.Contains(body, "team-x") {
		t.Fatalf("access groups = %d %s", status, body)
	}
	if status, body := api(t, "GET", base+"/v1/mcp/tools", ""); status != 200 || !strings.Contains(body, `"server_name":"dyn"`) {
		t.Fatalf("tools = %d %s", status, body)
	}

	// At rest: nothing in the database files.
	files, _ := filepath.Glob(filepath.Join(dir, store.FileName+"*"))
	for _, f := range files {
		raw, _ := os.ReadFile(f)
		noMarkers(t, "the database file "+filepath.Base(f), string(raw))
	}

	if status, body := api(t, "DELETE", base+"/v1/mcp/server/"+created.ServerID, ""); status != http.StatusAccepted {
		t.Fatalf("DELETE = %d %s", status, body)
	}
	if got := restTools(t, base); !slices.Equal(got, []string{"filesrv/f"}) {
		t.Fatalf("tools after DELETE = %q", got)
	}
	if status, _ := api(t, "DELETE", base+"/v1/mcp/server/"+created.ServerID, ""); status != http.StatusNotFound {
		t.Fatalf("second DELETE = %d, want 404", status)
	}
	noMarkers(t, "the log", log.String())
}

// TestStoredCredentialsNeedASaltKey: without LITELLM_SALT_KEY a literal credential is refused
// (it could not be encrypted), an os.environ/ reference is stored and resolved.
func TestStoredCredentialsNeedASaltKey(t *testing.T) {
	up := newUpstream(t, fakemcp.Opts{Lists: map[string][]json.RawMessage{"tools/list": fakemcp.Tools("a")}})
	var log fakemcp.LogBuffer
	_, base, _ := storedApp(t, map[string]string{"UP_TOKEN": "token-from-env"}, &log)
	status, body := api(t, "POST", base+"/v1/mcp/server", fmt.Sprintf(`{"server_name":"dyn","url":%q,
		"auth_type":"bearer_token","credentials":{"auth_value":"MARK-AUTH-VALUE-1"}}`, up.url))
	if status != http.StatusBadRequest || !strings.Contains(body, "LITELLM_SALT_KEY is not set") {
		t.Fatalf("a literal credential without a salt key = %d %s", status, body)
	}
	noMarkers(t, "the refusal", body)
	status, body = api(t, "POST", base+"/v1/mcp/server", fmt.Sprintf(`{"server_name":"dyn","url":%q,
		"auth_type":"bearer_token","credentials":{"auth_value":"os.environ/UP_TOKEN"},"mcp_info":{"protocol_version":"2025-11-25"}}`, up.url))
	if status != http.StatusCreated || !strings.Contains(body, `"auth_value":"os.environ/UP_TOKEN"`) {
		t.Fatalf("a reference without a salt key = %d %s", status, body)
	}
	restTools(t, base)
	if h := up.fake.Last(t, "tools/list").Header.Get("Authorization"); h != "Bearer token-from-env" {
		t.Fatalf("upstream Authorization = %q", h)
	}
	status, body = api(t, "POST", base+"/v1/mcp/server", `{"server_name":"unset","url":"https://x.example/mcp",
		"auth_type":"bearer_token","credentials":{"auth_value":"os.environ/NOT_SET"}}`)
	if status != http.StatusBadRequest || !strings.Contains(body, `environment variable \"NOT_SET\" is not set`) {
		t.Fatalf("an unset reference = %d %s", status, body)
	}
}

// TestServerWritesNeedStoreModelInDB: without store_model_in_db the API lists the file's
// servers and refuses writes.
func TestServerWritesNeedStoreModelInDB(t *testing.T) {
	a, err := app.New(parse(t, minimal), app.WithLookupEnv(noEnv), app.WithDataDir(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	base := serveApp(t, a)
	status, body := api(t, "POST", base+"/v1/mcp/server", `{"server_name":"x","url":"https://x.example/mcp"}`)
	if status != http.StatusBadRequest || !strings.Contains(body, "store_model_in_db") {
		t.Fatalf("POST = %d %s", status, body)
	}
	if status, body := api(t, "GET", base+"/v1/mcp/server", ""); status != 200 || strings.TrimSpace(body) != "[]" {
		t.Fatalf("GET = %d %s", status, body)
	}
}

// TestStoredServersSurviveARestartAndYieldToTheFile: a stored server is served again by a
// gateway started on the same store; a file server added later under its name wins, and the
// stored one is left out with a warning, not failing the reload.
func TestStoredServersSurviveARestartAndYieldToTheFile(t *testing.T) {
	up := newUpstream(t, fakemcp.Opts{Lists: map[string][]json.RawMessage{"tools/list": fakemcp.Tools("a")}})
	other := newUpstream(t, fakemcp.Opts{Lists: map[string][]json.RawMessage{"tools/list": fakemcp.Tools("z")}})
	env := envWith(map[string]string{"LITELLM_SALT_KEY": "salt-for-tests"})
	dir := t.TempDir()
	yaml := minimal + "  store_model_in_db: true\n"
	first, err := app.New(parse(t, yaml), app.WithLookupEnv(env), app.WithDataDir(dir))
	if err != nil {
		t.Fatal(err)
	}
	base := serveApp(t, first)
	status, body := api(t, "POST", base+"/v1/mcp/server", fmt.Sprintf(`{"server_name":"dyn","url":%q,
		"auth_type":"bearer_token","credentials":{"auth_value":"MARK-AUTH-VALUE-1"},"mcp_info":{"protocol_version":"2025-11-25"}}`, up.url))
	if status != http.StatusCreated {
		t.Fatalf("POST = %d %s", status, body)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	first.Drain()
	if err := first.Close(ctx); err != nil {
		t.Fatal(err)
	}

	var log fakemcp.LogBuffer
	second, err := app.New(parse(t, yaml), app.WithLookupEnv(env), app.WithDataDir(dir), app.WithLogger(log.Logger()))
	if err != nil {
		t.Fatal(err)
	}
	base = serveApp(t, second)
	if got := restTools(t, base); !slices.Equal(got, []string{"dyn/a"}) {
		t.Fatalf("tools after the restart = %q", got)
	}
	if h := up.fake.Last(t, "tools/list").Header.Get("Authorization"); h != "Bearer MARK-AUTH-VALUE-1" {
		t.Fatalf("after the restart the upstream saw Authorization %q", h)
	}
	file := parse(t, yaml+"mcp_servers:\n  dyn:\n    url: "+other.url+"\n    protocol_version: 2025-11-25\n")
	if err := second.Apply(ctx, file); err != nil {
		t.Fatal(err)
	}
	if got := restTools(t, base); !slices.Equal(got, []string{"dyn/z"}) {
		t.Fatalf("tools once the file has dyn = %q, want the file's", got)
	}
	if !strings.Contains(log.String(), "stored mcp server left out") {
		t.Fatalf("no warning for the stored server left out: %s", log.String())
	}
	noMarkers(t, "the log", log.String())
}
