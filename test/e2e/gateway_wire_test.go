package e2e

import (
	"bytes"
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

	"github.com/mcpgw/mcpgw/internal/testpeers"
)

func legacyHeaders(key, sid string) map[string]string {
	h := map[string]string{"Authorization": "Bearer " + key}
	if sid != "" {
		h["Mcp-Session-Id"] = sid
		h["MCP-Protocol-Version"] = "2025-11-25"
	}
	return h
}

// initLegacy opens a legacy session on url and returns its id.
func initLegacy(t *testing.T, url, key string) string {
	t.Helper()
	status, hdr, body := rpc(t, url, legacyHeaders(key, ""), `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	sid := hdr.Get("Mcp-Session-Id")
	if status != 200 || sid == "" || body["result"] == nil {
		t.Fatalf("initialize: %d %v", status, body)
	}
	res := body["result"].(map[string]any)
	caps, _ := res["capabilities"].(map[string]any)
	tools, _ := caps["tools"].(map[string]any)
	resources, _ := caps["resources"].(map[string]any)
	if res["protocolVersion"] != "2025-11-25" || tools["listChanged"] != true || resources["subscribe"] != true || resources["listChanged"] != true {
		t.Fatalf("initialize result = %v", res)
	}
	if status, _, _ := rpc(t, url, legacyHeaders(key, sid), `{"jsonrpc":"2.0","method":"notifications/initialized"}`); status != 202 {
		t.Fatalf("notifications/initialized: %d", status)
	}
	return sid
}

func toolsOf(body map[string]any) []string {
	res, _ := body["result"].(map[string]any)
	list, _ := res["tools"].([]any)
	var out []string
	for _, t := range list {
		m, _ := t.(map[string]any)
		name, _ := m["name"].(string)
		out = append(out, name)
	}
	return out
}

func TestLegacySessionAcrossReplicas(t *testing.T) {
	upstream := testpeers.StartGoFixtureHTTP(t, true)
	cfg := fmt.Sprintf("general_settings:\n  master_key: %s\nmcp_servers:\n  fx:\n    url: %s\n", testKey, upstream)
	env := map[string]string{"LITELLM_SALT_KEY": "replica-shared-salt-0123456789"}
	a := startGateway(t, cfg, env)
	b := startGateway(t, cfg, env)
	other := startGateway(t, cfg, map[string]string{"LITELLM_SALT_KEY": "another-salt-entirely-987654"})
	sid := initLegacy(t, a.url+"/mcp", testKey)

	list := `{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{}}`
	status, _, body := rpc(t, b.url+"/mcp", legacyHeaders(testKey, sid), list)
	if status != 200 || len(toolsOf(body)) == 0 {
		t.Fatalf("replica B serving A's session: %d %v", status, body)
	}
	if status, _, _ := rpc(t, other.url+"/mcp", legacyHeaders(testKey, sid), list); status != 404 {
		t.Fatalf("a replica with another salt accepted the session: %d", status)
	}
	forged := sid[:len(sid)-4] + "AAAA"
	if status, _, _ := rpc(t, a.url+"/mcp", legacyHeaders(testKey, forged), list); status != 404 {
		t.Fatalf("forged session id: %d", status)
	}
	if status, _, _ := rpc(t, a.url+"/mcp", map[string]string{"Authorization": "Bearer " + testKey}, list); status != 400 {
		t.Fatalf("request without a session id: %d", status)
	}
	// DELETE ends the session here.
	req, _ := http.NewRequest(http.MethodDelete, a.url+"/mcp", nil)
	req.Header.Set("Authorization", "Bearer "+testKey)
	req.Header.Set("Mcp-Session-Id", sid)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("DELETE: %v %v", resp, err)
	}
	resp.Body.Close()
	if status, _, _ := rpc(t, a.url+"/mcp", legacyHeaders(testKey, sid), list); status != 404 {
		t.Fatalf("session still served after DELETE: %d", status)
	}
	// ping, logging/setLevel
	sid = initLegacy(t, a.url+"/mcp", testKey)
	for _, m := range []string{`{"jsonrpc":"2.0","id":3,"method":"ping"}`, `{"jsonrpc":"2.0","id":4,"method":"logging/setLevel","params":{"level":"info"}}`} {
		status, _, body := rpc(t, a.url+"/mcp", legacyHeaders(testKey, sid), m)
		if status != 200 || body["result"] == nil {
			t.Fatalf("%s: %d %v", m, status, body)
		}
	}
	status, _, body = rpc(t, a.url+"/mcp", legacyHeaders(testKey, sid), `{"jsonrpc":"2.0","id":5,"method":"logging/setLevel","params":{"level":"loud"}}`)
	if errCode(body) != -32602 {
		t.Fatalf("invalid log level: %d %v", status, body)
	}
}

// webhook answers custom_auth with one identity per key.
func webhook(t *testing.T, identities map[string]string) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var in struct {
			APIKey string `json:"api_key"`
		}
		_ = json.NewDecoder(r.Body).Decode(&in)
		id, ok := identities[in.APIKey]
		if !ok {
			http.Error(w, "who are you", http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, id)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

func TestWebhookIdentitiesRestrictTools(t *testing.T) {
	hook := webhook(t, map[string]string{
		"sk-alice-key-000000000001": `{"user_id":"alice","team_id":"t1","object_permission":{"mcp_servers":["modern_fx"],"mcp_tool_permissions":{"modern_fx":["test_simple_text"]}}}`,
		"sk-bob-key-00000000000002": `{"user_id":"bob","team_id":"t2"}`,
	})
	gw := startGateway(t, fmt.Sprintf(`
general_settings:
  master_key: %s
  custom_auth: %s
mcp_servers:
  modern_fx:
    url: %s
  other:
    url: %s
`, testKey, hook, testpeers.StartGoFixtureHTTP(t, true), testpeers.StartGoFixtureHTTP(t, true)), nil)
	u := gw.url + "/mcp"
	hdr := func(key, method, name string) map[string]string {
		h := modernHeaders(method, name)
		h["Authorization"] = "Bearer " + key
		return h
	}
	list := `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{` + modernMeta + `}}`
	_, _, body := rpc(t, u, hdr("sk-alice-key-000000000001", "tools/list", ""), list)
	if got := toolsOf(body); len(got) != 1 || got[0] != "modern_fx-test_simple_text" {
		t.Fatalf("alice sees %v", got)
	}
	_, _, body = rpc(t, u, hdr("sk-bob-key-00000000000002", "tools/list", ""), list)
	if got := toolsOf(body); len(got) < 20 {
		t.Fatalf("bob (no restrictions) sees only %d tools", len(got))
	}
	call := func(name string) string {
		return `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"` + name + `","arguments":{},` + modernMeta + `}}`
	}
	status, _, body := rpc(t, u, hdr("sk-alice-key-000000000001", "tools/call", "modern_fx-test_image_content"), call("modern_fx-test_image_content"))
	res, _ := body["result"].(map[string]any)
	if status != 200 || res["isError"] != true || !strings.Contains(fmt.Sprint(res["content"]), "is not allowed") {
		t.Fatalf("refused tool: %d %v", status, body)
	}
	status, _, body = rpc(t, u, hdr("sk-alice-key-000000000001", "tools/call", "other-test_simple_text"), call("other-test_simple_text"))
	if status != 400 || errCode(body) != -32602 {
		t.Fatalf("tool of an invisible server: %d %v", status, body)
	}
	status, _, _ = rpc(t, u, hdr("sk-mallory-00000000000003", "tools/list", ""), list)
	if status != 401 {
		t.Fatalf("webhook 401 not passed through: %d", status)
	}
	// A legacy session of alice is not bob's.
	sid := initLegacy(t, u, "sk-alice-key-000000000001")
	if status, _, _ := rpc(t, u, legacyHeaders("sk-bob-key-00000000000002", sid), `{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{}}`); status != 404 {
		t.Fatalf("bob used alice's session: %d", status)
	}
}

func TestUpstreamFailureIsolation(t *testing.T) {
	gw := startGateway(t, fmt.Sprintf(`
