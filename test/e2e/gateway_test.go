package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpgw/mcpgw/internal/testpeers"
)

// authTransport adds the gateway credential to every request.
type authTransport struct{ key string }

func (a authTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+a.key)
	return http.DefaultTransport.RoundTrip(r)
}

func sdkSession(t *testing.T, endpoint string, version string) *sdk.ClientSession {
	t.Helper()
	client := sdk.NewClient(&sdk.Implementation{Name: "e2e", Version: "1"}, nil)
	tr := &sdk.StreamableClientTransport{Endpoint: endpoint, HTTPClient: &http.Client{Transport: authTransport{testKey}}, DisableStandaloneSSE: true}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := client.Connect(ctx, tr, &sdk.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatalf("connect %s (%s): %v", endpoint, version, err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// fullConfig fronts the go-sdk fixture over stdio, stateless HTTP and
// sessionful HTTP, and server-everything over streamable HTTP.
func fullConfig(t *testing.T) string {
	return fmt.Sprintf(`
general_settings:
  master_key: %s
mcp_servers:
  stdio_fx:
    transport: stdio
    command: %s
  modern_fx:
    url: %s
  legacy_fx:
    url: %s
  everything:
    url: %s
`, testKey, testpeers.GoFixture(t), testpeers.StartGoFixtureHTTP(t, true), testpeers.StartGoFixtureHTTP(t, false),
		testpeers.StartNodeEverything(t, "streamableHttp"))
}

func toolNames(tools []*sdk.Tool) map[string]bool {
	out := map[string]bool{}
	for _, tl := range tools {
		out[tl.Name] = true
	}
	return out
}

func textOf(res *sdk.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// TestGatewayWithSDKClients drives the gateway with the official go-sdk
// client in both eras, in front of upstreams of both eras.
func TestGatewayWithSDKClients(t *testing.T) {
	gw := startGateway(t, fullConfig(t), nil)
	for _, version := range []string{"2026-07-28", "2025-11-25"} {
		t.Run(version, func(t *testing.T) {
			cs := sdkSession(t, gw.url+"/mcp", version)
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			if got := cs.InitializeResult().ProtocolVersion; got != version {
				t.Fatalf("negotiated %s, want %s", got, version)
			}
			tools, err := cs.ListTools(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			names := toolNames(tools.Tools)
			for _, want := range []string{"stdio_fx-test_simple_text", "modern_fx-test_simple_text", "legacy_fx-test_simple_text", "everything-echo"} {
				if !names[want] {
					t.Fatalf("tools/list lacks %s (%d tools)", want, len(names))
				}
			}
			for _, name := range []string{"stdio_fx-test_simple_text", "modern_fx-test_simple_text", "legacy_fx-test_simple_text"} {
				res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: name, Arguments: map[string]any{}})
				if err != nil || !strings.Contains(textOf(res), "simple text response") {
					t.Fatalf("call %s: %v %v", name, res, err)
				}
			}
			res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "everything-echo", Arguments: map[string]any{"message": "hi"}})
			if err != nil || textOf(res) != "Echo: hi" {
				t.Fatalf("call everything-echo: %v %v", res, err)
			}
			prompts, err := cs.ListPrompts(ctx, nil)
			if err != nil || len(prompts.Prompts) == 0 {
				t.Fatalf("prompts/list: %v", err)
			}
			pr, err := cs.GetPrompt(ctx, &sdk.GetPromptParams{Name: "modern_fx-test_prompt_with_arguments", Arguments: map[string]string{"arg1": "a", "arg2": "b"}})
			if err != nil || len(pr.Messages) == 0 {
				t.Fatalf("prompts/get: %v", err)
			}
			rr, err := cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: "test://static-text"})
			if err != nil || len(rr.Contents) == 0 {
				t.Fatalf("resources/read: %v", err)
			}
			templates, err := cs.ListResourceTemplates(ctx, nil)
			if err != nil || len(templates.ResourceTemplates) == 0 {
				t.Fatalf("resources/templates/list: %v", err)
			}
			// An unknown tool: -32602 for a modern caller, LiteLLM's isError
			// result for a legacy one.
			res, err = cs.CallTool(ctx, &sdk.CallToolParams{Name: "nosuch-tool", Arguments: map[string]any{}})
			if version == "2026-07-28" && err == nil {
				t.Fatal("unknown tool accepted")
			}
			if version == "2025-11-25" && (err != nil || !res.IsError || textOf(res) != "Tool 'nosuch-tool' not found") {
				t.Fatalf("unknown tool: %v %+v", err, res)
			}
		})
	}
}

