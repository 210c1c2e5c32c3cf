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

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// The keys: the gateway's master key and the key the caller sends
// are the same, and the custom_auth webhook decides who that caller is.
const (
	interactionKey  = "sk-interaction-test"
	interactionSalt = "caller-test-salt"
)

// interactionMeta is the modern request _meta these tests send.
const interactionMeta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"continuation-test","version":"1"},"io.modelcontextprotocol/clientCapabilities":{"elicitation":{"form":{},"url":{}}}}`

// recordingPeer serves an upstream MCP handler over real HTTP and records
// every request it receives, so a test can assert that nothing reached it.
type recordingPeer struct {
	srv  *httptest.Server
	mu   sync.Mutex
	seen []string // "METHOD jsonrpc-method"
}

func newRecordingPeer(t *testing.T, h http.Handler) *recordingPeer {
	p := &recordingPeer{}
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var m struct {
			Method string `json:"method"`
		}
		_ = json.Unmarshal(body, &m)
		p.mu.Lock()
		p.seen = append(p.seen, r.Method+" "+m.Method)
		p.mu.Unlock()
		r.Body = io.NopCloser(strings.NewReader(string(body)))
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(p.srv.Close)
	return p
}

func (p *recordingPeer) url() string { return p.srv.URL + "/mcp/" }

// drain returns the requests seen since the last drain and forgets them.
func (p *recordingPeer) drain() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := p.seen
	p.seen = nil
	return out
}

// wireInteractionPeer is the interaction upstream as a raw wire server.
func wireInteractionPeer(t *testing.T) *recordingPeer {
	p := &interactionPeer{seen: map[string]int{}}
	t.Cleanup(func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		for _, b := range p.bad {
			t.Errorf("interaction peer: %s", b)
		}
	})
	return newRecordingPeer(t, http.HandlerFunc(p.serve))
}

// sdkInteractionPeer is the interaction upstream built with the Go SDK: a stateless, JSON-answering server whose tool, prompt and resource
// all ask for consent first and then answer "confirmed".
func sdkInteractionPeer(t *testing.T) *recordingPeer {
	var mu sync.Mutex
	var bad []string
	fail := func(format string, args ...any) {
		mu.Lock()
		bad = append(bad, fmt.Sprintf(format, args...))
		mu.Unlock()
	}
	t.Cleanup(func() {
		mu.Lock()
		defer mu.Unlock()
		for _, b := range bad {
			t.Errorf("sdk interaction peer: %s", b)
		}
	})
	ask := func(method string) (sdk.InputRequestMap, string) {
		return sdk.InputRequestMap{"consent": &sdk.ElicitParams{Mode: "form", Message: "Confirm",
			RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{}}}}, "opaque:" + method
	}
	check := func(method, state string, responses sdk.InputResponseMap) {
		if state != "opaque:"+method {
			fail("retry of %s carried requestState %q", method, state)
		}
		res, ok := responses["consent"].(*sdk.ElicitResult)
		if len(responses) != 1 || !ok || res.Action != "accept" {
			fail("retry of %s carried inputResponses %v", method, responses)
		}
	}
	srv := sdk.NewServer(&sdk.Implementation{Name: "modern-interactions", Version: "1"}, nil)
	srv.AddTool(&sdk.Tool{Name: "confirm", InputSchema: map[string]any{"type": "object"}}, func(_ context.Context, r *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		if r.Params.RequestState == "" {
			reqs, state := ask("tools/call")
			return &sdk.CallToolResult{InputRequests: reqs, RequestState: state}, nil
		}
		check("tools/call", r.Params.RequestState, r.Params.InputResponses)
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "confirmed"}}}, nil
	})
	srv.AddPrompt(&sdk.Prompt{Name: "confirm"}, func(_ context.Context, r *sdk.GetPromptRequest) (*sdk.GetPromptResult, error) {
		if r.Params.RequestState == "" {
			reqs, state := ask("prompts/get")
			return &sdk.GetPromptResult{InputRequests: reqs, RequestState: state}, nil
		}
		check("prompts/get", r.Params.RequestState, r.Params.InputResponses)
		return &sdk.GetPromptResult{Messages: []*sdk.PromptMessage{{Role: "user", Content: &sdk.TextContent{Text: "confirmed"}}}}, nil
	})
	srv.AddResource(&sdk.Resource{Name: "confirm", URI: "test://confirm"}, func(_ context.Context, r *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
		if r.Params.RequestState == "" {
			reqs, state := ask("resources/read")
			return &sdk.ReadResourceResult{InputRequests: reqs, RequestState: state}, nil
		}
		check("resources/read", r.Params.RequestState, r.Params.InputResponses)
		return &sdk.ReadResourceResult{Contents: []*sdk.ResourceContents{{URI: "test://confirm", Text: "confirmed"}}}, nil
	})
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv },
		&sdk.StreamableHTTPOptions{Stateless: true, JSONResponse: true})
	return newRecordingPeer(t, h)
}

// interactionAuth is a custom_auth webhook: 401 unless the key is sk-interaction-test, else the
// identity currently in its state.
type interactionAuth struct {
	srv   *httptest.Server
	mu    sync.Mutex
	state string
}

func newInteractionAuth(t *testing.T, identity string) *interactionAuth {
	a := &interactionAuth{state: identity}
	a.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var in struct {
			APIKey string `json:"api_key"`
		}
		_ = json.NewDecoder(r.Body).Decode(&in)
		w.Header().Set("Content-Type", "application/json")
		if in.APIKey != interactionKey {
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = io.WriteString(w, `{"detail":"Unknown test caller"}`)
			return
		}
		a.mu.Lock()
		defer a.mu.Unlock()
		_, _ = io.WriteString(w, a.state)
	}))
	t.Cleanup(a.srv.Close)
	return a
}

func (a *interactionAuth) write(identity string) { a.mu.Lock(); a.state = identity; a.mu.Unlock() }

// modernRPC POSTs one modern request to /mcp/ with the modern headers and
// interactionMeta, and fails the test unless the status is status.
func modernRPC(t *testing.T, gw *gatewayUnderTest, method, params string, status int) map[string]any {
	t.Helper()
	var p map[string]any
	if err := json.Unmarshal([]byte("{"+params+"}"), &p); err != nil {
		t.Fatal(err)
	}
	name, ok := p["name"].(string)
	if !ok {
		name, _ = p["uri"].(string)
	}
	hdr := map[string]string{"Authorization": "Bearer " + interactionKey, "MCP-Protocol-Version": "2026-07-28",
		"Mcp-Method": method, "Mcp-Name": name}
	body := `{"jsonrpc":"2.0","id":1,"method":"` + method + `","params":{` + params + `,` + interactionMeta + `}}`
	got, _, out := rpc(t, gw.url+"/mcp/", hdr, body)
	if got != status {
		t.Fatalf("%s: status %d, want %d: %v", method, got, status, out)
	}
	return out
}

// TestContinuationReauthenticatesCallerAndRechecksRevokedPermissions: the caller
// presents the master key, and the webhook's identity (alice, team-a) still
// governs. A continuation minted for alice/team-a is refused before any
// upstream contact once the webhook says the caller is bob or team-b, or
// that interaction-server is no longer allowed; a resources/read
// continuation never moves to another server that is allowed.
func TestContinuationReauthenticatesCallerAndRechecksRevokedPermissions(t *testing.T) {
	for _, sdkUpstream := range []bool{false, true} {
		t.Run(fmt.Sprintf("sdk_upstream=%v", sdkUpstream), func(t *testing.T) {
			start := wireInteractionPeer
			if sdkUpstream {
				start = sdkInteractionPeer
			}
			reauthContinuation(t, start(t), start(t))
		})
	}
}

func reauthContinuation(t *testing.T, peer, otherPeer *recordingPeer) {
	// identity is alice's identity with the changed fields replacing hers.
	identity := func(servers, changed string) string {
		id := map[string]any{"user_id": "alice", "team_id": "team-a", "user_role": "internal_user"}
		var perm, diff map[string]any
		_ = json.Unmarshal([]byte(`{"object_permission_id":"test-permission","mcp_servers":[`+servers+`]}`), &perm)
		_ = json.Unmarshal([]byte(`{`+strings.TrimPrefix(changed, ",")+`}`), &diff)
		id["object_permission"] = perm
		for k, v := range diff {
			id[k] = v
		}
		b, _ := json.Marshal(id)
		return string(b)
	}
	auth := newInteractionAuth(t, identity(`"interaction-server"`, ""))
	gw := startGateway(t, fmt.Sprintf(`model_list: []
