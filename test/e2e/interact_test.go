package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpgw/mcpgw/internal/testpeers"
)

const elicitMeta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{"form":{},"url":{}}},"io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"}}`

// interactionGateway fronts a modern fixture (mod), a legacy one (leg) and a
// modern one without any allow_* flag (off).
func interactionGateway(t *testing.T, env map[string]string, extra string) *gatewayUnderTest {
	return startGateway(t, fmt.Sprintf(`
general_settings:
  master_key: %s
%s
mcp_servers:
  mod:
    url: %s
    allow_elicitation: true
    allow_sampling: true
  leg:
    url: %s
    allow_elicitation: true
    allow_sampling: true
  off:
    url: %s
`, testKey, extra, testpeers.StartGoFixtureHTTP(t, true), testpeers.StartGoFixtureHTTP(t, false), testpeers.StartGoFixtureHTTP(t, true)), env)
}

func callBody(name, args, meta string, extra string) string {
	return `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"` + name + `","arguments":` + args + extra + `,` + meta + `}}`
}

func resultOf(body map[string]any) map[string]any {
	r, _ := body["result"].(map[string]any)
	return r
}

func TestModernContinuations(t *testing.T) {
	salt := map[string]string{"LITELLM_SALT_KEY": "continuation-salt-0123456789abcdef"}
	a := interactionGateway(t, salt, "") // replicas: see TestContinuationsCrossReplicaAndTarget
	const tool = "mod-test_input_required_result_elicitation"
	status, _, body := rpc(t, a.url+"/mcp", modernHeaders("tools/call", tool), callBody(tool, `{}`, elicitMeta, ""))
	res := resultOf(body)
	tok, _ := res["requestState"].(string)
	reqs, _ := res["inputRequests"].(map[string]any)
	if status != 200 || res["resultType"] != "input_required" || !strings.HasPrefix(tok, "mcp_state_v1.") || reqs["user_name"] == nil {
		t.Fatalf("first call: %d %v", status, body)
	}
	retry := func(url, name, token, meta string) (int, map[string]any) {
		extra := `,"requestState":"` + token + `","inputResponses":{"user_name":{"action":"accept","content":{"name":"Ada"}}}`
		status, _, body := rpc(t, url+"/mcp", modernHeaders("tools/call", name), callBody(name, `{}`, meta, extra))
		return status, body
	}
	for i := 0; i < 2; i++ { // repeatable until it expires
		status, body = retry(a.url, tool, tok, elicitMeta)
		if status != 200 || !strings.Contains(fmt.Sprint(resultOf(body)["content"]), "Hello, Ada!") {
			t.Fatalf("resume %d: %d %v", i, status, body)
		}
	}
	for name, c := range map[string]struct{ name, token string }{
		"tampered":   {tool, tok[:len(tok)-3] + "AAA"},
		"foreign":    {tool, "mcp_state_v1.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"},
		"unprefixed": {tool, "opaque-upstream-state"},
		"other tool": {"mod-test_input_required_result_request_state", tok},
	} {
		status, body := retry(a.url, c.name, c.token, elicitMeta)
		e, _ := body["error"].(map[string]any)
		if status != 400 || errCode(body) != -32602 || e["message"] != "Invalid or expired MCP continuation; start a fresh request" {
			t.Fatalf("%s: %d %v", name, status, body)
		}
	}
	// inputResponses without requestState
	status, _, body = rpc(t, a.url+"/mcp", modernHeaders("tools/call", tool), callBody(tool, `{}`, elicitMeta, `,"inputResponses":{"user_name":{"action":"accept"}}`))
	if status != 400 || !strings.Contains(fmt.Sprint(body["error"]), "Input responses require a gateway continuation") {
		t.Fatalf("inputResponses alone: %d %v", status, body)
	}
	// A caller that did not declare elicitation gets -32021.
	status, _, body = rpc(t, a.url+"/mcp", modernHeaders("tools/call", tool), callBody(tool, `{}`, modernMeta, ""))
	data, _ := body["error"].(map[string]any)["data"].(map[string]any)
	if status != 400 || errCode(body) != -32021 || data["requiredCapabilities"] == nil {
		t.Fatalf("missing capability: %d %v", status, body)
	}
	// elicitation not allowed for the server: refused in-band.
	status, _, body = rpc(t, a.url+"/mcp", modernHeaders("tools/call", "off-test_input_required_result_elicitation"), callBody("off-test_input_required_result_elicitation", `{}`, elicitMeta, ""))
	if res := resultOf(body); status != 200 || res["isError"] != true || !strings.Contains(fmt.Sprint(res["content"]), "allow_elicitation") {
		t.Fatalf("elicitation off: %d %v", status, body)
	}
}

func TestContinuationsCrossReplicaAndTarget(t *testing.T) {
	fx := testpeers.StartGoFixtureHTTP(t, true)
	cfg := func(url string) string {
		return fmt.Sprintf("general_settings:\n  master_key: %s\nmcp_servers:\n  mod:\n    url: %s\n    allow_elicitation: true\n", testKey, url)
	}
	salt := map[string]string{"LITELLM_SALT_KEY": "continuation-salt-0123456789abcdef"}
	a := startGateway(t, cfg(fx), salt)
	b := startGateway(t, cfg(fx), salt)
	changed := startGateway(t, cfg(fx+"/changed-target"), salt)
	const tool = "mod-test_input_required_result_elicitation"
	_, _, body := rpc(t, a.url+"/mcp", modernHeaders("tools/call", tool), callBody(tool, `{}`, elicitMeta, ""))
	tok, _ := resultOf(body)["requestState"].(string)
	extra := `,"requestState":"` + tok + `","inputResponses":{"user_name":{"action":"accept","content":{"name":"Bo"}}}`
	status, _, body := rpc(t, b.url+"/mcp", modernHeaders("tools/call", tool), callBody(tool, `{}`, elicitMeta, extra))
	if status != 200 || !strings.Contains(fmt.Sprint(resultOf(body)["content"]), "Hello, Bo!") {
		t.Fatalf("resume on another replica: %d %v", status, body)
	}
	status, _, body = rpc(t, changed.url+"/mcp", modernHeaders("tools/call", tool), callBody(tool, `{}`, elicitMeta, extra))
	if status != 400 || errCode(body) != -32602 {
		t.Fatalf("resume against a changed target: %d %v", status, body)
	}
}

func TestContinuationCallerBindingAndRevocation(t *testing.T) {
	var mu sync.Mutex
	ids := map[string]string{
		"sk-alice-key-000000000001": `{"user_id":"alice","team_id":"team-a","object_permission":{"mcp_servers":["mod"]}}`,
		"sk-bob-key-00000000000002": `{"user_id":"bob","team_id":"team-a","object_permission":{"mcp_servers":["mod"]}}`,
	}
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var in struct {
			APIKey string `json:"api_key"`
		}
		_ = json.NewDecoder(r.Body).Decode(&in)
		mu.Lock()
		id, ok := ids[in.APIKey]
		mu.Unlock()
		if !ok {
			http.Error(w, "no", 401)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, id)
	}))
	defer hook.Close()
	gw := startGateway(t, fmt.Sprintf(`
