package gateway

import (
	"context"
	"encoding/json"
	"strings"
	"unicode/utf8"

	"github.com/mcpgw/mcpgw/internal/upstream"
)

// MaxInstructionsBytes bounds the instructions taken from one upstream;
// longer ones are cut (at a rune boundary) and marked with "…".
const MaxInstructionsBytes = 32 << 10

// Introduction is what the gateway says of itself to a caller that
// connects: the capabilities of a legacy initialize result and the
// instructions of initialize and server/discover.
type Introduction struct {
	LegacyCapabilities json.RawMessage
	// Instructions are the scoped server's own, or on an aggregate every
	// visible server's, each under a "## <server>" heading; "" when none.
	Instructions string
}

// Introduce probes the servers op's caller may use here, as discovery does
// (breakers and patience apply), and says what a legacy initialize answers.
// A single-server endpoint looks like its server: only the features it
// offers are advertised (with the gateway's list-changed and subscribe
// promises, which it keeps by refreshing), and its instructions are passed
// on as they are. An aggregate advertises every feature, since the set of
// servers behind it changes.
func (g *Gateway) Introduce(ctx context.Context, op Operation) Introduction {
	g.resolveCallerTokens(ctx, &op)
	servers := g.visible(&op)
	infos, _ := g.infos(ctx, &op, servers)
	in := Introduction{LegacyCapabilities: LegacyCapabilities(), Instructions: g.instructions(&op, servers, infos)}
	if scopedTo(&op, servers) && infos[0] != nil {
		in.LegacyCapabilities = singleServerCapabilities(infos[0])
	}
	return in
}

// scopedTo reports a request scoped to exactly one server the caller sees.
func scopedTo(op *Operation, servers []string) bool {
	return len(op.Scope) == 1 && len(servers) == 1
}

// singleServerCapabilities is the legacy capabilities object of one
// server's endpoint: the features it offers.
func singleServerCapabilities(info *upstream.Info) json.RawMessage {
	sc := info.Capabilities
	var parts []string
	if sc.HasTools() {
		parts = append(parts, `"tools":{"listChanged":true}`)
	}
	if sc.HasPrompts() {
		parts = append(parts, `"prompts":{"listChanged":true}`)
	}
	if sc.HasResources() {
		parts = append(parts, `"resources":{"listChanged":true,"subscribe":true}`)
	}
	if sc.HasCompletions() {
		parts = append(parts, `"completions":{}`)
	}
	if sc.HasLogging() {
		parts = append(parts, `"logging":{}`)
	}
	return json.RawMessage("{" + strings.Join(parts, ",") + "}")
}

// instructions are the scoped server's instructions, or on an aggregate
// those of every server that answered, labelled, in config order.
func (g *Gateway) instructions(op *Operation, servers []string, infos []*upstream.Info) string {
	if scopedTo(op, servers) {
		if infos[0] == nil {
			return ""
		}
		return clipInstructions(infos[0].Instructions)
	}
	var b strings.Builder
	for i, name := range servers {
		if infos[i] == nil || infos[i].Instructions == "" {
			continue
		}
		if b.Len() > 0 {
			b.WriteString("\n\n")
		}
		b.WriteString("## ")
		b.WriteString(name)
		b.WriteString("\n")
		b.WriteString(clipInstructions(infos[i].Instructions))
	}
	return b.String()
}

func clipInstructions(s string) string {
	if len(s) <= MaxInstructionsBytes {
		return s
	}
	cut := MaxInstructionsBytes
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
