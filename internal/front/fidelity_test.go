package front

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpgw/mcpgw/internal/fakemcp"
	"github.com/mcpgw/mcpgw/internal/jsonrpc"
	"github.com/mcpgw/mcpgw/internal/mcp"
	"github.com/mcpgw/mcpgw/internal/testpeers"
)

// modernPost sends one 2026-07-28 request with the headers the spec
// requires; nameVal fills Mcp-Name when the method mirrors one.
func modernPost(t *testing.T, url, method, nameVal, params string) (*http.Response, []byte) {
	t.Helper()
	hdr := map[string]string{"Authorization": "Bearer " + testKey, mcp.HeaderProtocolVersion: mcp.V20260728, mcp.HeaderMethod: method}
	if mcp.NameParam(method) != "" {
		hdr[mcp.HeaderName] = nameVal
	}
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`
	if params == "" {
		params = "{" + meta + "}"
	} else {
		params = "{" + meta + "," + params + "}"
	}
	return post(t, url, hdr, fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":%q,"params":%s}`, method, params))
}

// eraUpstream is a fake of one era answering every routed method as a
// server of that era would: a 2025-era one without resultType or caching
// hints, a 2026-era one with them (a resources/read cached publicly).
func eraUpstream(t *testing.T, legacy bool) *fakemcp.Server {
	modern := ""
	if !legacy {
		modern = `"resultType":"complete",`
	}
	answer := func(body string) fakemcp.Handler {
		return func(json.RawMessage) (json.RawMessage, *jsonrpc.Error) {
			return json.RawMessage("{" + modern + body + "}"), nil
		}
	}
	read := `"contents":[{"uri":"file:///a","text":"a"}]`
	if !legacy {
		read += `,"ttlMs":5000,"cacheScope":"public"`
	}
	opts := fakemcp.Opts{
		Legacy: legacy,
		Lists: map[string][]json.RawMessage{
			mcp.MethodToolsList:              fakemcp.Tools("echo"),
			mcp.MethodPromptsList:            fakemcp.Prompts("greet"),
			mcp.MethodResourcesList:          fakemcp.Resources("file:///a"),
			mcp.MethodResourcesTemplatesList: fakemcp.Templates("file:///docs/{name}"),
		},
		Handlers: map[string]fakemcp.Handler{
			mcp.MethodToolsCall:          answer(`"content":[{"type":"text","text":"hi"}]`),
			mcp.MethodPromptsGet:         answer(`"messages":[{"role":"user","content":{"type":"text","text":"hi"}}]`),
			mcp.MethodResourcesRead:      answer(read),
			mcp.MethodCompletionComplete: answer(`"completion":{"values":["x"]}`),
		},
	}
	if !legacy {
		opts.TTLMs, opts.CacheScope = fakemcp.TTL(0), "private"
	}
	return fakemcp.New(t, opts)
}