general_settings:
  master_key: %s
  custom_auth: %s
mcp_servers:
  mod:
    url: %s
    allow_elicitation: true
  denied:
    url: %s
`, testKey, hook.URL, testpeers.StartGoFixtureHTTP(t, true), testpeers.StartGoFixtureHTTP(t, true)), map[string]string{"LITELLM_SALT_KEY": "continuation-salt-0123456789abcdef"})
	const tool = "mod-test_input_required_result_elicitation"
	as := func(key string) map[string]string {
		h := modernHeaders("tools/call", tool)
		h["Authorization"] = "Bearer " + key
		return h
	}
	_, _, body := rpc(t, gw.url+"/mcp", as("sk-alice-key-000000000001"), callBody(tool, `{}`, elicitMeta, ""))
	tok, _ := resultOf(body)["requestState"].(string)
	extra := `,"requestState":"` + tok + `","inputResponses":{"user_name":{"action":"accept","content":{"name":"Al"}}}`
	status, _, body := rpc(t, gw.url+"/mcp", as("sk-bob-key-00000000000002"), callBody(tool, `{}`, elicitMeta, extra))
	if status != 400 || errCode(body) != -32602 {
		t.Fatalf("bob resumed alice's continuation: %d %v", status, body)
	}
	mu.Lock()
	ids["sk-alice-key-000000000001"] = `{"user_id":"alice","team_id":"team-a","object_permission":{"mcp_servers":["denied"]}}`
	mu.Unlock()
	req, _ := http.NewRequest(http.MethodPost, gw.url+"/mcp", strings.NewReader(callBody(tool, `{}`, elicitMeta, extra)))
	for k, v := range as("sk-alice-key-000000000001") {
		req.Header.Set(k, v)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var detail map[string]string
	_ = json.NewDecoder(resp.Body).Decode(&detail)
	resp.Body.Close()
	if resp.StatusCode != 403 || detail["detail"] != "MCP continuation target is no longer authorized" {
		t.Fatalf("revoked target: %d %v", resp.StatusCode, detail)
	}
}

func TestContinuationsNeedSaltKey(t *testing.T) {
	gw := interactionGateway(t, nil, "")
	const tool = "mod-test_input_required_result_elicitation"
	status, _, body := rpc(t, gw.url+"/mcp", modernHeaders("tools/call", tool), callBody(tool, `{}`, elicitMeta, ""))
	if status != 400 || errCode(body) != -32602 || !strings.Contains(fmt.Sprint(body["error"]), "LITELLM_SALT_KEY") {
		t.Fatalf("without a salt key: %d %v", status, body)
	}
}

func TestElicitationEraMatrix(t *testing.T) {
	gw := interactionGateway(t, map[string]string{"LITELLM_SALT_KEY": "continuation-salt-0123456789abcdef"}, "")
	t.Run("modern caller, legacy upstream", func(t *testing.T) {
		status, _, body := rpc(t, gw.url+"/mcp", modernHeaders("tools/call", "leg-test_elicitation"), callBody("leg-test_elicitation", `{"message":"Confirm"}`, elicitMeta, ""))
		text := strings.ToLower(fmt.Sprint(resultOf(body)["content"]))
		if status != 200 || resultOf(body)["isError"] != true || !strings.Contains(text, "legacy upstream cannot resume input") || !strings.Contains(text, "partially completed") {
			t.Fatalf("%d %v", status, body)
		}
	})
	var asked atomic.Int32
	client := sdk.NewClient(&sdk.Implementation{Name: "legacy", Version: "1"}, &sdk.ClientOptions{
		ElicitationHandler: func(ctx context.Context, req *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
			asked.Add(1)
			return &sdk.ElicitResult{Action: "accept", Content: map[string]any{"name": "Lee", "username": "lee"}}, nil
		},
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := client.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: gw.url + "/mcp", HTTPClient: &http.Client{Transport: authTransport{testKey}}, DisableStandaloneSSE: true}, &sdk.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	t.Run("legacy caller, modern upstream", func(t *testing.T) {
		asked.Store(0)
		res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "mod-test_input_required_result_elicitation", Arguments: map[string]any{}})
		if err != nil || textOf(res) != "Hello, Lee!" || asked.Load() != 1 {
			t.Fatalf("res=%v err=%v asked=%d", res, err, asked.Load())
		}
	})
	t.Run("legacy caller, legacy upstream", func(t *testing.T) {
		asked.Store(0)
		res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "leg-test_elicitation", Arguments: map[string]any{"message": "Who?"}})
		if err != nil || !strings.Contains(textOf(res), "action=accept") || asked.Load() != 1 {
			t.Fatalf("res=%v err=%v asked=%d", res, err, asked.Load())
		}
	})
}

// fakeProvider is an OpenAI-compatible /chat/completions endpoint that
// records what it was asked.
type fakeProvider struct {
	srv   *httptest.Server
	calls atomic.Int32
	mu    sync.Mutex
	last  string
}

func newFakeProvider(t *testing.T) *fakeProvider {
	p := &fakeProvider{}
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.calls.Add(1)
		var body map[string]any
		_ = json.NewDecoder(r.Body).Decode(&body)
		b, _ := json.Marshal(body["messages"])
		p.mu.Lock()
		p.last = string(b)
		p.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"id":"x","model":"sampling-model","choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"Paris, sampled"}}]}`)
	}))
	t.Cleanup(p.srv.Close)
	return p
}

