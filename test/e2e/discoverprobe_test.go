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
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// probeMode is how the probe peer answers server/discover once armed.
type probeMode int

const (
	probePass    probeMode = iota // answer as the SDK does
	probeFail                     // -32603
	probeHang                     // hold the request until the test ends it
	probeBarrier                  // hold each until two have arrived, then answer
)

// probePeer is the seed's subscription upstream (A4): a go-sdk server with
// tool change_tools (which adds tool "added"), resource test://value,
// prompts and resource subscriptions, served over real HTTP behind a handler
// that counts its catalog reads and listens, records requests carrying
// X-Probe-Target: limited, and, once armed and the catalog reads reached
// their goal, fails, holds or gathers server/discover requests.
type probePeer struct {
	url string

	mu        sync.Mutex
	reads     int      // answered tools/prompts/resources/templates lists
	listens   int      // subscriptions/listen requests
	limited   []string // methods of requests carrying X-Probe-Target: limited
	mode      probeMode
	goal      int  // reads needed before an armed probe is controlled
	exercised bool // a controlled probe arrived
	arrivals  int
	barrier   chan struct{} // closed at two arrivals, or by release
	released  bool
	// noNotifications strips the capabilities of initialize and
	// server/discover and refuses subscriptions/listen with -32601.
	noNotifications bool
}

// startProbePeer serves the probe peer; with plain, a server of tools,
// prompts and resources that announces no list changes (the seed's plain SDK
// peer).
func startProbePeer(t *testing.T, plain, noNotifications bool) *probePeer {
	t.Helper()
	opts := &sdk.ServerOptions{HasPrompts: true, HasResources: true,
		SubscribeHandler:   func(context.Context, *sdk.SubscribeRequest) error { return nil },
		UnsubscribeHandler: func(context.Context, *sdk.UnsubscribeRequest) error { return nil },
		// Cacheable lists: a stale cache would show an old catalog.
		SetCacheable: func(_ context.Context, _ sdk.Request, c *sdk.Cacheable) { c.TTLMs = 60_000 }}
	if plain {
		opts = &sdk.ServerOptions{Capabilities: &sdk.ServerCapabilities{Tools: &sdk.ToolCapabilities{},
			Prompts: &sdk.PromptCapabilities{}, Resources: &sdk.ResourceCapabilities{}}}
	}
	srv := sdk.NewServer(&sdk.Implementation{Name: "subscription-peer", Version: "1"}, opts)
	added := func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "new tool"}}}, nil
	}
	srv.AddTool(&sdk.Tool{Name: "change_tools", InputSchema: map[string]any{"type": "object"}}, func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		srv.AddTool(&sdk.Tool{Name: "added", InputSchema: map[string]any{"type": "object"}}, added)
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "changed"}}}, nil
	})
	if plain {
		srv.AddPrompt(&sdk.Prompt{Name: "confirm"}, func(context.Context, *sdk.GetPromptRequest) (*sdk.GetPromptResult, error) {
			return &sdk.GetPromptResult{}, nil
		})
		srv.AddResource(&sdk.Resource{Name: "confirm", URI: "test://confirm"}, func(context.Context, *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
			return &sdk.ReadResourceResult{Contents: []*sdk.ResourceContents{{URI: "test://confirm", Text: "confirmed"}}}, nil
		})
	} else {
		srv.AddResource(&sdk.Resource{Name: "value", URI: "test://value"}, func(context.Context, *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
			return &sdk.ReadResourceResult{Contents: []*sdk.ResourceContents{{URI: "test://value", Text: "value"}}}, nil
		})
	}
	p := &probePeer{noNotifications: noNotifications, barrier: make(chan struct{})}
	inner := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv },
		&sdk.StreamableHTTPOptions{Stateless: true, JSONResponse: true})
	ts := httptest.NewServer(p.handler(inner))
	t.Cleanup(func() { p.release(); ts.Close() })
	p.url = ts.URL + "/mcp"
	return p
}

// arm controls the next server/discover requests once reads more catalog
// reads have been answered.
func (p *probePeer) arm(mode probeMode, reads int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.mode, p.goal = mode, p.reads+reads
}

// release lets every held probe go on.
func (p *probePeer) release() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.released {
		p.released = true
		close(p.barrier)
	}
}

func (p *probePeer) snapshot() (reads, listens, arrivals int, exercised bool, limited []string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.reads, p.listens, p.arrivals, p.exercised, append([]string(nil), p.limited...)
}