// Every 2026-07-28 result carries what the 2026-07-28 schema (and the
// TypeScript SDK v2 client's validation) requires of it, whatever the era
// of the upstream that produced it: resultType everywhere, ttlMs and
// cacheScope on the six cacheable results, and each result's own members.
func TestModernResultsCarryRequiredFieldsForEveryUpstreamEra(t *testing.T) {
	legacyUp, modernUp := eraUpstream(t, true), eraUpstream(t, false)
	f := newTestFront(t, frontSpec{ups: []upSpec{{name: "old", fake: legacyUp}, {name: "new", fake: modernUp}}})
	type call struct {
		method, name, params string
		required             []string // besides resultType (and ttlMs/cacheScope when cacheable)
	}
	calls := func(server string) []call {
		return []call{
			{mcp.MethodDiscover, "", "", []string{"supportedVersions", "capabilities"}},
			{mcp.MethodToolsList, "", "", []string{"tools"}},
			{mcp.MethodPromptsList, "", "", []string{"prompts"}},
			{mcp.MethodResourcesList, "", "", []string{"resources"}},
			{mcp.MethodResourcesTemplatesList, "", "", []string{"resourceTemplates"}},
			{mcp.MethodResourcesRead, "file:///a", `"uri":"file:///a"`, []string{"contents"}},
			{mcp.MethodToolsCall, server + "-echo", `"name":"` + server + `-echo","arguments":{}`, []string{"content"}},
			{mcp.MethodPromptsGet, server + "-greet", `"name":"` + server + `-greet"`, []string{"messages"}},
			{mcp.MethodCompletionComplete, "", `"ref":{"type":"ref/prompt","name":"` + server + `-greet"},"argument":{"name":"a","value":"b"}`, []string{"completion"}},
		}
	}
	for _, server := range []string{"old", "new"} {
		for _, c := range calls(server) {
			t.Run(server+"/"+c.method, func(t *testing.T) {
				resp, body := modernPost(t, f.url+"/"+server+"/mcp", c.method, c.name, c.params)
				if resp.StatusCode != http.StatusOK {
					t.Fatalf("status %d: %s", resp.StatusCode, body)
				}
				var env struct {
					Result map[string]json.RawMessage `json:"result"`
				}
				if err := json.Unmarshal(body, &env); err != nil || env.Result == nil {
					t.Fatalf("no result: %s", body)
				}
				res := env.Result
				if string(res["resultType"]) != `"complete"` {
					t.Errorf("resultType = %s", res["resultType"])
				}
				for _, k := range c.required {
					if res[k] == nil {
						t.Errorf("required member %q missing: %s", k, body)
					}
				}
				if !mcp.CacheableMethod(c.method) {
					return
				}
				var ttl json.Number
				if err := json.Unmarshal(res["ttlMs"], &ttl); err != nil {
					t.Fatalf("ttlMs missing or not a number: %s", body)
				}
				if n, err := ttl.Int64(); err != nil || n < 0 {
					t.Errorf("ttlMs = %s, want an integer >= 0", ttl)
				}
				scope := strings.Trim(string(res["cacheScope"]), `"`)
				if scope != mcp.CacheScopePrivate && scope != mcp.CacheScopePublic {
					t.Errorf("cacheScope = %s, want public or private", res["cacheScope"])
				}
				if c.method == mcp.MethodResourcesRead {
					// What the upstream said is kept; the default is the conservative one.
					want := `0 private`
					if server == "new" {
						want = `5000 public`
					}
					if got := string(ttl) + " " + scope; got != want {
						t.Errorf("resources/read hints = %s, want %s", got, want)
					}
				}
			})
		}
	}
}

// initResult is the result of one initialize answered as JSON or as an SSE
// stream.
type initResult struct {
	Capabilities map[string]json.RawMessage `json:"capabilities"`
	Instructions string                     `json:"instructions"`
	ServerInfo   mcp.Implementation         `json:"serverInfo"`
}

func parseInit(t *testing.T, body []byte) initResult {
	t.Helper()
	if i := strings.Index(string(body), "data: "); i >= 0 && body[0] != '{' {
		line := string(body[i+len("data: "):])
		if j := strings.IndexByte(line, '\n'); j >= 0 {
			line = line[:j]
		}
		body = []byte(line)
	}
	var env struct {
		Result *initResult `json:"result"`
	}
	if err := json.Unmarshal(body, &env); err != nil || env.Result == nil {
		t.Fatalf("no initialize result: %s", body)
	}
	return *env.Result
}

func legacyInitialize(t *testing.T, url string, hdr map[string]string) initResult {
	t.Helper()
	resp, body := post(t, url, hdr, legacyInit)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("initialize %s: %d %s", url, resp.StatusCode, body)
	}
	return parseInit(t, body)
}

// features lists the standard feature capabilities of an initialize result.
func features(caps map[string]json.RawMessage) []string {
	var out []string
	for _, k := range []string{"tools", "prompts", "resources", "completions", "logging"} {
		if caps[k] != nil {
			out = append(out, k)
		}
	}
	return out
}

