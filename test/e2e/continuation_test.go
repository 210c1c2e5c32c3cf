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
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpgw/mcpgw/internal/jsonrpc"
	"github.com/mcpgw/mcpgw/internal/testpeers"
)

// interactionPeer is an MRTR upstream, in process over real HTTP: the
// first tools/call, prompts/get or resources/read answers input_required
// with requestState "opaque:<method>"; the retry must carry exactly that
// state and {"consent":{"action":"accept"}} (no added fields), and then
// completes with "confirmed". The tool "mixed" also asks for a sample, which
// the gateway answers itself (newFakeProvider answers "Paris, sampled").
type interactionPeer struct {
	srv  *httptest.Server
	mu   sync.Mutex
	seen map[string]int
	bad  []string
}

func newInteractionPeer(t *testing.T) *interactionPeer {
	p := &interactionPeer{seen: map[string]int{}}
	p.srv = httptest.NewServer(http.HandlerFunc(p.serve))
	t.Cleanup(func() {
		p.srv.Close()
		p.mu.Lock()
		defer p.mu.Unlock()
		for _, b := range p.bad {
			t.Errorf("interaction peer: %s", b)
		}
	})
	return p
}

func (p *interactionPeer) url() string { return p.srv.URL + "/mcp" }

func (p *interactionPeer) count(method string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.seen[method]
}

