package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/mcpgw/mcpgw/internal/app"
	"github.com/mcpgw/mcpgw/internal/testpeers"
)

// previewSecret marks every credential a preview is given; it must never
// come back in an answer or reach the log.
const previewSecret = "PREVIEW-SECRET-MARKER-7f3a"

// logBuffer is a log sink safe for the gateway's goroutines.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// previewGateway serves a gateway with a store and general_settings extra,
// logging every level into the returned buffer.
func previewGateway(t *testing.T, extra string) (string, *logBuffer) {
	t.Helper()
	logs := &logBuffer{}
	log := slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	gw := startGatewayWith(t, fmt.Sprintf("general_settings:\n  master_key: %s\n%s", testKey, extra), nil,
		app.WithDataDir(t.TempDir()), app.WithLogger(log))
	return gw.url, logs
}

// preview posts body to /mcp-rest/test/<op> with key and returns the
// status and the raw answer.
func preview(t *testing.T, gw, op, key, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, gw+"/mcp-rest/test/"+op, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	_, _ = b.ReadFrom(resp.Body)
	return resp.StatusCode, b.String()
}

// previewBody is a NewMCPServerRequest for url carrying the secret marker
// in every credential field.
func previewBody(url string) string {
	return fmt.Sprintf(`{"server_name":"trial","url":%q,"transport":"http","auth_type":"bearer_token",
		"credentials":{"auth_value":%q},"static_headers":{"X-Trial":%q},"mcp_info":null,"status":"unknown"}`,
		url, previewSecret+"-auth", previewSecret+"-header")
}

// TestHealthPreviewTriesAConfigWithoutSavingIt: the proxy admin's preview
// connects to and lists the tools of a posted server, in LiteLLM's shapes,
// and nothing of it stays: no server appears in listings or health.
func TestHealthPreviewTriesAConfigWithoutSavingIt(t *testing.T) {
	fixture := testpeers.StartGoFixtureHTTP(t, false)
	gw, logs := previewGateway(t, "  mcp_preview_allow_private_networks: true\n")

	status, body := preview(t, gw, "connection", testKey, previewBody(fixture))
	if status != 200 || strings.TrimSpace(body) != `{"status":"ok"}` {
		t.Fatalf("test/connection = %d %s", status, body)
	}
	status, body = preview(t, gw, "tools/list", testKey, previewBody(fixture))
	var listed struct {
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
		Error   any    `json:"error"`
		Message string `json:"message"`
	}
	if err := json.Unmarshal([]byte(body), &listed); err != nil || status != 200 || len(listed.Tools) == 0 ||
		listed.Error != nil || listed.Message != "Successfully retrieved tools" {
		t.Fatalf("test/tools/list = %d %s", status, body)
	}
	if got, _ := serverStatuses(t, gw, testKey, ""); len(got) != 0 {
		t.Fatalf("after previews the gateway has servers %v, want none", got)
	}
	if strings.Contains(body, previewSecret) || strings.Contains(logs.String(), previewSecret) {
		t.Fatal("the preview's credential reached the answer or the log")
	}
}

// TestHealthPreviewFailuresNeverEchoSecrets: an upstream that fails, even
// one whose error body repeats the credential it was sent, and one that
// cannot be reached, are answered 200 {"status":"error"} with the fault
// class; neither the answer nor the log holds the credential.
func TestHealthPreviewFailuresNeverEchoSecrets(t *testing.T) {
	echo := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "bad credential: "+r.Header.Get("Authorization")+" "+r.Header.Get("X-Trial"), http.StatusInternalServerError)
	}))
	t.Cleanup(echo.Close)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + l.Addr().String() + "/mcp"
	l.Close()
	gw, logs := previewGateway(t, "  mcp_preview_allow_private_networks: true\n")
	for _, tc := range []struct{ name, url, fault string }{
		{"echoing upstream", echo.URL + "/mcp", "upstream_error"},
		{"closed port", closed, "unreachable"},
	} {
		for _, op := range []string{"connection", "tools/list"} {
			status, body := preview(t, gw, op, testKey, previewBody(tc.url))
			var m map[string]any
			_ = json.Unmarshal([]byte(body), &m)
			t.Logf("%s %s: %d %s", tc.name, op, status, body)
			if status != 200 || m["status"] != "error" || m["error"] != tc.fault {
				t.Errorf("%s %s = %d %s, want 200 status error, error %s", tc.name, op, status, body, tc.fault)
			}
			if strings.Contains(body, previewSecret) || strings.Contains(body, "bad credential") {
				t.Errorf("%s %s echoed the credential or the upstream's body: %s", tc.name, op, body)
			}
		}
	}
	if strings.Contains(logs.String(), previewSecret) {
		t.Fatal("a preview's credential reached the log")
	}
}

// TestHealthPreviewRefusals: previews are the proxy admin's; a stdio
// command is refused unless mcp_preview_allow_stdio; loopback and private
// addresses unless mcp_preview_allow_private_networks, link-local ones
// (cloud metadata) always; an invalid config is 400 naming its problem.
func TestHealthPreviewRefusals(t *testing.T) {
	fixture := testpeers.StartGoFixtureHTTP(t, false)
	gw, logs := previewGateway(t, "")
	key := generateKey(t, gw, `{}`)
	stdio := fmt.Sprintf(`{"server_name":"trial","transport":"stdio","command":%q,"env":{"TOKEN":%q}}`,
		testpeers.GoFixture(t), previewSecret)
	for _, tc := range []struct {
		name, key, body string
		status          int
		says            string
	}{
		{"not the admin", key, previewBody(fixture), 403, "proxy admin"},
		{"stdio", testKey, stdio, 403, "mcp_preview_allow_stdio"},
		{"loopback", testKey, previewBody(fixture), 403, "loopback"},
		{"metadata", testKey, previewBody("http://169.254.169.254/mcp"), 403, "link-local"},
		{"no url", testKey, `{"server_name":"trial","credentials":{"auth_value":"` + previewSecret + `"}}`, 400, "has no url"},
		{"not an object", testKey, `[1]`, 400, "JSON object"},
	} {
		status, body := preview(t, gw, "tools/list", tc.key, tc.body)
		t.Logf("%s: %d %s", tc.name, status, body)
		if status != tc.status || !strings.Contains(body, tc.says) || strings.Contains(body, previewSecret) {
			t.Errorf("%s = %d %s, want %d saying %q", tc.name, status, body, tc.status, tc.says)
		}
	}
	if strings.Contains(logs.String(), previewSecret) {
		t.Fatal("a refused preview's credential reached the log")
	}

	// Allowed, a stdio preview runs the command and lists its tools.
	gw, _ = previewGateway(t, "  mcp_preview_allow_stdio: true\n")
	status, body := preview(t, gw, "tools/list", testKey, stdio)
	if status != 200 || !strings.Contains(body, `"Successfully retrieved tools"`) {
		t.Fatalf("allowed stdio preview = %d %s", status, body)
	}
	// Link-local stays refused with private networks allowed.
	gw, _ = previewGateway(t, "  mcp_preview_allow_private_networks: true\n")
	if status, body := preview(t, gw, "connection", testKey, previewBody("http://[fe80::1]/mcp")); status != 403 {
		t.Fatalf("link-local with private networks allowed = %d %s, want 403", status, body)
	}
}