// /{server}/mcp looks like the server behind it: a legacy caller is offered
// the features the server offers, not every feature, and is given the
// server's instructions; the aggregate labels them per server.
func TestScopedInitializeAdvertisesOnlyTheServersFeatures(t *testing.T) {
	up := fakemcp.New(t, fakemcp.Opts{Legacy: true, Caps: `{"tools":{}}`, Instructions: "call echo first"})
	f := newTestFront(t, frontSpec{ups: []upSpec{{name: "only", fake: up}}})
	hdr := map[string]string{"Authorization": "Bearer " + testKey}
	scoped := legacyInitialize(t, f.url+"/only/mcp", hdr)
	if got := strings.Join(features(scoped.Capabilities), ","); got != "tools" {
		t.Errorf("scoped features = %s, want tools (the server offers nothing else)", got)
	}
	if scoped.Instructions != "call echo first" {
		t.Errorf("scoped instructions = %q", scoped.Instructions)
	}
	if scoped.ServerInfo.Name != "mcpgw" {
		t.Errorf("serverInfo = %+v, want the gateway's", scoped.ServerInfo)
	}
	agg := legacyInitialize(t, f.url+"/mcp", hdr)
	if agg.Instructions != "## only\ncall echo first" {
		t.Errorf("aggregate instructions = %q", agg.Instructions)
	}
}

// The same against the real server-everything, compared with initializing
// it directly. Documented differences: serverInfo names the gateway, and
// only the standard features are relayed (not experimental or extension
// capabilities).
func TestScopedEndpointMatchesServerEverythingDirect(t *testing.T) {
	url := testpeers.StartNodeEverything(t, "streamableHttp")
	direct := legacyInitialize(t, url, nil)
	if direct.Instructions == "" {
		t.Fatal("server-everything sent no instructions; the comparison means nothing")
	}
	f := newTestFront(t, frontSpec{ups: []upSpec{{name: "everything", url: url}}})
	hdr := map[string]string{"Authorization": "Bearer " + testKey}
	via := legacyInitialize(t, f.url+"/everything/mcp", hdr)
	if d, v := strings.Join(features(direct.Capabilities), ","), strings.Join(features(via.Capabilities), ","); d != v {
		t.Errorf("features: direct %s, through the gateway %s", d, v)
	}
	if via.Instructions != strings.TrimSpace(direct.Instructions) {
		t.Errorf("instructions differ:\ndirect  %.200q\ngateway %.200q", direct.Instructions, via.Instructions)
	}
	resp, body := modernPost(t, f.url+"/everything/mcp", mcp.MethodDiscover, "", "")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("discover: %d %s", resp.StatusCode, body)
	}
	var disc struct {
		Result struct {
			Capabilities map[string]json.RawMessage `json:"capabilities"`
			Instructions string                     `json:"instructions"`
		} `json:"result"`
	}
	_ = json.Unmarshal(body, &disc)
	if d, v := strings.Join(features(direct.Capabilities), ","), strings.Join(features(disc.Result.Capabilities), ","); d != v {
		t.Errorf("discover features: direct %s, through the gateway %s", d, v)
	}
	if disc.Result.Instructions != via.Instructions {
		t.Errorf("discover instructions differ from initialize's: %.200q", disc.Result.Instructions)
	}
	agg := legacyInitialize(t, f.url+"/mcp", hdr)
	if agg.Instructions != "## everything\n"+via.Instructions {
		t.Errorf("aggregate instructions = %.200q", agg.Instructions)
	}
}

// On the wire: a legacy session's call of an unknown tool is answered 200
// with an isError result and reaches no upstream; a modern caller gets 400
// with -32602; the REST route 400.
func TestUnknownToolOnTheWirePerEra(t *testing.T) {
	up := fakemcp.New(t, fakemcp.Opts{Lists: map[string][]json.RawMessage{mcp.MethodToolsList: fakemcp.Tools("echo")}})
	f := newTestFront(t, frontSpec{ups: []upSpec{{name: "up", fake: up}}})
	sid := initLegacy(t, f.url, testKey)
	resp, body := post(t, f.url+"/mcp", map[string]string{"Authorization": "Bearer " + testKey, mcp.HeaderSessionID: sid, mcp.HeaderProtocolVersion: mcp.V20251125},
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"up-nope","arguments":{}}}`)
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"isError":true`) || !strings.Contains(string(body), `Tool 'up-nope' not found`) {
		t.Fatalf("legacy: %d %s", resp.StatusCode, body)
	}
	resp, body = modernPost(t, f.url+"/mcp", mcp.MethodToolsCall, "up-nope", `"name":"up-nope","arguments":{}`)
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), `"code":-32602`) {
		t.Fatalf("modern: %d %s", resp.StatusCode, body)
	}
	status, _, rest := restPost(t, f.url, `{"server_id":"up","name":"nope","arguments":{}}`)
	if status != http.StatusBadRequest {
		t.Fatalf("REST: %d %v", status, rest)
	}
	if n := up.Count(mcp.MethodToolsCall); n != 0 {
		t.Fatalf("an unknown tool reached the upstream %d times", n)
	}
}