func TestSamplingThroughConfiguredModel(t *testing.T) {
	provider := newFakeProvider(t)
	models := fmt.Sprintf(`model_list:
  - model_name: sampling-model
    litellm_params:
      model: openai/sampling-model
      api_base: %s/v1
      api_key: sk-provider-secret
litellm_settings:
  default_mcp_sampling_model: sampling-model`, provider.srv.URL)
	gw := interactionGateway(t, map[string]string{"LITELLM_SALT_KEY": "continuation-salt-0123456789abcdef"}, models)
	const tool = "mod-test_input_required_result_sampling"
	status, _, body := rpc(t, gw.url+"/mcp", modernHeaders("tools/call", tool), callBody(tool, `{}`, modernMeta, ""))
	res := resultOf(body)
	if status != 200 || res["resultType"] != "complete" || !strings.Contains(fmt.Sprint(res["content"]), "Sampling response: Paris, sampled") {
		t.Fatalf("sampled call: %d %v", status, body)
	}
	provider.mu.Lock()
	last := provider.last
	provider.mu.Unlock()
	if provider.calls.Load() != 1 || !strings.Contains(last, "What is the capital of France?") {
		t.Fatalf("provider calls %d, messages %s", provider.calls.Load(), last)
	}
	// sampling not allowed: refused, and the provider hears nothing
	const off = "off-test_input_required_result_sampling"
	status, _, body = rpc(t, gw.url+"/mcp", modernHeaders("tools/call", off), callBody(off, `{}`, modernMeta, ""))
	if res := resultOf(body); status != 200 || res["isError"] != true || !strings.Contains(fmt.Sprint(res["content"]), "sampling") || provider.calls.Load() != 1 {
		t.Fatalf("sampling off: %d %v (provider calls %d)", status, body, provider.calls.Load())
	}
	// a legacy upstream asking mid-call is answered by the gateway too
	status, _, body = rpc(t, gw.url+"/mcp", modernHeaders("tools/call", "leg-test_sampling"), callBody("leg-test_sampling", `{"prompt":"Capital of Spain?"}`, modernMeta, ""))
	if res := resultOf(body); status != 200 || res["isError"] == true || !strings.Contains(fmt.Sprint(res["content"]), "Paris, sampled") || provider.calls.Load() != 2 {
		t.Fatalf("legacy upstream sampling: %d %v (provider calls %d)", status, body, provider.calls.Load())
	}
	// a legacy caller gets the same: the gateway samples, the caller never sees it
	cs := sdkSession(t, gw.url+"/mcp", "2025-11-25")
	r, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: tool, Arguments: map[string]any{}})
	if err != nil || textOf(r) != "Sampling response: Paris, sampled" || provider.calls.Load() != 3 {
		t.Fatalf("legacy caller sampling: %v %v (provider calls %d)", r, err, provider.calls.Load())
	}
}

