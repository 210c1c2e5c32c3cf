package gateway

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/mcpgw/mcpgw/internal/fakemcp"
	"github.com/mcpgw/mcpgw/internal/fault"
	"github.com/mcpgw/mcpgw/internal/identity"
	"github.com/mcpgw/mcpgw/internal/mcp"
	"github.com/mcpgw/mcpgw/internal/upstream"
)

func TestDiscover(t *testing.T) {
	alpha := fakemcp.New(t, fakemcp.Opts{Caps: `{"tools":{"listChanged":true},"logging":{}}`})
	beta := fakemcp.New(t, fakemcp.Opts{Legacy: true, Caps: `{"prompts":{"listChanged":false},"resources":{"subscribe":true,"listChanged":true},"completions":{}}`})
	// These would add prompts.listChanged and completions if they answered.
	broken := fakemcp.New(t, fakemcp.Opts{Status: 500, Caps: `{"prompts":{"listChanged":true}}`})
	slow := fakemcp.New(t, fakemcp.Opts{Caps: `{"prompts":{"listChanged":true},"completions":{}}`,
		Delay: map[string]time.Duration{mcp.MethodDiscover: 10 * time.Second}})
	var logs fakemcp.LogBuffer
	g := newTestGateway(t, Config{ListTimeout: 300 * time.Millisecond, Logger: logs.Logger(), Advertised: []string{"2026-07-28", "2025-11-25"}},
		upSpec{name: "alpha", fake: alpha}, upSpec{name: "beta", fake: beta},
		upSpec{name: "broken", fake: broken}, upSpec{name: "slow", fake: slow})

	// Two upstreams fail their probe: features stay offered, but no change
	// notifications are promised (a change there could not be seen).
	start := time.Now()
	out := do(t, g, Operation{Method: mcp.MethodDiscover, Params: json.RawMessage(`{}`), Surface: fault.Modern})
	elapsed := time.Since(start)
	res := wantResult(t, out)
	want := `{
		"resultType":"complete",
		"supportedVersions":["2026-07-28","2025-11-25"],
		"capabilities":{
			"tools":{"listChanged":false},
			"prompts":{"listChanged":false},
			"resources":{"listChanged":false,"subscribe":false},
			"completions":{},
			"logging":{}
		},
		"ttlMs":0,
		"cacheScope":"private",
		"_meta":{
			"io.modelcontextprotocol/serverInfo":{"name":"mcpgw","version":"test"},
			"litellm.ai/server_outcomes":{"alpha":{"status":"ok"},"beta":{"status":"ok"},"broken":{"status":"upstream_error"},"slow":{"status":"timeout"}}
		}
	}`
	if !jsonEqual(t, out.Result, want) {
		t.Fatalf("discover = %s\nwant %s", out.Result, want)
	}
	if res["ttlMs"] == nil || res["cacheScope"] == nil {
		t.Fatalf("caching hints missing: %s", out.Result)
	}
	if elapsed > 3*time.Second {
		t.Fatalf("discovery took %v despite a 300ms listing timeout", elapsed)
	}
	if slow.Count(mcp.MethodDiscover) == 0 {
		t.Fatal("the slow upstream was never probed")
	}
	if broken.Count(mcp.MethodDiscover) == 0 {
		t.Fatal("the broken upstream was never probed")
	}

	t.Run("only what the caller may use", func(t *testing.T) {
		c := &identity.Caller{KeyHash: "k", Servers: []string{"beta"}}
		out := do(t, g, Operation{Method: mcp.MethodDiscover, Caller: c})
		if !jsonEqual(t, jsonMember(t, out.Result, "capabilities"),
			`{"prompts":{"listChanged":false},"resources":{"listChanged":true,"subscribe":true},"completions":{}}`) {
			t.Fatalf("capabilities = %s", jsonMember(t, out.Result, "capabilities"))
		}
	})
	t.Run("every upstream failing", func(t *testing.T) {
		out := do(t, g, Operation{Method: mcp.MethodDiscover, Scope: []string{"broken", "slow"}})
		res := wantResult(t, out)
		if !jsonEqual(t, res["capabilities"], `{"tools":{"listChanged":false}}`) || res["resultType"] != "complete" {
			t.Fatalf("discover = %s", out.Result)
		}
	})
	t.Run("no upstreams", func(t *testing.T) {
		out := do(t, g, Operation{Method: mcp.MethodDiscover, Caller: &identity.Caller{KeyHash: "k", Servers: []string{"no-mcp-servers"}}})
		if !jsonEqual(t, jsonMember(t, out.Result, "capabilities"), `{}`) {
			t.Fatalf("discover = %s", out.Result)
		}
	})
}

func jsonMember(t *testing.T, raw json.RawMessage, key string) json.RawMessage {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("not an object: %s", raw)
	}
	return m[key]
}