func TestGatewayLegacySSETransport(t *testing.T) {
	gw := startGateway(t, fullConfig(t), nil)
	client := sdk.NewClient(&sdk.Implementation{Name: "sse", Version: "1"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := client.Connect(ctx, &sdk.SSEClientTransport{Endpoint: gw.url + "/mcp/sse", HTTPClient: &http.Client{Transport: authTransport{testKey}}}, &sdk.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "modern_fx-test_simple_text", Arguments: map[string]any{}})
	if err != nil || !strings.Contains(textOf(res), "simple text response") {
		t.Fatalf("call over /mcp/sse: %v %v", res, err)
	}
	tools, err := cs.ListTools(ctx, nil)
	if err != nil || !toolNames(tools.Tools)["everything-echo"] {
		t.Fatalf("list over /mcp/sse: %v", err)
	}
}

// rpc posts one JSON-RPC message and returns the status and decoded body.
func rpc(t *testing.T, url string, hdr map[string]string, body string) (int, http.Header, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader([]byte(body)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var m map[string]any
	if len(raw) > 0 {
		if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
			for _, line := range strings.Split(string(raw), "\n") {
				if d, ok := strings.CutPrefix(line, "data: "); ok {
					_ = json.Unmarshal([]byte(d), &m)
				}
			}
		} else if strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
			if err := json.Unmarshal(raw, &m); err != nil {
				t.Fatalf("body %q: %v", raw, err)
			}
		}
	}
	return resp.StatusCode, resp.Header, m
}

const modernMeta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"}}`

func modernHeaders(method, name string) map[string]string {
	h := map[string]string{"Authorization": "Bearer " + testKey, "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": method}
	if name != "" {
		h["Mcp-Name"] = name
	}
	return h
}

func errCode(m map[string]any) int {
	e, _ := m["error"].(map[string]any)
	c, _ := e["code"].(float64)
	return int(c)
}

