package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpgw/mcpgw/internal/jsonrpc"
)

// urlElicitClient connects a 2025-11-25 Go SDK client to endpoint that
// declares the given elicitation modes and accepts every request, recording
// their params.
func urlElicitClient(t *testing.T, endpoint string, form, url bool) (*sdk.ClientSession, func() []*sdk.ElicitParams) {
	t.Helper()
	var mu sync.Mutex
	var asked []*sdk.ElicitParams
	caps := &sdk.ElicitationCapabilities{}
	if form {
		caps.Form = &sdk.FormElicitationCapabilities{}
	}
	if url {
		caps.URL = &sdk.URLElicitationCapabilities{}
	}
	client := sdk.NewClient(&sdk.Implementation{Name: "url-elicit", Version: "1"}, &sdk.ClientOptions{
		Capabilities: &sdk.ClientCapabilities{Elicitation: caps},
		ElicitationHandler: func(_ context.Context, req *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
			mu.Lock()
			asked = append(asked, req.Params)
			mu.Unlock()
			return &sdk.ElicitResult{Action: "accept"}, nil
		},
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := client.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: endpoint, HTTPClient: &http.Client{Transport: authTransport{testKey}}, DisableStandaloneSSE: true}, &sdk.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs, func() []*sdk.ElicitParams {
		mu.Lock()
		defer mu.Unlock()
		return append([]*sdk.ElicitParams(nil), asked...)
	}
}

const urlElicitMeta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{"url":{}}},"io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"}}`
const formElicitMeta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{}},"io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"}}`

// server-everything's trigger-url-elicitation (registered only for clients
// that declare URL-mode elicitation) through the gateway, for callers of
// both eras, over stdio and streamable HTTP.
func TestURLElicitationWithRealServerEverything(t *testing.T) {
	gw, _ := everythingTaps(t, "    allow_elicitation: true")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for _, server := range []string{"stdio", "http"} {
		tool := server + "-trigger-url-elicitation"
		t.Run(server+"/legacy caller declaring url", func(t *testing.T) {
			cs, asked := urlElicitClient(t, gw.url+"/mcp", true, true)
			res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: tool, Arguments: map[string]any{"url": "https://example.com/consent"}})
			if err != nil || res.IsError || !strings.Contains(textOf(res), "User completed the URL elicitation flow") {
				t.Fatalf("res=%v err=%v", res, err)
			}
			got := asked()
			if len(got) != 1 || got[0].Mode != "url" || got[0].URL != "https://example.com/consent" || got[0].ElicitationID == "" {
				t.Fatalf("elicitation asked: %+v", got)
			}
		})
		t.Run(server+"/legacy caller, form only", func(t *testing.T) {
			cs, asked := urlElicitClient(t, gw.url+"/mcp", true, false)
			res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: tool, Arguments: map[string]any{"url": "https://example.com/consent"}})
			if len(asked()) != 0 {
				t.Fatalf("a form-only caller was sent a URL-mode elicitation: %+v", asked())
			}
			if err == nil && !res.IsError {
				t.Fatalf("the call succeeded without the caller's consent: %v", textOf(res))
			}
		})
		t.Run(server+"/legacy caller, error path (-32042)", func(t *testing.T) {
			cs, _ := urlElicitClient(t, gw.url+"/mcp", true, true)
			_, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: tool, Arguments: map[string]any{"url": "https://example.com/e-" + server, "errorPath": true}})
			if err == nil || !strings.Contains(err.Error(), "-32042") && !strings.Contains(err.Error(), "browser-based authorization") {
				t.Fatalf("want the upstream's URLElicitationRequired error, got %v", err)
			}
		})
		t.Run(server+"/modern caller declaring url", func(t *testing.T) {
			status, _, body := rpc(t, gw.url+"/mcp", modernHeaders("tools/call", tool), callBody(tool, `{"url":"https://example.com/consent"}`, urlElicitMeta, ""))
			text := strings.ToLower(fmt.Sprint(resultOf(body)["content"]))
			if status != 200 || resultOf(body)["isError"] != true || !strings.Contains(text, "legacy upstream cannot resume input") {
				t.Fatalf("%d %v", status, body)
			}
		})
		t.Run(server+"/modern caller, form only", func(t *testing.T) {
			status, _, body := rpc(t, gw.url+"/mcp", modernHeaders("tools/call", tool), callBody(tool, `{"url":"https://example.com/consent"}`, formElicitMeta, ""))
			text := strings.ToLower(fmt.Sprint(body))
			if status != 200 || strings.Contains(text, "user completed") || strings.Contains(text, "cannot resume") {
				t.Fatalf("a form-only modern caller: %d %v", status, body)
			}
		})
		t.Run(server+"/modern caller, error path never sees -32042", func(t *testing.T) {
			status, _, body := rpc(t, gw.url+"/mcp", modernHeaders("tools/call", tool), callBody(tool, `{"url":"https://example.com/m-`+server+`","errorPath":true}`, urlElicitMeta, ""))
			text := fmt.Sprint(resultOf(body)["content"])
			if status != 200 || body["error"] != nil || resultOf(body)["isError"] != true || !strings.Contains(text, "https://modelcontextprotocol.io") {
				t.Fatalf("%d %v", status, body)
			}
		})
	}
}