mcp_servers:
  mrtr:
    server_id: interaction-server
    url: %s
    transport: http
    protocol_version: "2026-07-28"
    allow_elicitation: true
  other:
    server_id: other-server
    url: %s
    transport: http
    protocol_version: "2026-07-28"
    allow_elicitation: true
general_settings:
  master_key: %s
  custom_auth: %s
  store_model_in_db: false
  mcp_advertised_versions: ["2025-11-25", "2026-07-28"]
`, peer.url(), otherPeer.url(), interactionKey, auth.srv.URL), map[string]string{"LITELLM_SALT_KEY": interactionSalt})

	const params = `"name":"mrtr-confirm","arguments":{}`
	initial := resultOf(modernRPC(t, gw, "tools/call", params, 200))
	if initial["resultType"] != "input_required" {
		t.Fatalf("initial: %v", initial)
	}
	retry := params + `,"requestState":"` + initial["requestState"].(string) + `","inputResponses":{"consent":{"action":"accept"}}`
	for _, changed := range []string{`,"user_id":"bob"`, `,"team_id":"team-b"`} {
		auth.write(identity(`"interaction-server"`, changed))
		peer.drain()
		rejected := modernRPC(t, gw, "tools/call", retry, 400)
		if errCode(rejected) != -32602 {
			t.Fatalf("changed caller %s: %v", changed, rejected)
		}
		if got := peer.drain(); len(got) != 0 {
			t.Fatalf("caller-bound state must reject before contacting upstream; upstream saw %v", got)
		}
	}
	auth.write(identity(`"interaction-server"`, ""))
	resumed := resultOf(modernRPC(t, gw, "tools/call", retry, 200))
	if c, _ := json.Marshal(resumed["content"]); string(c) != `[{"text":"confirmed","type":"text"}]` {
		t.Fatalf("resumed: %v", resumed)
	}

	auth.write(identity(`"denied-server"`, ""))
	peer.drain()
	revoked := modernRPC(t, gw, "tools/call", retry, 403)
	if revoked["detail"] != "MCP continuation target is no longer authorized" {
		t.Fatalf("revoked: %v", revoked)
	}
	if got := peer.drain(); len(got) != 0 {
		t.Fatalf("revoked access must reject a valid continuation before upstream dispatch; upstream saw %v", got)
	}

	auth.write(identity(`"interaction-server"`, ""))
	resource := resultOf(modernRPC(t, gw, "resources/read", `"uri":"test://confirm"`, 200))
	if resource["resultType"] != "input_required" {
		t.Fatalf("resources/read: %v", resource)
	}
	readRetry := `"uri":"test://confirm","requestState":"` + resource["requestState"].(string) + `","inputResponses":{"consent":{"action":"accept"}}`
	auth.write(identity(`"other-server"`, ""))
	peer.drain()
	otherPeer.drain()
	hdr := map[string]string{"Authorization": "Bearer " + interactionKey, "MCP-Protocol-Version": "2026-07-28",
		"Mcp-Method": "resources/read", "Mcp-Name": "test://confirm"}
	status, _, out := rpc(t, gw.url+"/mcp/", hdr, `{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{`+readRetry+`,`+interactionMeta+`}}`)
	if got := otherPeer.drain(); len(got) != 0 {
		t.Fatalf("continuation must never send upstream state to another authorized server; it saw %v", got)
	}
	if got := peer.drain(); len(got) != 0 {
		t.Fatalf("revoked original target must not receive a retry; it saw %v", got)
	}
	if status < 400 && out["error"] == nil {
		t.Fatalf("resumed with only the other server allowed: %d %v", status, out)
	}

	auth.write(identity(`"interaction-server","other-server"`, ""))
	completed := resultOf(modernRPC(t, gw, "resources/read", readRetry, 200))
	if c, _ := json.Marshal(completed["contents"]); string(c) != `[{"text":"confirmed","uri":"test://confirm"}]` {
		t.Fatalf("completed: %v", completed)
	}
	if got := otherPeer.drain(); len(got) != 0 {
		t.Fatalf("expanded access must keep the continuation on its original target; other saw %v", got)
	}
}