// Without a configured model, sampling goes to a caller that declared it.
func TestSamplingPassesToTheCallerWithoutAModel(t *testing.T) {
	gw := interactionGateway(t, map[string]string{"LITELLM_SALT_KEY": "continuation-salt-0123456789abcdef"}, "")
	const tool = "mod-test_input_required_result_sampling"
	sampleMeta := strings.Replace(modernMeta, `"io.modelcontextprotocol/clientCapabilities":{}`, `"io.modelcontextprotocol/clientCapabilities":{"sampling":{}}`, 1)
	status, _, body := rpc(t, gw.url+"/mcp", modernHeaders("tools/call", tool), callBody(tool, `{}`, sampleMeta, ""))
	res := resultOf(body)
	reqs, _ := res["inputRequests"].(map[string]any)
	tok, _ := res["requestState"].(string)
	if status != 200 || res["resultType"] != "input_required" || reqs["capital_question"] == nil || !strings.HasPrefix(tok, "mcp_state_v1.") {
		t.Fatalf("sampling for the caller: %d %v", status, body)
	}
	extra := `,"requestState":"` + tok + `","inputResponses":{"capital_question":{"role":"assistant","content":{"type":"text","text":"Paris"},"model":"m"}}`
	status, _, body = rpc(t, gw.url+"/mcp", modernHeaders("tools/call", tool), callBody(tool, `{}`, sampleMeta, extra))
	if status != 200 || !strings.Contains(fmt.Sprint(resultOf(body)["content"]), "Sampling response: Paris") {
		t.Fatalf("resume with the caller's sample: %d %v", status, body)
	}
	status, _, body = rpc(t, gw.url+"/mcp", modernHeaders("tools/call", tool), callBody(tool, `{}`, modernMeta, ""))
	if status != 400 || errCode(body) != -32021 {
		t.Fatalf("undeclared sampling: %d %v", status, body)
	}
}

