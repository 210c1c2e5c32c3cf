package gateway

import (
	"encoding/json"
	"testing"

	"github.com/mcpgw/mcpgw/internal/fakemcp"
	"github.com/mcpgw/mcpgw/internal/fault"
	"github.com/mcpgw/mcpgw/internal/identity"
	"github.com/mcpgw/mcpgw/internal/mcp"
)

// A single-server endpoint looks like its server (the features it offers,
// its instructions) in both eras; an aggregate combines the instructions of
// the servers the caller may see, labelled, and of no other.
func TestIntroductionLooksLikeTheServer(t *testing.T) {
	plain := fakemcp.New(t, fakemcp.Opts{Caps: `{"tools":{}}`, Instructions: "use plain for sums"})
	old := fakemcp.New(t, fakemcp.Opts{Legacy: true, Caps: `{"tools":{"listChanged":true},"resources":{}}`, Instructions: "old says hello"})
	quiet := fakemcp.New(t, fakemcp.Opts{Caps: `{"prompts":{}}`})
	g := newTestGateway(t, Config{}, upSpec{name: "plain", fake: plain}, upSpec{name: "old", fake: old}, upSpec{name: "quiet", fake: quiet})
	onlyOld := &identity.Caller{KeyHash: "k-old", Servers: []string{"old", "quiet"}}
	const all = `{"tools":{"listChanged":true},"prompts":{"listChanged":true},"resources":{"listChanged":true,"subscribe":true},"completions":{},"logging":{}}`
	for _, tc := range []struct {
		name         string
		scope        []string
		caller       *identity.Caller
		caps         string // legacy initialize capabilities
		discoverCaps string // server/discover capabilities
		instructions string
	}{
		{"scoped, modern upstream", []string{"plain"}, nil, `{"tools":{"listChanged":true}}`, `{"tools":{"listChanged":false}}`, "use plain for sums"},
		{"scoped, legacy upstream", []string{"old"}, nil, `{"tools":{"listChanged":true},"resources":{"listChanged":true,"subscribe":true}}`,
			`{"tools":{"listChanged":true},"resources":{"listChanged":false,"subscribe":false}}`, "old says hello"},
		{"scoped, no instructions", []string{"quiet"}, nil, `{"prompts":{"listChanged":true}}`, `{"prompts":{"listChanged":false}}`, ""},
		{"aggregate", nil, nil, all, "", "## plain\nuse plain for sums\n\n## old\nold says hello"},
		{"aggregate, servers the caller may not see are left out", nil, onlyOld, all, "", "## old\nold says hello"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			caller := tc.caller
			if caller == nil {
				caller = master
			}
			in := g.Introduce(t.Context(), Operation{Method: mcp.MethodInitialize, Caller: caller, Scope: tc.scope})
			if !jsonEqual(t, in.LegacyCapabilities, tc.caps) {
				t.Errorf("legacy capabilities = %s, want %s", in.LegacyCapabilities, tc.caps)
			}
			if in.Instructions != tc.instructions {
				t.Errorf("legacy instructions = %q, want %q", in.Instructions, tc.instructions)
			}
			res := wantResult(t, do(t, g, Operation{Method: mcp.MethodDiscover, Caller: caller, Scope: tc.scope, Surface: fault.Modern}))
			got, _ := res["instructions"].(string)
			if got != tc.instructions {
				t.Errorf("discover instructions = %q, want %q", got, tc.instructions)
			}
			if tc.discoverCaps != "" && !jsonEqual(t, res["capabilities"], tc.discoverCaps) {
				b, _ := json.Marshal(res["capabilities"])
				t.Errorf("discover capabilities = %s, want %s", b, tc.discoverCaps)
			}
		})
	}
}

func TestClipInstructions(t *testing.T) {
	long := string(make([]byte, MaxInstructionsBytes-1)) + "é" // the cut falls inside the rune
	got := clipInstructions(long)
	if len(got) > MaxInstructionsBytes+len("…") || got[len(got)-len("…"):] != "…" || !json.Valid([]byte(`"`+got[MaxInstructionsBytes-1:]+`"`)) {
		t.Fatalf("clipped badly: %d bytes, tail %q", len(got), got[len(got)-8:])
	}
	if clipInstructions("short") != "short" {
		t.Fatal("short instructions changed")
	}
}