func TestLegacyCapabilities(t *testing.T) {
	var caps mcp.ServerCapabilities
	if err := json.Unmarshal(LegacyCapabilities(), &caps); err != nil {
		t.Fatal(err)
	}
	if !caps.HasTools() || !caps.ToolsListChanged() || !caps.HasPrompts() || !caps.PromptsListChanged() ||
		!caps.HasResources() || !caps.ResourcesListChanged() || !caps.ResourcesSubscribe() || !caps.HasCompletions() || !caps.HasLogging() {
		t.Fatalf("legacy capabilities = %s", LegacyCapabilities())
	}
}

func TestAggregateCapabilities(t *testing.T) {
	info := func(caps string) *upstream.Info {
		var c mcp.ServerCapabilities
		if err := json.Unmarshal([]byte(caps), &c); err != nil {
			t.Fatal(err)
		}
		return &upstream.Info{Capabilities: c}
	}
	full := `{"tools":{"listChanged":true},"resources":{"listChanged":true,"subscribe":true}}`
	cases := []struct {
		name  string
		infos []*upstream.Info
		want  string
	}{
		{"one capable upstream", []*upstream.Info{info(full)}, `{"tools":{"listChanged":true},"resources":{"listChanged":true,"subscribe":true}}`},
		{"mixed list-changed support", []*upstream.Info{info(full), info(`{"tools":{}}`)}, `{"tools":{"listChanged":false},"resources":{"listChanged":true,"subscribe":false}}`},
		{"subscribe needs a single upstream", []*upstream.Info{info(full), info(full)}, `{"tools":{"listChanged":true},"resources":{"listChanged":true,"subscribe":false}}`},
		{"a failed probe", []*upstream.Info{info(full), nil}, `{"tools":{"listChanged":false},"resources":{"listChanged":false,"subscribe":false}}`},
		{"nothing", nil, `{}`},
	}
	for _, tc := range cases {
		b, _ := json.Marshal(aggregate(tc.infos))
		if !jsonEqual(t, json.RawMessage(b), tc.want) {
			t.Errorf("%s: %s, want %s", tc.name, b, tc.want)
		}
	}
}

// A hung upstream used to make every aggregate tools/list and server/discover
// wait the whole listing timeout. Once it timed out, its breaker skips it:
// the next aggregate list and discovery answer at once, reporting it as
// skipped, while a direct call to it still goes through.
func TestAggregatesSkipHungServer(t *testing.T) {
	healthy := fakemcp.New(t, fakemcp.Opts{Lists: map[string][]json.RawMessage{mcp.MethodToolsList: fakemcp.Tools("a")}})
	hung := fakemcp.New(t, fakemcp.Opts{Delay: map[string]time.Duration{mcp.MethodToolsList: time.Minute}})
	const listTimeout = 400 * time.Millisecond
	g := newTestGateway(t, Config{ListTimeout: listTimeout}, upSpec{name: "healthy", fake: healthy}, upSpec{name: "hung", fake: hung})
	outcome := func(res json.RawMessage) string {
		var oc map[string]struct {
			Status string `json:"status"`
		}
		if err := json.Unmarshal(jsonMember(t, jsonMember(t, res, "_meta"), "litellm.ai/server_outcomes"), &oc); err != nil {
			t.Fatalf("%v: %s", err, res)
		}
		return oc["hung"].Status
	}
	timed := func(op Operation) (answered, time.Duration) {
		start := time.Now()
		out := do(t, g, op)
		return out, time.Since(start)
	}
	list := Operation{Method: mcp.MethodToolsList, Params: json.RawMessage(`{}`), Surface: fault.Modern}
	if out, _ := timed(list); outcome(out.Result) != "timeout" {
		t.Fatalf("first list: %s", out.Result)
	}
	out, took := timed(list)
	res := wantResult(t, out)
	if took > listTimeout/2 || outcome(out.Result) != "skipped" {
		t.Fatalf("second list took %v: %s", took, out.Result)
	}
	if names := itemNames(t, res, "tools"); len(names) != 1 || names[0] != "healthy-a" {
		t.Fatalf("tools = %v", names)
	}
	if n := hung.Count(mcp.MethodToolsList); n != 1 {
		t.Fatalf("hung asked %d times, want 1", n)
	}
	out, took = timed(Operation{Method: mcp.MethodDiscover, Params: json.RawMessage(`{}`), Surface: fault.Modern})
	if took > listTimeout/2 || outcome(out.Result) != "skipped" {
		t.Fatalf("discover took %v: %s", took, out.Result)
	}
	// A direct call is not blocked by the listing breaker: the upstream decides.
	do(t, g, Operation{Method: mcp.MethodToolsCall, Params: json.RawMessage(`{"name":"hung-x","arguments":{}}`), Surface: fault.Modern})
	if n := hung.Count(mcp.MethodToolsCall); n != 1 {
		t.Fatalf("tools/call reached the hung server %d times, want 1", n)
	}
}
