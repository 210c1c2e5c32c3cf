package app_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpgw/mcpgw/internal/app"
)

// sdkUpstream serves a go-sdk library server (2025-11-25, sessionful) with
// one tool, echo_<name>, over real HTTP.
func sdkUpstream(t *testing.T, name string) string {
	t.Helper()
	s := sdk.NewServer(&sdk.Implementation{Name: name, Version: "1"}, nil)
	s.AddTool(&sdk.Tool{Name: "echo_" + name, InputSchema: map[string]any{"type": "object"}}, func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "from " + name}}}, nil
	})
	srv := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s }, nil))
	t.Cleanup(srv.Close)
	return srv.URL + "/mcp"
}

// legacyPost POSTs one legacy message on url (session sid, none for
// initialize) and returns the status, the session id header and the body.
func legacyPost(t *testing.T, url, sid, body string) (int, string, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+testKey)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if sid != "" {
		req.Header.Set("Mcp-Session-Id", sid)
		req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Mcp-Session-Id"), string(b)
}

// openStream GETs url as an SSE stream (with the session's headers when
// sid is set); the returned channel closes when the gateway ends it, and
// data receives each data line.
func openStream(t *testing.T, url, sid string) (ended <-chan struct{}, data <-chan string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	req.Header.Set("Authorization", "Bearer "+testKey)
	req.Header.Set("Accept", "text/event-stream")
	if sid != "" {
		req.Header.Set("Mcp-Session-Id", sid)
		req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 {
		cancel()
		t.Fatalf("GET %s: %v %v", url, resp, err)
	}
	done, lines := make(chan struct{}), make(chan string, 16)
	go func() {
		defer close(done)
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				select {
				case lines <- d:
				default:
				}
			}
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
	return done, lines
}

// openSSESession opens an /mcp/sse connection and initializes its session:
// the channel closes when the gateway ends the stream; endpoint is the
// path its messages are POSTed to.
func openSSESession(t *testing.T, base string) (ended <-chan struct{}, endpoint string) {
	t.Helper()
	ended, data := openStream(t, base+"/mcp/sse", "")
	select {
	case endpoint = <-data:
	case <-time.After(10 * time.Second):
		t.Fatal("/mcp/sse sent no endpoint")
	}
	if status, _, body := legacyPost(t, base+endpoint, "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`); status != 202 {
		t.Fatalf("initialize over /mcp/sse = %d %s", status, body)
	}
	select {
	case <-data: // the initialize answer: the session is set up
	case <-time.After(10 * time.Second):
		t.Fatal("initialize over /mcp/sse was not answered")
	}
	return ended, endpoint
}

// TestReloadKeepsLegacyStreamsOfUnchangedServers: a reload through the
// Reloader keeps a legacy session's GET stream whose servers kept their
// connections, without waiting for it (it is a stream, not a request), and
// serves its next call on the new config; an /mcp/sse connection that sees
// the server whose url changed ends (its POSTs then get 404); a url change
// of the kept session's own server ends it too (404, so its client
// initializes again).
func TestReloadKeepsLegacyStreamsOfUnchangedServers(t *testing.T) {
	aURL, bURL := sdkUpstream(t, "a"), sdkUpstream(t, "b")
	path := filepath.Join(t.TempDir(), "config.yaml")
	yaml := func(a, b string) string {
		return fmt.Sprintf("%smcp_servers:\n  a:\n    url: %s\n  b:\n    url: %s\n", minimal, a, b)
	}
	if err := os.WriteFile(path, []byte(yaml(aURL, bURL)), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, _, sum, err := app.LoadConfigFile(path, noEnv)
	if err != nil {
		t.Fatal(err)
	}
	a, err := app.New(cfg, app.WithLookupEnv(noEnv))
	if err != nil {
		t.Fatal(err)
	}
	base := serveApp(t, a)
	r := app.NewReloader(a, path, app.ReloadOptions{LookupEnv: noEnv, Loaded: sum, Debounce: time.Hour})
	t.Cleanup(r.Close)

	onA := base + "/a/mcp"
	status, sid, body := legacyPost(t, onA, "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	if status != 200 || sid == "" {
		t.Fatalf("initialize = %d %s", status, body)
	}
	getEnded, _ := openStream(t, onA, sid)
	sseEnded, endpoint := openSSESession(t, base)
	call := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"a-echo_a","arguments":{}}}`

	if err := os.WriteFile(path, []byte(yaml(aURL, bURL+"?moved=1")), 0o600); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if applied, err := r.Reload(context.Background()); !applied || err != nil {
		t.Fatalf("reload moving b = %v, %v", applied, err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("the reload took %v: it waited for a kept stream", d)
	}
	select {
	case <-sseEnded:
	case <-time.After(5 * time.Second):
		t.Fatal("the /mcp/sse connection that sees b is still open after b moved")
	}
	if status, _, _ := legacyPost(t, base+endpoint, "", call); status != http.StatusNotFound {
		t.Errorf("a POST on the ended /mcp/sse connection = %d, want 404", status)
	}
	select {
	case <-getEnded:
		t.Fatal("the GET stream of a session that sees only a ended when b moved")
	case <-time.After(200 * time.Millisecond):
	}
	if status, _, body := legacyPost(t, onA, sid, call); status != 200 || !strings.Contains(body, "from a") {
		t.Fatalf("a call on the kept session = %d %s", status, body)
	}

	if err := os.WriteFile(path, []byte(yaml(aURL+"?moved=1", bURL+"?moved=1")), 0o600); err != nil {
		t.Fatal(err)
	}
	if applied, err := r.Reload(context.Background()); !applied || err != nil {
		t.Fatalf("reload moving a = %v, %v", applied, err)
	}
	select {
	case <-getEnded:
	case <-time.After(5 * time.Second):
		t.Fatal("the GET stream is still open after its server moved")
	}
	if status, _, body := legacyPost(t, onA, sid, call); status != http.StatusNotFound {
		t.Fatalf("a call on the session whose server moved = %d %s, want 404", status, body)
	}
	var m map[string]any
	if _, _, body := legacyPost(t, onA, "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`); json.Unmarshal([]byte(body), &m) != nil || m["result"] == nil {
		t.Fatalf("a new session after the move: %s", body)
	}
}