general_settings:
  master_key: %s
mcp_servers:
  good:
    url: %s
  dead:
    url: http://127.0.0.1:1/mcp
`, testKey, testpeers.StartGoFixtureHTTP(t, true)), nil)
	status, _, body := rpc(t, gw.url+"/mcp", modernHeaders("tools/list", ""), `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{`+modernMeta+`}}`)
	if status != 200 || len(toolsOf(body)) == 0 {
		t.Fatalf("a dead upstream took the list down: %d %v", status, body)
	}
	res := body["result"].(map[string]any)
	outcomes := res["_meta"].(map[string]any)["litellm.ai/server_outcomes"].(map[string]any)
	good, dead := outcomes["good"].(map[string]any), outcomes["dead"].(map[string]any)
	if good["status"] != "ok" || good["tool_count"] == nil || dead["status"] != "unreachable" {
		t.Fatalf("outcomes = %v", outcomes)
	}
	if strings.Contains(fmt.Sprint(dead), "127.0.0.1") || strings.Contains(fmt.Sprint(dead), "refused") {
		t.Fatalf("outcome leaks upstream detail: %v", dead)
	}
	// discover degrades instead of failing
	status, _, body = rpc(t, gw.url+"/mcp", modernHeaders("server/discover", ""), `{"jsonrpc":"2.0","id":2,"method":"server/discover","params":{`+modernMeta+`}}`)
	if status != 200 || body["result"] == nil {
		t.Fatalf("discover with a dead upstream: %d %v", status, body)
	}
}

func TestScopedEndpointsAndREST(t *testing.T) {
	fx := testpeers.StartGoFixtureHTTP(t, true)
	cfg := func(prefix bool) string {
		return fmt.Sprintf(`
