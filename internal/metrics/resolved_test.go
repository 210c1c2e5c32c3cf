package metrics

import (
	"context"
	"strconv"
	"testing"

	"github.com/mcpgw/mcpgw/internal/observe"
)

// TestResolvedSeriesBounded: past maxResolved label sets the shortcut keeps no more, and
// every call is still counted once under its own labels; spend is exported only for label
// sets whose calls cost something.
func TestResolvedSeriesBounded(t *testing.T) {
	m := New(Config{MaxCallers: 2 * maxResolved})
	n := maxResolved + 100
	for round := range 2 {
		for i := range n {
			r := &observe.Request{Method: "tools/call", Target: "fx-echo", Server: "fx", Caller: observe.Caller{KeyHash: strconv.Itoa(i)}}
			if i == 7 && round == 1 {
				r.Cost = 0.5
			}
			m.EndRequest(context.Background(), r)
		}
	}
	if len(m.resolved) != maxResolved {
		t.Fatalf("resolved = %d, want the cap %d", len(m.resolved), maxResolved)
	}
	fams, err := m.Gatherer().Gather()
	if err != nil {
		t.Fatal(err)
	}
	counts := map[string]int{}
	for _, f := range fams {
		for _, s := range f.GetMetric() {
			counts[f.GetName()]++
			if f.GetName() == "litellm_mcp_tool_calls_total" && s.GetCounter().GetValue() != 2 {
				t.Fatalf("a label set counted %v calls, want 2: %v", s.GetCounter().GetValue(), s.GetLabel())
			}
		}
	}
	if counts["litellm_mcp_tool_calls_total"] != n || counts["litellm_mcp_tool_call_spend_metric_total"] != 1 {
		t.Fatalf("series: %d call series (want %d), %d spend series (want 1)", counts["litellm_mcp_tool_calls_total"], n,
			counts["litellm_mcp_tool_call_spend_metric_total"])
	}
}