// A legacy caller's logging/setLevel reaches the upstream, and the upstream's
// log lines reach the caller on its call's stream.
func TestLogsRelayedToLegacyCaller(t *testing.T) {
	gw := interactionGateway(t, nil, "")
	var mu sync.Mutex
	var lines []string
	client := sdk.NewClient(&sdk.Implementation{Name: "logs", Version: "1"}, &sdk.ClientOptions{
		LoggingMessageHandler: func(_ context.Context, req *sdk.LoggingMessageRequest) {
			mu.Lock()
			lines = append(lines, fmt.Sprint(req.Params.Data))
			mu.Unlock()
		},
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := client.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: gw.url + "/leg/mcp", HTTPClient: &http.Client{Transport: authTransport{testKey}}, DisableStandaloneSSE: true}, &sdk.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if err := cs.SetLoggingLevel(ctx, &sdk.SetLoggingLevelParams{Level: "debug"}); err != nil {
		t.Fatal(err)
	}
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "leg-test_tool_with_logging", Arguments: map[string]any{}})
	if err != nil || res.IsError {
		t.Fatalf("%v %v", res, err)
	}
	mu.Lock()
	defer mu.Unlock()
	// The fixture sends these as session logs: on the call's stream, or on
	// the session's GET stream once that is open. Those on the GET stream
	// reach the caller while its call is in flight; one sent as the call
	// completes may race the result and be dropped rather than shown to
	// another caller.
	if len(lines) < 2 || lines[0] != "Tool execution started" || lines[1] != "Tool processing data" {
		t.Fatalf("log lines relayed: %q", lines)
	}
}

// countingProxy fronts an upstream and counts the JSON-RPC methods it is sent.
type countingProxy struct {
	url string
	mu  sync.Mutex
	n   map[string]int
}