// urlPeer is a 2026-07-28 upstream whose tool asks for a URL-mode
// elicitation through input_required (no real server of that revision
// offers one yet), in process over real HTTP. The retry must carry the
// caller's answer.
func urlPeer(t *testing.T) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		body, _ := io.ReadAll(r.Body)
		m, err := jsonrpc.Decode(body)
		if err != nil || m.Kind() != jsonrpc.KindRequest {
			w.WriteHeader(http.StatusAccepted)
			return
		}
		var result string
		switch m.Method {
		case "server/discover":
			result = `{"resultType":"complete","supportedVersions":["2026-07-28"],"capabilities":{"tools":{}},"ttlMs":0,"cacheScope":"private"}`
		case "tools/list":
			result = `{"resultType":"complete","tools":[{"name":"link","inputSchema":{"type":"object"}}],"ttlMs":0,"cacheScope":"private"}`
		case "tools/call":
			if jsonrpc.Member(m.Params, "requestState") == nil {
				result = `{"resultType":"input_required","requestState":"s1","inputRequests":{"open":{"method":"elicitation/create","params":{"mode":"url","message":"Sign in","url":"https://example.com/sign-in"}}}}`
			} else {
				result = `{"resultType":"complete","content":[{"type":"text","text":"answered ` + strings.ReplaceAll(string(jsonrpc.Member(m.Params, "inputResponses")), `"`, `'`) + `"}]}`
			}
		default:
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write(jsonrpc.EncodeError(m.ID, jsonrpc.Errorf(-32601, "no")))
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(jsonrpc.EncodeResult(m.ID, json.RawMessage(result)))
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/mcp"
}

// URL-mode elicitation from a 2026-07-28 upstream: a modern caller gets it
// in inputRequests when it declared URL mode (else -32021 naming
// elicitation.url); a legacy caller is asked on its session, with the
// elicitationId its revision requires added, or is told in-band it lacks
// the capability.
func TestURLElicitationFromModernUpstream(t *testing.T) {
	gw := startGateway(t, fmt.Sprintf("general_settings:\n  master_key: %s\nmcp_servers:\n  m:\n    url: %s\n    allow_elicitation: true\n", testKey, urlPeer(t)),
		map[string]string{"LITELLM_SALT_KEY": "continuation-salt-0123456789abcdef"})
	const tool = "m-link"
	status, _, body := rpc(t, gw.url+"/mcp", modernHeaders("tools/call", tool), callBody(tool, `{}`, urlElicitMeta, ""))
	reqs, _ := resultOf(body)["inputRequests"].(map[string]any)
	if status != 200 || resultOf(body)["resultType"] != "input_required" || !strings.Contains(fmt.Sprint(reqs["open"]), "https://example.com/sign-in") {
		t.Fatalf("modern caller declaring url: %d %v", status, body)
	}
	status, _, body = rpc(t, gw.url+"/mcp", modernHeaders("tools/call", tool), callBody(tool, `{}`, formElicitMeta, ""))
	e, _ := body["error"].(map[string]any)
	if status != 400 || errCode(body) != -32021 || !strings.Contains(fmt.Sprint(e["data"]), "url") {
		t.Fatalf("modern caller, form only: %d %v", status, body)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, asked := urlElicitClient(t, gw.url+"/mcp", true, true)
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: tool, Arguments: map[string]any{}})
	got := asked()
	if err != nil || !strings.Contains(textOf(res), `'open':{'action':'accept'}`) || len(got) != 1 || got[0].Mode != "url" || got[0].ElicitationID == "" {
		t.Fatalf("legacy caller declaring url: res=%v err=%v asked=%+v", res, err, got)
	}
	cs, asked = urlElicitClient(t, gw.url+"/mcp", true, false)
	res, err = cs.CallTool(ctx, &sdk.CallToolParams{Name: tool, Arguments: map[string]any{}})
	if err != nil || !res.IsError || len(asked()) != 0 {
		t.Fatalf("legacy caller, form only: res=%v err=%v asked=%d", res, err, len(asked()))
	}
}