general_settings:
  master_key: %s
  mcp_scoped_prefix: %v
mcp_servers:
  one:
    url: %s
    alias: first
  two:
    url: %s
`, testKey, prefix, fx, fx)
	}
	gw := startGateway(t, cfg(true), nil)
	list := `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{` + modernMeta + `}}`
	for _, seg := range []string{"one", "first"} {
		_, _, body := rpc(t, gw.url+"/"+seg+"/mcp", modernHeaders("tools/list", ""), list)
		for _, name := range toolsOf(body) {
			if !strings.HasPrefix(name, "one-") {
				t.Fatalf("/%s/mcp served %s", seg, name)
			}
		}
	}
	if status, _, _ := rpc(t, gw.url+"/nosuch/mcp", modernHeaders("tools/list", ""), list); status != 404 {
		t.Fatalf("unknown scope: %d", status)
	}
	bare := startGateway(t, cfg(false), nil)
	_, _, body := rpc(t, bare.url+"/two/mcp", modernHeaders("tools/list", ""), list)
	names := strings.Join(toolsOf(body), ",")
	if !strings.Contains(names, "test_simple_text") || strings.Contains(names, "two-") {
		t.Fatalf("unprefixed scope served %s", names)
	}
	cs := sdkSession(t, bare.url+"/two/mcp", "2025-11-25")
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "test_simple_text", Arguments: map[string]any{}})
	if err != nil || !strings.Contains(textOf(res), "simple text") {
		t.Fatalf("bare call on scoped endpoint: %v %v", res, err)
	}

	// REST
	req, _ := http.NewRequest(http.MethodGet, gw.url+"/mcp-rest/tools/list?server_id=first", nil)
	req.Header.Set("Authorization", "Bearer "+testKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var listed struct {
		Tools []struct {
			Name    string            `json:"name"`
			MCPInfo map[string]string `json:"mcp_info"`
		} `json:"tools"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&listed)
	resp.Body.Close()
	if resp.StatusCode != 200 || len(listed.Tools) == 0 || listed.Tools[0].MCPInfo["server_name"] != "one" || strings.HasPrefix(listed.Tools[0].Name, "one-") {
		t.Fatalf("REST list: %d %+v", resp.StatusCode, listed)
	}
	post := func(body string) (int, string) {
		req, _ := http.NewRequest(http.MethodPost, gw.url+"/mcp-rest/tools/call", bytes.NewReader([]byte(body)))
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
	if status, b := post(`{"server_id":"one","name":"test_simple_text","arguments":null}`); status != 200 || !strings.Contains(b, "simple text") {
		t.Fatalf("REST call: %d %s", status, b)
	}
	if status, b := post(`{"name":"test_simple_text","arguments":{}}`); status != 400 || !strings.Contains(b, "missing_parameter") {
		t.Fatalf("REST call without server_id: %d %s", status, b)
	}
}

