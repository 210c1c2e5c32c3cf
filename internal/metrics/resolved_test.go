package metrics

import (
	"context"
	"strconv"
	"testing"

	"github.com/mcpgw/mcpgw/internal/allocstest"
	"github.com/mcpgw/mcpgw/internal/observe"
)

// TestResolvedSeriesBounded: past maxResolved label sets the shortcut keeps no more (a new one
// takes an old one's place), and
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
	newest := false // a full shortcut makes room: the latest label set is kept
	for k := range m.resolved {
		newest = newest || k.caller.KeyHash == strconv.Itoa(n-1)
	}
	if !newest {
		t.Fatal("the newest label set was not kept once the shortcut was full")
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

// TestDurationChildrenKept: repeated requests and calls are observed into the series the
// full path derives (a name refused by the cap stays _OTHER, an admitted one keeps its
// name, a failing status is its own series), the keys stay bounded, and a repeated request
// or call allocates nothing in the sink.
func TestDurationChildrenKept(t *testing.T) {
	m := New(Config{MaxNames: 1})
	ctx := context.Background()
	reqs := []observe.Request{
		{Method: "tools/call", Target: "fx-a", Server: "fx", Transport: "streamable_http"},
		{Method: "tools/call", Target: "fx-b", Server: "fx", Transport: "streamable_http"}, // past MaxNames
		{Method: "tools/call", Target: "fx-a", Server: "fx", Transport: "streamable_http", Status: 502},
		{Method: "resources/read", Target: "file:///1"},
		{Method: "resources/read", Target: "file:///2"}, // same labels: same key
	}
	for range 3 {
		for i := range reqs {
			m.EndRequest(ctx, &reqs[i])
			m.EndCall(ctx, &observe.Call{Server: reqs[i].Server, Method: reqs[i].Method, Target: reqs[i].Target})
		}
	}
	want := map[string]uint64{"a|": 3, "_OTHER|": 3, "a|502": 3, "|": 6}
	fams, err := m.Gatherer().Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]uint64{}
	for _, f := range fams {
		if f.GetName() != "mcp_server_operation_duration_seconds" {
			continue
		}
		for _, s := range f.GetMetric() {
			var tool, errType string
			for _, l := range s.GetLabel() {
				switch l.GetName() {
				case "gen_ai_tool_name":
					tool = l.GetValue()
				case "error_type":
					errType = l.GetValue()
				}
			}
			got[tool+"|"+errType] = s.GetHistogram().GetSampleCount()
		}
	}
	if len(got) != len(want) {
		t.Fatalf("server series %v, want %v", got, want)
	}
	for k, n := range want {
		if got[k] != n {
			t.Fatalf("server series %v, want %v", got, want)
		}
	}
	if len(m.serverObs.m) != 4 || len(m.clientObs.m) != 3 {
		t.Fatalf("kept %d server and %d client children, want 4 and 3", len(m.serverObs.m), len(m.clientObs.m))
	}
	r, c := &reqs[0], &observe.Call{Server: "fx", Method: "tools/call", Target: "fx-a"}
	if n := allocstest.Least(100, func() { m.EndRequest(ctx, r); m.EndCall(ctx, c) }); n != 0 {
		t.Fatalf("a repeated request and call allocate %v times, want 0", n)
	}
}