func (p *probePeer) clearLimited() { p.mu.Lock(); p.limited = nil; p.mu.Unlock() }

func (p *probePeer) handler(inner http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		_ = json.Unmarshal(body, &msg)
		p.mu.Lock()
		if r.Header.Get("X-Probe-Target") == "limited" {
			p.limited = append(p.limited, msg.Method)
		}
		if msg.Method == "subscriptions/listen" {
			p.listens++
		}
		controlled := msg.Method == "server/discover" && p.mode != probePass && p.reads >= p.goal
		mode := p.mode
		if controlled {
			p.exercised = true
			if mode == probeBarrier {
				p.arrivals++
				if p.arrivals == 2 && !p.released {
					p.released = true
					close(p.barrier)
				}
			}
		}
		p.mu.Unlock()
		switch {
		case msg.Method == "subscriptions/listen" && p.noNotifications:
			rpcError(w, http.StatusNotFound, msg.ID, -32601, "Upstream has no subscription support")
			return
		case controlled && mode == probeFail:
			rpcError(w, http.StatusOK, msg.ID, -32603, "Discovery unavailable")
			return
		case controlled:
			select {
			case <-p.barrier:
			case <-r.Context().Done():
				return
			}
		}
		rec := httptest.NewRecorder()
		inner.ServeHTTP(rec, r)
		out := rec.Body.Bytes()
		if p.noNotifications && (msg.Method == "server/discover" || msg.Method == "initialize") {
			out = withoutCapabilities(out)
		}
		switch msg.Method {
		case "tools/list", "prompts/list", "resources/list", "resources/templates/list":
			p.mu.Lock()
			p.reads++
			p.mu.Unlock()
		}
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.Header().Del("Content-Length")
		w.WriteHeader(rec.Code)
		_, _ = w.Write(out)
	})
}

// rpcError writes a JSON-RPC error answer.
func rpcError(w http.ResponseWriter, status int, id json.RawMessage, code int, message string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":{"code":%d,"message":%q}}`, id, code, message)
}

// withoutCapabilities empties the capabilities of a JSON answer's result.
func withoutCapabilities(body []byte) []byte {
	var m map[string]any
	if json.Unmarshal(body, &m) != nil {
		return body
	}
	if res, ok := m["result"].(map[string]any); ok {
		res["capabilities"] = map[string]any{}
	}
	b, _ := json.Marshal(m)
	return b
}

// discoveryGateway starts the gateway of the seed's discovery cases: server
// peer (server_id subscription-server) at peerURL with peerExtra, and, when
// second is set, second-server with secondExtra; custom_auth admits the
// caller to both.
func discoveryGateway(t *testing.T, peerURL, peerExtra, secondURL, secondExtra string, env map[string]string) *gatewayUnderTest {
	t.Helper()
	servers := []string{"subscription-server"}
	second := ""
	if secondURL != "" {
		servers = append(servers, "second-server")
		second = fmt.Sprintf(`
  second:
    server_id: second-server
    url: %s
    transport: http
    protocol_version: "2026-07-28"
%s`, secondURL, secondExtra)
	}
	hook, _ := subscriptionAuth(t, map[string]any{"api_key": subscriptionKey, "user_id": "alice", "user_role": "internal_user",
		"object_permission": map[string]any{"object_permission_id": "subscription-permission", "mcp_servers": servers}})
	if env == nil {
		env = map[string]string{}
	}
	env["LITELLM_SALT_KEY"] = "subscription-pagination-key"
	env["LITELLM_DANGEROUSLY_PERMIT_WEAK_OR_UNSET_MASTER_KEY"] = "true"
	return startGateway(t, fmt.Sprintf(`model_list: []
mcp_servers:
  peer:
    server_id: subscription-server
    url: %s
    transport: http
    protocol_version: "2026-07-28"
%s%s
general_settings:
  master_key: %s
  custom_auth: %s
  store_model_in_db: false
  mcp_advertised_versions: ["2025-11-25", "2026-07-28"]
`, peerURL, peerExtra, second, subscriptionKey, hook), env)
}

// discovered is a discovery's capabilities as the seed reads them.
type discovered struct {
	tools, toolsChanged, resources, resourcesChanged, subscribe bool
	raw                                                         map[string]any
}