func TestModernWireRules(t *testing.T) {
	gw := startGateway(t, fmt.Sprintf(`
general_settings:
  master_key: %s
mcp_servers:
  modern_fx:
    url: %s
`, testKey, testpeers.StartGoFixtureHTTP(t, true)), nil)
	u := gw.url + "/mcp"
	cases := []struct {
		name   string
		hdr    map[string]string
		body   string
		status int
		code   int
	}{
		{"missing _meta", modernHeaders("tools/list", ""), `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`, 400, -32602},
		{"missing clientCapabilities", modernHeaders("tools/list", ""), `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`, 400, -32602},
		{"Mcp-Method mismatch", modernHeaders("prompts/list", ""), `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{` + modernMeta + `}}`, 400, -32020},
		{"Mcp-Method missing", map[string]string{"Authorization": "Bearer " + testKey, "MCP-Protocol-Version": "2026-07-28"}, `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{` + modernMeta + `}}`, 400, -32020},
		{"Mcp-Name mismatch", modernHeaders("tools/call", "other"), `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"modern_fx-test_simple_text","arguments":{},` + modernMeta + `}}`, 400, -32020},
		{"Mcp-Name base64 matches", modernHeaders("tools/call", "=?base64?bW9kZXJuX2Z4LXRlc3Rfc2ltcGxlX3RleHQ=?="), `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"modern_fx-test_simple_text","arguments":{},` + modernMeta + `}}`, 200, 0},
		{"unsupported revision", map[string]string{"Authorization": "Bearer " + testKey, "MCP-Protocol-Version": "2027-01-01", "Mcp-Method": "tools/list"}, `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2027-01-01","io.modelcontextprotocol/clientCapabilities":{}}}}`, 400, -32022},
		{"initialize removed", modernHeaders("initialize", ""), `{"jsonrpc":"2.0","id":"unsupported","method":"initialize","params":{` + modernMeta + `}}`, 404, -32601},
		{"ping removed", modernHeaders("ping", ""), `{"jsonrpc":"2.0","id":2,"method":"ping","params":{` + modernMeta + `}}`, 404, -32601},
		{"logging/setLevel removed", modernHeaders("logging/setLevel", ""), `{"jsonrpc":"2.0","id":2,"method":"logging/setLevel","params":{"level":"info",` + modernMeta + `}}`, 404, -32601},
		{"resources/subscribe removed", modernHeaders("resources/subscribe", ""), `{"jsonrpc":"2.0","id":2,"method":"resources/subscribe","params":{"uri":"x",` + modernMeta + `}}`, 404, -32601},
		{"resources/unsubscribe removed", modernHeaders("resources/unsubscribe", ""), `{"jsonrpc":"2.0","id":2,"method":"resources/unsubscribe","params":{"uri":"x",` + modernMeta + `}}`, 404, -32601},
		{"unknown tool", modernHeaders("tools/call", "nope-x"), `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"nope-x","arguments":{},` + modernMeta + `}}`, 400, -32602},
		{"no credential", map[string]string{"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/list"}, `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{` + modernMeta + `}}`, 401, -32600},
		{"malformed JSON", modernHeaders("tools/list", ""), `{"jsonrpc":`, 400, -32700},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			status, _, body := rpc(t, u, tc.hdr, tc.body)
			if status != tc.status || errCode(body) != tc.code {
				t.Fatalf("status %d code %d, want %d %d; body %v", status, errCode(body), tc.status, tc.code, body)
			}
			if tc.code == -32022 {
				data, _ := body["error"].(map[string]any)["data"].(map[string]any)
				if data["requested"] != "2027-01-01" || data["supported"] == nil {
					t.Fatalf("-32022 data = %v", data)
				}
			}
		})
	}
	t.Run("notifications/initialized is accepted", func(t *testing.T) {
		status, _, _ := rpc(t, u, modernHeaders("notifications/initialized", ""), `{"jsonrpc":"2.0","method":"notifications/initialized","params":{`+modernMeta+`}}`)
		if status != 202 {
			t.Fatalf("status %d", status)
		}
	})
	t.Run("GET and DELETE are 405", func(t *testing.T) {
		for _, m := range []string{http.MethodGet, http.MethodDelete} {
			req, _ := http.NewRequest(m, u, nil)
			req.Header.Set("Authorization", "Bearer "+testKey)
			req.Header.Set("MCP-Protocol-Version", "2026-07-28")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != 405 {
				t.Fatalf("%s: %d", m, resp.StatusCode)
			}
		}
	})
	t.Run("every result has resultType and serverInfo", func(t *testing.T) {
		for _, m := range []struct{ method, name, params string }{
			{"tools/list", "", `{` + modernMeta + `}`},
			{"server/discover", "", `{` + modernMeta + `}`},
			{"tools/call", "modern_fx-test_simple_text", `{"name":"modern_fx-test_simple_text","arguments":{},` + modernMeta + `}`},
			{"resources/read", "test://static-text", `{"uri":"test://static-text",` + modernMeta + `}`},
		} {
			status, _, body := rpc(t, u, modernHeaders(m.method, m.name), `{"jsonrpc":"2.0","id":7,"method":"`+m.method+`","params":`+m.params+`}`)
			res, _ := body["result"].(map[string]any)
			meta, _ := res["_meta"].(map[string]any)
			if status != 200 || res["resultType"] != "complete" || meta["io.modelcontextprotocol/serverInfo"] == nil {
				t.Fatalf("%s: status %d result %v", m.method, status, body)
			}
		}
	})
	t.Run("discover aggregates capabilities", func(t *testing.T) {
		_, _, body := rpc(t, u, modernHeaders("server/discover", ""), `{"jsonrpc":"2.0","id":7,"method":"server/discover","params":{`+modernMeta+`}}`)
		res, _ := body["result"].(map[string]any)
		caps, _ := res["capabilities"].(map[string]any)
		tools, _ := caps["tools"].(map[string]any)
		resources, _ := caps["resources"].(map[string]any)
		if tools["listChanged"] != true || resources["subscribe"] != true || res["ttlMs"] == nil || res["cacheScope"] == nil {
			t.Fatalf("discover = %v", res)
		}
	})
}

func TestAdvertisedLegacyOnly(t *testing.T) {
	gw := startGateway(t, fmt.Sprintf(`
general_settings:
  master_key: %s
  mcp_advertised_versions: ["2025-11-25"]
mcp_servers:
  modern_fx:
    url: %s
`, testKey, testpeers.StartGoFixtureHTTP(t, true)), nil)
	status, _, body := rpc(t, gw.url+"/mcp", modernHeaders("tools/list", ""), `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{`+modernMeta+`}}`)
	if status != 400 || body["error"] == nil {
		t.Fatalf("modern request on a legacy-only gateway: %d %v", status, body)
	}
	cs := sdkSession(t, gw.url+"/mcp", "2025-11-25")
	tools, err := cs.ListTools(context.Background(), nil)
	if err != nil || !toolNames(tools.Tools)["modern_fx-test_simple_text"] {
		t.Fatalf("legacy caller: %v", err)
	}
}