// tsFidelity is what the TypeScript SDK v2 client saw of one endpoint
// (test/clients/resources-read.mjs).
type tsFidelity struct {
	Mode         string   `json:"mode"`
	Era          string   `json:"era"`
	Instructions string   `json:"instructions"`
	Capabilities []string `json:"capabilities"`
	Resources    int      `json:"resources"`
	ReadContents int      `json:"read_contents"`
	Step         string   `json:"step"`
	Error        string   `json:"error"`
}

// runTSFidelity runs test/clients/resources-read.mjs against url; key "-" sends
// no credential.
func runTSFidelity(t *testing.T, mode, url, key, uri string) tsFidelity {
	t.Helper()
	node := testpeers.Node(t)
	dir := filepath.Join(testpeers.RepoRoot(t), "test", "clients")
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@modelcontextprotocol", "client", "package.json")); err != nil {
		if os.Getenv(testpeers.EnvRequirePeers) == "1" {
			t.Fatalf("@modelcontextprotocol/client is not installed in %s", dir)
		}
		t.Skipf("@modelcontextprotocol/client is not installed; npm ci --prefix %s", dir)
	}
	cmd := exec.CommandContext(t.Context(), node, "resources-read.mjs", mode, url, key, uri)
	cmd.Dir = dir
	out, _ := cmd.Output()
	var got tsFidelity
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("resources-read.mjs %s %s: %v: %s", mode, url, err, out)
	}
	if got.Error != "" {
		t.Fatalf("resources-read.mjs %s %s failed at %s: %s", mode, url, got.Step, got.Error)
	}
	return got
}

// The TypeScript SDK v2 client sees server-everything through
// /{server}/mcp as it sees it directly: the same features, the same
// instructions, the same resources, and a resources/read it accepts in
// either era (its 2026-07-28 schema requires ttlMs and cacheScope, which a
// 2025-era server never sends). Documented differences: serverInfo names
// the gateway; server-everything speaks only 2025-era revisions, so the
// modern row has no direct counterpart and is compared with the legacy one.
func TestTSClientSeesServerEverythingThroughTheGatewayAsDirect(t *testing.T) {
	const uri = "demo://resource/static/document/architecture.md"
	url := testpeers.StartNodeEverything(t, "streamableHttp")
	f := newTestFront(t, frontSpec{ups: []upSpec{{name: "everything", url: url}}})
	direct := runTSFidelity(t, "legacy", url, "-", uri)
	if direct.Instructions == "" || direct.ReadContents == 0 {
		t.Fatalf("direct: %+v", direct)
	}
	for _, mode := range []string{"legacy", "modern"} {
		via := runTSFidelity(t, mode, f.url+"/everything/mcp", testKey, uri)
		if mode == "modern" && via.Era != mcp.V20260728 {
			t.Errorf("modern: negotiated %q", via.Era)
		}
		if strings.Join(via.Capabilities, ",") != strings.Join(direct.Capabilities, ",") {
			t.Errorf("%s: capabilities %v, direct %v", mode, via.Capabilities, direct.Capabilities)
		}
		if via.Instructions != strings.TrimSpace(direct.Instructions) {
			t.Errorf("%s: instructions differ from direct (%d vs %d bytes)", mode, len(via.Instructions), len(direct.Instructions))
		}
		if via.Resources != direct.Resources || via.ReadContents != direct.ReadContents {
			t.Errorf("%s: resources %d read %d, direct %d %d", mode, via.Resources, via.ReadContents, direct.Resources, direct.ReadContents)
		}
	}
}