// discoverNow sends server/discover as the seed's modern caller and fails
// the test unless it is answered within within.
func discoverNow(t *testing.T, gw *gatewayUnderTest, within time.Duration) discovered {
	t.Helper()
	hdr := modernHeaders("server/discover", "")
	hdr["Authorization"] = "Bearer " + subscriptionKey
	start := time.Now()
	status, _, body := rpc(t, gw.url+"/mcp/", hdr, `{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{`+modernMeta+`}}`)
	if took := time.Since(start); took > within {
		t.Fatalf("discovery took %v, want within %v", took, within)
	}
	res, _ := body["result"].(map[string]any)
	caps, _ := res["capabilities"].(map[string]any)
	if status != 200 || caps == nil {
		t.Fatalf("discover: %d %v", status, body)
	}
	d := discovered{raw: res}
	if tools, ok := caps["tools"].(map[string]any); ok {
		d.tools, d.toolsChanged = true, tools["listChanged"] == true
	}
	if r, ok := caps["resources"].(map[string]any); ok {
		d.resources, d.resourcesChanged, d.subscribe = true, r["listChanged"] == true, r["subscribe"] == true
	}
	return d
}

// seedTools lists the tools the seed's caller sees.
func seedTools(t *testing.T, gw *gatewayUnderTest) []string {
	t.Helper()
	hdr := modernHeaders("tools/list", "")
	hdr["Authorization"] = "Bearer " + subscriptionKey
	status, _, body := rpc(t, gw.url+"/mcp/", hdr, `{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{`+modernMeta+`}}`)
	if status != 200 {
		t.Fatalf("tools/list: %d %v", status, body)
	}
	return toolsOf(body)
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// probeDegrades runs the seed's probe-failure and probe-timeout cases: a
// capable single server is discovered live, then its probe fails or hangs
// after the gateway's discover read its four catalogs; discovery still
// answers within 5 s, keeps tools but promises no list changes and no
// subscribe, and tools/list still works.
func probeDegrades(t *testing.T, mode probeMode, env map[string]string) {
	peer := startProbePeer(t, false, false)
	gw := discoveryGateway(t, peer.url, "", "", "", env)
	if d := discoverNow(t, gw, 5*time.Second); !d.toolsChanged || !d.resourcesChanged || !d.subscribe {
		t.Fatalf("a capable upstream's discovery: %v", d.raw)
	}
	peer.arm(mode, 4)
	d := discoverNow(t, gw, 5*time.Second)
	peer.release()
	if _, _, _, exercised, _ := peer.snapshot(); !exercised {
		reads, _, _, _, _ := peer.snapshot()
		t.Fatalf("the probe was not sent after the four catalog reads (reads %d, goal %d)", reads, peer.goal)
	}
	if !d.tools || d.toolsChanged || d.subscribe {
		t.Fatalf("degraded discovery: %v", d.raw)
	}
	if names := seedTools(t, gw); !contains(names, "peer-change_tools") {
		t.Fatalf("tools/list after the failed probe: %v", names)
	}
}

// TestDiscoverProbeFailure is the seed's probe-failure case: the upstream's
// server/discover answers -32603.
func TestDiscoverProbeFailure(t *testing.T) {
	t.Parallel()
	probeDegrades(t, probeFail, nil)
}

// TestDiscoverProbeTimeout is the seed's probe-timeout case: the probe
// hangs, and LITELLM_MCP_TOOL_LISTING_TIMEOUT=2 bounds it.
func TestDiscoverProbeTimeout(t *testing.T) {
	t.Parallel()
	probeDegrades(t, probeHang, map[string]string{"LITELLM_MCP_TOOL_LISTING_TIMEOUT": "2"})
}

// TestDiscoverConcurrentProbes is the seed's concurrent-probes case: two
// servers with timeout 2, each probe held until both have arrived. Both
// are in flight together, after all eight catalog reads, and the flags stay
// true; two servers in scope promise no subscribe.
func TestDiscoverConcurrentProbes(t *testing.T) {
	t.Parallel()
	peer := startProbePeer(t, false, false)
	gw := discoveryGateway(t, peer.url, "    timeout: 2\n", peer.url, "    timeout: 2\n    auth_type: oauth_delegate\n    extra_headers: [Authorization]\n", nil)
	if d := discoverNow(t, gw, 5*time.Second); !d.toolsChanged || !d.resourcesChanged || d.subscribe {
		t.Fatalf("first discovery: %v", d.raw)
	}
	peer.arm(probeBarrier, 8)
	d := discoverNow(t, gw, 5*time.Second)
	peer.release()
	_, _, arrivals, exercised, _ := peer.snapshot()
	if !exercised || arrivals != 2 {
		t.Fatalf("probes in flight together: %d (exercised %v)", arrivals, exercised)
	}
	if !d.tools || !d.toolsChanged || d.subscribe {
		t.Fatalf("discovery with both probes answered: %v", d.raw)
	}
}

// TestDiscoverRateLimited is the seed's rate-limited case: peer has rpm 1
// and a static header. The first discovery reaches it (with the header); the
// second is answered without contacting it, degraded.
func TestDiscoverRateLimited(t *testing.T) {
	t.Parallel()
	peer := startProbePeer(t, false, false)
	gw := discoveryGateway(t, peer.url, "    rpm: 1\n    static_headers:\n      X-Probe-Target: limited\n",
		peer.url, "    auth_type: oauth_delegate\n    extra_headers: [Authorization]\n", nil)
	if d := discoverNow(t, gw, 5*time.Second); !d.toolsChanged || !d.resourcesChanged || d.subscribe {
		t.Fatalf("first discovery: %v", d.raw)
	}
	if _, _, _, _, limited := peer.snapshot(); len(limited) == 0 {
		t.Fatal("the admitted discovery never reached the limited upstream")
	}
	peer.clearLimited()
	d := discoverNow(t, gw, 5*time.Second)
	if _, _, _, _, limited := peer.snapshot(); len(limited) != 0 {
		t.Fatalf("the refused discovery reached the limited upstream: %v", limited)
	}
	if !d.tools || d.toolsChanged || d.subscribe {
		t.Fatalf("discovery past the limit: %v", d.raw)
	}
	outcomes := d.raw["_meta"].(map[string]any)["litellm.ai/server_outcomes"].(map[string]any)
	if o := outcomes["peer"].(map[string]any); o["status"] != "limit_exceeded" {
		t.Fatalf("peer's outcome: %v", outcomes)
	}
}

// capabilitiesMixed checks the seed's degraded flags of mixed-capabilities
// and missing-credentials: tools and resources offered, no list changes
// promised, no subscribe, peer's tools still listed and no upstream listen.
func capabilitiesMixed(t *testing.T, gw *gatewayUnderTest, peer *probePeer) {
	t.Helper()
	d := discoverNow(t, gw, 5*time.Second)
	if !d.tools || d.toolsChanged || !d.resources || d.resourcesChanged || d.subscribe {
		t.Fatalf("discovery: %v", d.raw)
	}
	if names := seedTools(t, gw); !contains(names, "peer-change_tools") || contains(names, "peer-added") {
		t.Fatalf("tools/list: %v", names)
	}
	if _, listens, _, _, _ := peer.snapshot(); listens != 0 {
		t.Fatalf("%d upstream listens opened", listens)
	}
}

// TestDiscoverMixedCapabilities is the seed's mixed-capabilities case: the
// second server is a plain SDK peer that announces no list changes.
func TestDiscoverMixedCapabilities(t *testing.T) {
	t.Parallel()
	peer, plain := startProbePeer(t, false, false), startProbePeer(t, true, false)
	gw := discoveryGateway(t, peer.url, "", plain.url, "    auth_type: oauth_delegate\n    extra_headers: [Authorization]\n", nil)
	capabilitiesMixed(t, gw, peer)
}

// TestDiscoverMissingCredentials is the seed's missing-credentials case: the
// second server takes the caller's own OAuth token (authorization_code)
// and the caller holds none; it is not contacted during discovery.
func TestDiscoverMissingCredentials(t *testing.T) {
	t.Parallel()
	peer, second := startProbePeer(t, false, false), startProbePeer(t, false, false)
	base := strings.TrimSuffix(second.url, "/mcp")
	gw := discoveryGateway(t, peer.url, "", second.url, fmt.Sprintf(`    auth_type: oauth2
    oauth2_flow: authorization_code
    client_id: subscription-client
    authorization_url: %s/authorize
    token_url: %s/token
`, base, base), nil)
	discoverNow(t, gw, 5*time.Second)
	if reads, _, _, _, _ := second.snapshot(); reads != 0 {
		t.Fatalf("discovery read %d catalogs of a server the caller holds no token for", reads)
	}
	capabilitiesMixed(t, gw, peer)
}