func newCountingProxy(t *testing.T, target string) *countingProxy {
	p := &countingProxy{n: map[string]int{}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var m struct {
			Method string `json:"method"`
		}
		_ = json.Unmarshal(body, &m)
		p.mu.Lock()
		p.n[m.Method]++
		p.mu.Unlock()
		forwardStreaming(w, r, target, body)
	}))
	t.Cleanup(srv.Close)
	p.url = srv.URL + "/mcp"
	return p
}

func (p *countingProxy) count(method string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.n[method]
}

// Refused resumes never reach an upstream: not the original target, not
// another one serving the same tool.
func TestRefusedResumesContactNoUpstream(t *testing.T) {
	fx := testpeers.StartGoFixtureHTTP(t, true)
	mod, other := newCountingProxy(t, fx), newCountingProxy(t, fx)
	salt := map[string]string{"LITELLM_SALT_KEY": "continuation-salt-0123456789abcdef"}
	cfg := func(modURL string) string {
		return fmt.Sprintf("general_settings:\n  master_key: %s\nmcp_servers:\n  mod:\n    url: %s\n    allow_elicitation: true\n  other:\n    url: %s\n    allow_elicitation: true\n", testKey, modURL, other.url)
	}
	a := startGateway(t, cfg(mod.url), salt)
	changed := startGateway(t, cfg(mod.url+"?v=2"), salt)
	const tool = "mod-test_input_required_result_elicitation"
	_, _, body := rpc(t, a.url+"/mcp", modernHeaders("tools/call", tool), callBody(tool, `{}`, elicitMeta, ""))
	tok, _ := resultOf(body)["requestState"].(string)
	if !strings.HasPrefix(tok, "mcp_state_v1.") {
		t.Fatalf("first call: %v", body)
	}
	calls := mod.count("tools/call")
	for name, c := range map[string]struct {
		url, tool, token string
	}{
		"tampered token":          {a.url, tool, tamperMiddle(tok)},
		"another tool":            {a.url, "mod-test_input_required_result_request_state", tok},
		"same tool, other server": {a.url, "other-test_input_required_result_elicitation", tok},
		"changed target":          {changed.url, tool, tok},
	} {
		extra := `,"requestState":"` + c.token + `","inputResponses":{"user_name":{"action":"accept","content":{"name":"X"}}}`
		status, _, body := rpc(t, c.url+"/mcp", modernHeaders("tools/call", c.tool), callBody(c.tool, `{}`, elicitMeta, extra))
		if status != 400 || errCode(body) != -32602 {
			t.Fatalf("%s: %d %v", name, status, body)
		}
	}
	if mod.count("tools/call") != calls || other.count("tools/call") != 0 {
		t.Fatalf("a refused resume reached an upstream: mod %d → %d, other %d", calls, mod.count("tools/call"), other.count("tools/call"))
	}
}

// tamperMiddle changes one character in the middle of a sealed token: the
// last characters may carry only padding bits (and may already be "AA"), so
// changing them does not always change the sealed bytes.
func tamperMiddle(tok string) string {
	i := len(tok) / 2
	c := byte('A')
	if tok[i] == 'A' {
		c = 'B'
	}
	return tok[:i] + string(c) + tok[i+1:]
}

// forwardStreaming sends body to target as r's method and headers, and
// copies the answer back to w as it arrives (flushing each read, so SSE
// answers stream through).
func forwardStreaming(w http.ResponseWriter, r *http.Request, target string, body []byte) {
	req, _ := http.NewRequestWithContext(r.Context(), r.Method, target, bytes.NewReader(body))
	req.Header = r.Header.Clone()
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		http.Error(w, "proxy", http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	for k, v := range resp.Header {
		w.Header()[k] = v
	}
	w.WriteHeader(resp.StatusCode)
	buf := make([]byte, 32<<10)
	for {
		n, err := resp.Body.Read(buf)
		if n > 0 {
			_, _ = w.Write(buf[:n])
			w.(http.Flusher).Flush()
		}
		if err != nil {
			return
		}
	}
}