func (p *interactionPeer) serve(w http.ResponseWriter, r *http.Request) {
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
	p.mu.Lock()
	p.seen[m.Method]++
	p.mu.Unlock()
	var result string
	switch m.Method {
	case "server/discover":
		result = `{"resultType":"complete","supportedVersions":["2026-07-28"],"capabilities":{"tools":{},"prompts":{},"resources":{}},"ttlMs":0,"cacheScope":"private"}`
	case "tools/list":
		result = `{"resultType":"complete","tools":[{"name":"confirm","inputSchema":{"type":"object"}},{"name":"mixed","inputSchema":{"type":"object"}}],"ttlMs":0,"cacheScope":"private"}`
	case "prompts/list":
		result = `{"resultType":"complete","prompts":[{"name":"confirm"}],"ttlMs":0,"cacheScope":"private"}`
	case "resources/list":
		result = `{"resultType":"complete","resources":[{"uri":"test://confirm","name":"confirm"}],"ttlMs":0,"cacheScope":"private"}`
	case "resources/templates/list":
		result = `{"resultType":"complete","resourceTemplates":[],"ttlMs":0,"cacheScope":"private"}`
	case "tools/call", "prompts/get", "resources/read":
		result = p.interact(m)
	default:
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(404)
		_, _ = w.Write(jsonrpc.EncodeError(m.ID, jsonrpc.Errorf(-32601, "no")))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(jsonrpc.EncodeResult(m.ID, json.RawMessage(result)))
}

func (p *interactionPeer) interact(m *jsonrpc.Message) string {
	name, _ := jsonrpc.StringMember(m.Params, "name")
	state := jsonrpc.Member(m.Params, "requestState")
	if state == nil {
		asks := `"consent":{"method":"elicitation/create","params":{"mode":"form","message":"Confirm","requestedSchema":{"type":"object","properties":{}}}}`
		if name == "mixed" {
			asks += `,"sample":{"method":"sampling/createMessage","params":{"messages":[{"role":"user","content":{"type":"text","text":"sample prompt"}}],"maxTokens":8}}`
		}
		return `{"resultType":"input_required","requestState":"opaque:` + m.Method + `","inputRequests":{` + asks + `}}`
	}
	responses := string(jsonrpc.Member(m.Params, "inputResponses"))
	want := `{"consent":{"action":"accept"}}`
	if string(state) != `"opaque:`+m.Method+`"` {
		p.fail("retry of %s carried requestState %s", m.Method, state)
	}
	if name == "mixed" {
		if !strings.Contains(responses, `"consent":{"action":"accept"}`) || !strings.Contains(responses, "Paris, sampled") {
			p.fail("mixed retry carried %s", responses)
		}
	} else if responses != want {
		p.fail("retry of %s carried inputResponses %s, want exactly %s", m.Method, responses, want)
	}
	switch m.Method {
	case "prompts/get":
		return `{"resultType":"complete","messages":[{"role":"user","content":{"type":"text","text":"confirmed"}}]}`
	case "resources/read":
		return `{"resultType":"complete","contents":[{"uri":"test://confirm","text":"confirmed"}],"ttlMs":0,"cacheScope":"private"}`
	}
	return `{"resultType":"complete","content":[{"type":"text","text":"confirmed"}]}`
}

func (p *interactionPeer) fail(format string, args ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.bad = append(p.bad, fmt.Sprintf(format, args...))
}

// mrtrCalls are the three operations that may answer input_required.
var mrtrCalls = []struct{ method, name, params string }{
	{"tools/call", "mrtr-confirm", `"name":"mrtr-confirm","arguments":{}`},
	{"prompts/get", "mrtr-confirm", `"name":"mrtr-confirm","arguments":{}`},
	{"resources/read", "test://confirm", `"uri":"test://confirm"`},
}

func mrtrBody(method, params, extra string) string {
	return `{"jsonrpc":"2.0","id":1,"method":"` + method + `","params":{` + params + extra + `,` + elicitMeta + `}}`
}

func TestContinuationsForAllThreeMethods(t *testing.T) {
	peer := newInteractionPeer(t)
	cfg := fmt.Sprintf("general_settings:\n  master_key: %s\n  mcp_advertised_versions: [\"2026-07-28\"]\nmcp_servers:\n  mrtr:\n    url: %s\n    allow_elicitation: true\n", testKey, peer.url())
	t.Run("missing salt key", func(t *testing.T) {
		gw := startGateway(t, cfg, map[string]string{"LITELLM_SALT_KEY": ""})
		for _, c := range mrtrCalls {
			status, _, body := rpc(t, gw.url+"/mcp", modernHeaders(c.method, c.name), mrtrBody(c.method, c.params, ""))
			if status != 400 || errCode(body) != -32602 || !strings.Contains(fmt.Sprint(body["error"]), "LITELLM_SALT_KEY") {
				t.Fatalf("%s without a salt key: %d %v", c.method, status, body)
			}
		}
	})
	salt := map[string]string{"LITELLM_SALT_KEY": "continuation-salt-0123456789abcdef"}
	a, b := startGateway(t, cfg, salt), startGateway(t, cfg, salt)
	for _, c := range mrtrCalls {
		t.Run(c.method, func(t *testing.T) {
			before := peer.count(c.method)
			status, _, body := rpc(t, a.url+"/mcp", modernHeaders(c.method, c.name), mrtrBody(c.method, c.params, ""))
			res := resultOf(body)
			tok, _ := res["requestState"].(string)
			reqs, _ := res["inputRequests"].(map[string]any)
			if status != 200 || res["resultType"] != "input_required" || !strings.HasPrefix(tok, "mcp_state_v1.") || reqs["consent"] == nil || strings.Contains(tok, "opaque") {
				t.Fatalf("first call: %d %v", status, body)
			}
			extra := `,"requestState":"` + tok + `","inputResponses":{"consent":{"action":"accept"}}`
			for _, replica := range []string{b.url, a.url} { // another replica, then the same token again
				status, _, body = rpc(t, replica+"/mcp", modernHeaders(c.method, c.name), mrtrBody(c.method, c.params, extra))
				if status != 200 || !strings.Contains(fmt.Sprint(body["result"]), "confirmed") {
					t.Fatalf("resume on %s: %d %v", replica, status, body)
				}
			}
			if got := peer.count(c.method) - before; got != 3 {
				t.Fatalf("upstream saw %d %s, want 3 (one call, two resumes)", got, c.method)
			}
		})
	}
}

func TestMixedInputRequestsAreSplit(t *testing.T) {
	peer := newInteractionPeer(t)
	provider := newFakeProvider(t)
	gw := startGateway(t, fmt.Sprintf(`
general_settings:
  master_key: %s
model_list:
  - model_name: sampling-model
    litellm_params: {model: openai/sampling-model, api_base: %s/v1}
litellm_settings:
  default_mcp_sampling_model: sampling-model
mcp_servers:
  mrtr:
    url: %s
    allow_elicitation: true
    allow_sampling: true
`, testKey, provider.srv.URL, peer.url()), map[string]string{"LITELLM_SALT_KEY": "continuation-salt-0123456789abcdef"})
	_, _, body := rpc(t, gw.url+"/mcp", modernHeaders("tools/call", "mrtr-mixed"), mrtrBody("tools/call", `"name":"mrtr-mixed","arguments":{}`, ""))
	res := resultOf(body)
	reqs, _ := res["inputRequests"].(map[string]any)
	tok, _ := res["requestState"].(string)
	if res["resultType"] != "input_required" || len(reqs) != 1 || reqs["consent"] == nil || provider.calls.Load() != 1 {
		t.Fatalf("the caller must be asked only for consent after the gateway sampled once: %v (provider calls %d)", body, provider.calls.Load())
	}
	// The peer checks that the retry carries the caller's consent and the
	// gateway's sample (the fake provider's "Paris, sampled"), kept sealed.
	extra := `,"requestState":"` + tok + `","inputResponses":{"consent":{"action":"accept"}}`
	_, _, body = rpc(t, gw.url+"/mcp", modernHeaders("tools/call", "mrtr-mixed"), mrtrBody("tools/call", `"name":"mrtr-mixed","arguments":{}`, extra))
	if !strings.Contains(fmt.Sprint(body["result"]), "confirmed") || provider.calls.Load() != 1 {
		t.Fatalf("resume: %v (provider calls %d)", body, provider.calls.Load())
	}
}

// switchableHook is a custom_auth webhook whose answer for alice can change.
func switchableHook(t *testing.T) (url string, set func(identity string)) {
	var mu sync.Mutex
	current := ""
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		id := current
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, id)
	}))
	t.Cleanup(srv.Close)
	return srv.URL, func(id string) { mu.Lock(); current = id; mu.Unlock() }
}