// TestQuickstartServes runs the README's quickstart config: the stdio demo
// server answers through the gateway while the optional HTTP one is down.
func TestQuickstartServes(t *testing.T) {
	root := testpeers.RepoRoot(t)
	raw, err := os.ReadFile(filepath.Join(root, "examples", "quickstart.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	cfg := strings.ReplaceAll(string(raw), "./examples/hello-server", filepath.Join(root, "examples", "hello-server"))
	cfg = strings.ReplaceAll(cfg, "127.0.0.1:4001", "127.0.0.1:1")
	gw := startGateway(t, cfg, nil)
	h := modernHeaders("tools/call", "hello-echo")
	h["Authorization"] = "Bearer sk-quickstart-please-change"
	status, _, body := rpc(t, gw.url+"/mcp", h, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"hello-echo","arguments":{"message":"hi"},`+modernMeta+`}}`)
	if status != 200 || !strings.Contains(fmt.Sprint(body["result"]), "Echo: hi") {
		t.Fatalf("quickstart hello-echo: %d %v", status, body)
	}
}

// TestModernListen opens subscriptions/listen through the gateway and sees
// the acknowledgement, then the upstream's list change tagged with the
// listen's id.
func TestModernListen(t *testing.T) {
	gw := startGateway(t, fmt.Sprintf("general_settings:\n  master_key: %s\nmcp_servers:\n  fx:\n    url: %s\n", testKey, testpeers.StartGoFixtureHTTP(t, true)), nil)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	body := `{"jsonrpc":"2.0","id":"L1","method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true,"promptsListChanged":false},` + modernMeta + `}}`
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, gw.url+"/mcp", strings.NewReader(body))
	for k, v := range modernHeaders("subscriptions/listen", "") {
		req.Header.Set(k, v)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	events := make(chan string, 16)
	go func() {
		defer close(events)
		buf := make([]byte, 0, 4096)
		tmp := make([]byte, 4096)
		for {
			n, err := resp.Body.Read(tmp)
			buf = append(buf, tmp[:n]...)
			for {
				i := bytes.Index(buf, []byte("\n\n"))
				if i < 0 {
					break
				}
				for _, line := range strings.Split(string(buf[:i]), "\n") {
					if d, ok := strings.CutPrefix(line, "data: "); ok {
						events <- d
					}
				}
				buf = buf[i+2:]
			}
			if err != nil {
				return
			}
		}
	}()
	first := <-events
	if !strings.Contains(first, "notifications/subscriptions/acknowledged") || !strings.Contains(first, `"io.modelcontextprotocol/subscriptionId":"L1"`) || !strings.Contains(first, `"toolsListChanged":true`) || strings.Contains(first, "promptsListChanged") {
		t.Fatalf("first event = %s", first)
	}
	status, _, out := rpc(t, gw.url+"/mcp", modernHeaders("tools/call", "fx-test_trigger_tool_change"), `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"fx-test_trigger_tool_change","arguments":{},`+modernMeta+`}}`)
	if status != 200 {
		t.Fatalf("trigger: %d %v", status, out)
	}
	select {
	case ev := <-events:
		if !strings.Contains(ev, "notifications/tools/list_changed") || !strings.Contains(ev, `"io.modelcontextprotocol/subscriptionId":"L1"`) {
			t.Fatalf("event = %s", ev)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no list_changed on the listen stream")
	}
}

// TestLegacySubscribe: a legacy caller's resources/subscribe goes to the
// upstream that serves the URI, and its updates reach the caller.
func TestLegacySubscribe(t *testing.T) {
	gw := startGateway(t, fmt.Sprintf("general_settings:\n  master_key: %s\nmcp_servers:\n  leg:\n    url: %s\n", testKey, testpeers.StartGoFixtureHTTP(t, false)), nil)
	updates := make(chan string, 8)
	client := sdk.NewClient(&sdk.Implementation{Name: "sub", Version: "1"}, &sdk.ClientOptions{
		ResourceUpdatedHandler: func(_ context.Context, req *sdk.ResourceUpdatedNotificationRequest) {
			updates <- req.Params.URI
		},
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := client.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: gw.url + "/mcp", HTTPClient: &http.Client{Transport: authTransport{testKey}}}, &sdk.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if err := cs.Subscribe(ctx, &sdk.SubscribeParams{URI: "test://watched-resource"}); err != nil {
		t.Fatal(err)
	}
	select {
	case uri := <-updates:
		if uri != "test://watched-resource" {
			t.Fatalf("update for %s", uri)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("no resource update reached the legacy caller")
	}
	if err := cs.Unsubscribe(ctx, &sdk.UnsubscribeParams{URI: "test://watched-resource"}); err != nil {
		t.Fatal(err)
	}
}
