package upstream

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/mcpgw/mcpgw/internal/mcp"
	"github.com/mcpgw/mcpgw/internal/testpeers"
)

// peerCase is one real upstream and what to exercise on it.
type peerCase struct {
	name     string
	cfg      func(t *testing.T) Config
	era      mcp.Era
	tool     string
	args     string
	toolText string // a substring the tool's text content must contain
	prompt   string
	pArgs    string
	listsAll bool // the server offers templates too
}

func goFixtureStdio(version string) func(t *testing.T) Config {
	return func(t *testing.T) Config {
		return Config{Name: "fixture", Transport: TransportStdio, Command: testpeers.GoFixture(t), ProtocolVersion: version}
	}
}

func goFixtureHTTP(stateless bool, version string) func(t *testing.T) Config {
	return func(t *testing.T) Config {
		return Config{Name: "fixture", URL: testpeers.StartGoFixtureHTTP(t, stateless), ProtocolVersion: version}
	}
}

func nodeEverything(mode string) func(t *testing.T) Config {
	return func(t *testing.T) Config {
		switch mode {
		case "stdio":
			argv := testpeers.NodeEverything(t)
			return Config{Name: "everything", Transport: TransportStdio, Command: argv[0], Args: append(argv[1:], "stdio")}
		case "sse":
			return Config{Name: "everything", Transport: TransportSSE, URL: testpeers.StartNodeEverything(t, "sse")}
		default:
			return Config{Name: "everything", URL: testpeers.StartNodeEverything(t, "streamableHttp")}
		}
	}
}

func peerCases() []peerCase {
	fixture := func(name string, cfg func(*testing.T) Config, era mcp.Era) peerCase {
		return peerCase{name: name, cfg: cfg, era: era, tool: "test_simple_text", args: `{}`,
			toolText: "simple text response", prompt: "test_prompt_with_arguments", pArgs: `{"arg1":"a","arg2":"b"}`, listsAll: true}
	}
	everything := func(name string, cfg func(*testing.T) Config) peerCase {
		return peerCase{name: name, cfg: cfg, era: mcp.EraLegacy, tool: "echo", args: `{"message":"hi"}`,
			toolText: "Echo: hi", prompt: "args-prompt", pArgs: `{"city":"Paris"}`, listsAll: true}
	}
	return []peerCase{
		fixture("go-fixture/stdio/auto", goFixtureStdio(""), mcp.EraModern),
		fixture("go-fixture/stdio/2025-11-25", goFixtureStdio(mcp.V20251125), mcp.EraLegacy),
		fixture("go-fixture/http-stateless/auto", goFixtureHTTP(true, ""), mcp.EraModern),
		fixture("go-fixture/http-stateless/2026-07-28", goFixtureHTTP(true, mcp.V20260728), mcp.EraModern),
		fixture("go-fixture/http-stateful/auto", goFixtureHTTP(false, ""), mcp.EraLegacy),
		fixture("go-fixture/http-stateful/2025-11-25", goFixtureHTTP(false, mcp.V20251125), mcp.EraLegacy),
		everything("server-everything/stdio", nodeEverything("stdio")),
		everything("server-everything/streamable-http", nodeEverything("http")),
		everything("server-everything/sse", nodeEverything("sse")),
	}
}

func TestRealUpstreams(t *testing.T) {
	for _, pc := range peerCases() {
		t.Run(pc.name, func(t *testing.T) {
			cfg := pc.cfg(t)
			cfg.RequestTimeout = 20 * time.Second
			c := newClient(t, cfg)
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()

			tools, err := c.ListTools(ctx, Options{})
			if err != nil {
				t.Fatalf("tools/list: %v", err)
			}
			if !containsNamed(tools, "name", pc.tool) {
				t.Fatalf("tools/list lacks %s (%d tools)", pc.tool, len(tools))
			}
			info, err := c.Info(ctx, Options{})
			if err != nil || info.Era != pc.era {
				t.Fatalf("era = %v (%+v), want %v; err %v", info.Era, info, pc.era, err)
			}
			prompts, err := c.ListPrompts(ctx, Options{})
			if err != nil || !containsNamed(prompts, "name", pc.prompt) {
				t.Fatalf("prompts/list: %d prompts, err %v", len(prompts), err)
			}
			resources, err := c.ListResources(ctx, Options{})
			if err != nil || len(resources) == 0 {
				t.Fatalf("resources/list: %d resources, err %v", len(resources), err)
			}
			templates, err := c.ListResourceTemplates(ctx, Options{})
			if err != nil || (pc.listsAll && len(templates) == 0) {
				t.Fatalf("resources/templates/list: %d templates, err %v", len(templates), err)
			}

			res, err := c.CallTool(ctx, pc.tool, json.RawMessage(pc.args), Options{})
			if err != nil {
				t.Fatalf("tools/call: %v", err)
			}
			if !strings.Contains(string(res.Raw), pc.toolText) || res.InputRequired {
				t.Fatalf("tools/call result %s lacks %q", res.Raw, pc.toolText)
			}
			pr, err := c.GetPrompt(ctx, pc.prompt, json.RawMessage(pc.pArgs), Options{})
			if err != nil || !strings.Contains(string(pr.Raw), `"messages"`) {
				t.Fatalf("prompts/get: %s %v", pr.Raw, err)
			}
			var first struct {
				URI string `json:"uri"`
			}
			if err := json.Unmarshal(resources[0], &first); err != nil || first.URI == "" {
				t.Fatalf("resource without uri: %s", resources[0])
			}
			rr, err := c.ReadResource(ctx, first.URI, Options{})
			if err != nil || !strings.Contains(string(rr.Raw), `"contents"`) {
				t.Fatalf("resources/read %s: %s %v", first.URI, rr.Raw, err)
			}
		})
	}
}