// A resources/read continuation resumes only on the server it was minted
// for, even when another serves the same URI; changed teams are refused.
func TestContinuationNeverRetargets(t *testing.T) {
	pa, pb := newInteractionPeer(t), newInteractionPeer(t)
	hook, setID := switchableHook(t)
	as := func(servers, team string) string {
		return `{"user_id":"alice","team_id":"` + team + `","object_permission":{"mcp_servers":[` + servers + `]}}`
	}
	gw := startGateway(t, fmt.Sprintf("general_settings:\n  master_key: %s\n  custom_auth: %s\nmcp_servers:\n  a:\n    url: %s\n    allow_elicitation: true\n  b:\n    url: %s\n    allow_elicitation: true\n",
		testKey, hook, pa.url(), pb.url()), map[string]string{"LITELLM_SALT_KEY": "continuation-salt-0123456789abcdef"})
	h := modernHeaders("resources/read", "test://confirm")
	h["Authorization"] = "Bearer sk-alice-key-000000000001"
	read := func(extra string) (int, map[string]any) {
		status, _, body := rpc(t, gw.url+"/mcp", h, mrtrBody("resources/read", `"uri":"test://confirm"`, extra))
		return status, body
	}
	setID(as(`"a"`, "team-a"))
	_, body := read("")
	tok, _ := resultOf(body)["requestState"].(string)
	if !strings.HasPrefix(tok, "mcp_state_v1.") {
		t.Fatalf("mint: %v", body)
	}
	extra := `,"requestState":"` + tok + `","inputResponses":{"consent":{"action":"accept"}}`
	ra, rb := pa.count("resources/read"), pb.count("resources/read")

	setID(as(`"a"`, "team-b"))
	if status, body := read(extra); status != 400 || errCode(body) != -32602 {
		t.Fatalf("another team resumed: %d %v", status, body)
	}
	setID(as(`"b"`, "team-a"))
	if status, body := read(extra); status < 400 && body["error"] == nil {
		t.Fatalf("resumed with only the other server allowed: %d %v", status, body)
	}
	if pa.count("resources/read") != ra || pb.count("resources/read") != rb {
		t.Fatal("a refused resume reached an upstream")
	}
	setID(as(`"a","b"`, "team-a"))
	status, body := read(extra)
	if status != 200 || !strings.Contains(fmt.Sprint(body["result"]), "confirmed") {
		t.Fatalf("resume with both allowed: %d %v", status, body)
	}
	if pa.count("resources/read") != ra+1 || pb.count("resources/read") != rb {
		t.Fatalf("the resume went to the wrong server: a %d→%d, b %d→%d", ra, pa.count("resources/read"), rb, pb.count("resources/read"))
	}
}