// containsNamed reports whether some item has member key equal to want.
func containsNamed(items []json.RawMessage, key, want string) bool {
	for _, it := range items {
		var m map[string]any
		if json.Unmarshal(it, &m) == nil && m[key] == want {
			return true
		}
	}
	return false
}

func TestRealUpstreamInteractions(t *testing.T) {
	cases := []struct {
		name string
		cfg  func(t *testing.T) Config
	}{
		{"go-fixture/stdio/2025-11-25 (shared stream)", goFixtureStdio(mcp.V20251125)},
		{"go-fixture/http-stateful/auto (per-request stream)", goFixtureHTTP(false, "")},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := newClient(t, tc.cfg(t))
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()

			var asked string
			in := &Interactions{Elicit: func(_ context.Context, p json.RawMessage) (json.RawMessage, error) {
				asked = string(p)
				return json.RawMessage(`{"action":"accept","content":{"username":"ada"}}`), nil
			}}
			res, err := c.CallTool(ctx, "test_elicitation", json.RawMessage(`{"message":"Who are you?"}`), Options{Interactions: in})
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(asked, "Who are you?") || !strings.Contains(string(res.Raw), "action=accept") || !strings.Contains(string(res.Raw), "ada") {
				t.Fatalf("asked %s, result %s", asked, res.Raw)
			}

			var progress []string
			pin := &Interactions{Progress: func(p json.RawMessage) { progress = append(progress, string(p)) }}
			params := json.RawMessage(`{"name":"test_tool_with_progress","arguments":{},"_meta":{"progressToken":"tok-1"}}`)
			if _, err := c.Call(ctx, mcp.MethodToolsCall, params, Options{Interactions: pin}); err != nil {
				t.Fatal(err)
			}
			if len(progress) != 3 {
				t.Fatalf("progress notifications = %v, want 3", progress)
			}
			for _, p := range progress {
				if !strings.Contains(p, `"progressToken":"tok-1"`) {
					t.Fatalf("progress delivered without the caller's token: %s", p)
				}
			}
		})
	}
}

// TestRealStdioAutoEraPerCaller: in auto mode a dual-era stdio child is
// spoken to in the legacy era for a legacy caller (Options.LegacyCaller: a
// child of its own, cheaper per call for the go-sdk, and all such a caller can
// use) and in the modern era for everyone else, whose input_required it
// carries. The legacy caller's elicitation arrives as a server→client request
// and is answered through its Interactions.
func TestRealStdioAutoEraPerCaller(t *testing.T) {
	c := newClient(t, goFixtureStdio("")(t))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var asked string
	legacy := Options{LegacyCaller: true, Interactions: &Interactions{Elicit: func(_ context.Context, p json.RawMessage) (json.RawMessage, error) {
		asked = string(p)
		return json.RawMessage(`{"action":"accept","content":{"username":"ada"}}`), nil
	}}}
	res, err := c.CallTool(ctx, "test_elicitation", json.RawMessage(`{"message":"Who are you?"}`), legacy)
	if err != nil || res.InputRequired || !strings.Contains(asked, "Who are you?") || !strings.Contains(string(res.Raw), "ada") {
		t.Fatalf("legacy caller: asked %q, result %s, err %v", asked, res.Raw, err)
	}
	if info, err := c.Info(ctx, legacy); err != nil || info.Era != mcp.EraLegacy {
		t.Fatalf("legacy caller's era = %v, err %v", info.Era, err)
	}
	res, err = c.CallTool(ctx, "test_input_required_result_elicitation", json.RawMessage(`{}`), Options{})
	if err != nil || !res.InputRequired {
		t.Fatalf("modern caller: result %s, err %v", res.Raw, err)
	}
	if info, err := c.Info(ctx, Options{}); err != nil || info.Era != mcp.EraModern {
		t.Fatalf("modern caller's era = %v, err %v", info.Era, err)
	}
}

// TestRealModernInputRequired: a modern upstream's input_required result
// reaches the caller, over HTTP and over stdio. A stdio child that speaks both
// eras is spoken to in the modern era by default (auto) although its legacy
// era costs the go-sdk fixture less CPU per call: only the modern era carries
// input_required, which is how a modern caller can answer an elicitation
// mid-call (a legacy upstream's elicitation/create cannot be suspended across
// a modern caller's requests).
func TestRealModernInputRequired(t *testing.T) {
	for name, cfg := range map[string]func(*testing.T) Config{
		"http-stateless/2026-07-28": goFixtureHTTP(true, mcp.V20260728),
		"stdio/auto":                goFixtureStdio(""),
	} {
		t.Run(name, func(t *testing.T) {
			c := newClient(t, cfg(t))
			res, err := c.CallTool(context.Background(), "test_input_required_result_elicitation", json.RawMessage(`{}`), Options{})
			if err != nil {
				t.Fatal(err)
			}
			if !res.InputRequired || !strings.Contains(string(res.Raw), `"inputRequests"`) {
				t.Fatalf("result = %s", res.Raw)
			}
		})
	}
}