// The 2×2 elicitation matrix with exact upstream call counts: a modern
// upstream sees the call and its retry; a legacy one sees one call, never
// restarted.
func TestElicitationMatrixCallCounts(t *testing.T) {
	peer := newInteractionPeer(t)
	leg := newCountingProxy(t, testpeers.StartGoFixtureHTTP(t, false))
	gw := startGateway(t, fmt.Sprintf("general_settings:\n  master_key: %s\nmcp_servers:\n  mrtr:\n    url: %s\n    allow_elicitation: true\n  leg:\n    url: %s\n    allow_elicitation: true\n",
		testKey, peer.url(), leg.url), map[string]string{"LITELLM_SALT_KEY": "continuation-salt-0123456789abcdef"})
	var asked atomic.Int32
	client := sdk.NewClient(&sdk.Implementation{Name: "legacy", Version: "1"}, &sdk.ClientOptions{
		ElicitationHandler: func(context.Context, *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
			asked.Add(1)
			return &sdk.ElicitResult{Action: "accept"}, nil
		},
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := client.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: gw.url + "/mcp", HTTPClient: &http.Client{Transport: authTransport{testKey}}, DisableStandaloneSSE: true}, &sdk.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()

	t.Run("modern caller, modern upstream", func(t *testing.T) {
		before := peer.count("tools/call")
		_, _, body := rpc(t, gw.url+"/mcp", modernHeaders("tools/call", "mrtr-confirm"), mrtrBody("tools/call", `"name":"mrtr-confirm","arguments":{}`, ""))
		tok, _ := resultOf(body)["requestState"].(string)
		extra := `,"requestState":"` + tok + `","inputResponses":{"consent":{"action":"accept"}}`
		_, _, body = rpc(t, gw.url+"/mcp", modernHeaders("tools/call", "mrtr-confirm"), mrtrBody("tools/call", `"name":"mrtr-confirm","arguments":{}`, extra))
		if !strings.Contains(fmt.Sprint(body["result"]), "confirmed") || peer.count("tools/call")-before != 2 {
			t.Fatalf("%v; upstream saw %d calls, want 2", body, peer.count("tools/call")-before)
		}
	})
	t.Run("legacy caller, modern upstream", func(t *testing.T) {
		before := peer.count("tools/call")
		asked.Store(0)
		res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "mrtr-confirm", Arguments: map[string]any{}})
		if err != nil || textOf(res) != "confirmed" || asked.Load() != 1 || peer.count("tools/call")-before != 2 {
			t.Fatalf("res=%v err=%v asked=%d upstream calls=%d, want confirmed, 1, 2", res, err, asked.Load(), peer.count("tools/call")-before)
		}
	})
	t.Run("legacy caller, legacy upstream", func(t *testing.T) {
		before := leg.count("tools/call")
		asked.Store(0)
		res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "leg-test_elicitation", Arguments: map[string]any{"message": "Confirm"}})
		if err != nil || !strings.Contains(textOf(res), "action=accept") || asked.Load() != 1 || leg.count("tools/call")-before != 1 {
			t.Fatalf("res=%v err=%v asked=%d upstream calls=%d, want 1 and 1", res, err, asked.Load(), leg.count("tools/call")-before)
		}
	})
	t.Run("modern caller, legacy upstream", func(t *testing.T) {
		before := leg.count("tools/call")
		_, _, body := rpc(t, gw.url+"/mcp", modernHeaders("tools/call", "leg-test_elicitation"), callBody("leg-test_elicitation", `{"message":"Confirm"}`, elicitMeta, ""))
		text := strings.ToLower(fmt.Sprint(resultOf(body)["content"]))
		if !strings.Contains(text, "legacy upstream cannot resume input") || leg.count("tools/call")-before != 1 {
			t.Fatalf("%v; upstream saw %d calls, want 1", body, leg.count("tools/call")-before)
		}
	})
}

// A legacy caller's notifications/cancelled stops its call and reaches the
// upstream as notifications/cancelled for the gateway's own request id.
func TestLegacyCancelReachesUpstream(t *testing.T) {
	cancelled := make(chan string, 1)
	var mu sync.Mutex
	callID := ""
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		body, _ := io.ReadAll(r.Body)
		m, err := jsonrpc.Decode(body)
		if err != nil {
			w.WriteHeader(400)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		switch m.Method {
		case "initialize":
			w.Header().Set("Mcp-Session-Id", "up-1")
			_, _ = w.Write(jsonrpc.EncodeResult(m.ID, json.RawMessage(`{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"slow","version":"1"}}`)))
		case "tools/list":
			_, _ = w.Write(jsonrpc.EncodeResult(m.ID, json.RawMessage(`{"tools":[{"name":"slow","inputSchema":{"type":"object"}}]}`)))
		case "tools/call":
			mu.Lock()
			callID = m.ID.String()
			mu.Unlock()
			<-r.Context().Done() // never answers
		case "notifications/cancelled":
			cancelled <- string(jsonrpc.Member(m.Params, "requestId"))
			w.WriteHeader(202)
		default:
			w.WriteHeader(202)
		}
	}))
	defer up.Close()
	gw := startGateway(t, fmt.Sprintf("general_settings:\n  master_key: %s\nmcp_servers:\n  s:\n    url: %s/mcp\n    protocol_version: 2025-11-25\n", testKey, up.URL), nil)
	sid := initLegacy(t, gw.url+"/mcp", testKey)
	done := make(chan int, 1)
	go func() {
		status, _, _ := rpc(t, gw.url+"/mcp", legacyHeaders(testKey, sid), `{"jsonrpc":"2.0","id":"caller-7","method":"tools/call","params":{"name":"s-slow","arguments":{}}}`)
		done <- status
	}()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		mu.Lock()
		started := callID != ""
		mu.Unlock()
		if started {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the call never reached the upstream")
		}
	}
	if status, _, _ := rpc(t, gw.url+"/mcp", legacyHeaders(testKey, sid), `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"caller-7","reason":"user"}}`); status != 202 {
		t.Fatalf("notifications/cancelled: %d", status)
	}
	select {
	case id := <-cancelled:
		mu.Lock()
		defer mu.Unlock()
		if id != callID {
			t.Fatalf("upstream told to cancel %s, its call was %s", id, callID)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the upstream was not told the call was cancelled")
	}
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the cancelled call did not end")
	}
}
