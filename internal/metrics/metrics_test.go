package metrics_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcpgw/mcpgw/internal/fault"
	"github.com/mcpgw/mcpgw/internal/metrics"
	"github.com/mcpgw/mcpgw/internal/observe"
)

// series returns each series of the family name as "k=v,k=v value".
func series(t *testing.T, m *metrics.Metrics, name string) []string {
	t.Helper()
	fams, err := m.Gatherer().Gather()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
		for _, s := range f.GetMetric() {
			var kv []string
			for _, l := range s.GetLabel() {
				kv = append(kv, l.GetName()+"="+l.GetValue())
			}
			v := s.GetCounter().GetValue()
			if h := s.GetHistogram(); h != nil {
				v = float64(h.GetSampleCount())
			}
			out = append(out, strings.Join(kv, ",")+" "+strconv.FormatFloat(v, 'g', -1, 64))
		}
	}
	return out
}

func call(m *metrics.Metrics, r observe.Request) {
	r.Duration = 3 * time.Millisecond
	m.EndRequest(context.Background(), &r)
}

// Caller-supplied values never grow the series without bound: a second
// caller past MaxCallers, a second tool past MaxNames, an unknown method or
// protocol version and an unrouted tool name all read _OTHER.
func TestLabelValuesAreBounded(t *testing.T) {
	m := metrics.New(metrics.Config{MaxCallers: 1, MaxNames: 1, Labels: []string{"mcp_tool_name", "mcp_server_name", "api_key_alias"}})
	call(m, observe.Request{Method: "tools/call", Target: "gh-search", Server: "gh", Caller: observe.Caller{KeyAlias: "a"}, Cost: 0.5})
	call(m, observe.Request{Method: "tools/call", Target: "gh-search", Server: "gh", Caller: observe.Caller{KeyAlias: "b"}})
	call(m, observe.Request{Method: "tools/call", Target: "gh-other", Server: "gh", Caller: observe.Caller{KeyAlias: "a"}})
	call(m, observe.Request{Method: "tools/call", Target: "nosuch", Fault: fault.UnknownTool})
	call(m, observe.Request{Method: "x/invented", Protocol: "1999-01-01", Transport: observe.TransportStreamable})
	got := strings.Join(series(t, m, "litellm_mcp_tool_calls_total"), " | ")
	for _, want := range []string{"api_key_alias=a,mcp_server_name=gh,mcp_tool_name=search 1", "api_key_alias=_OTHER,mcp_server_name=gh,mcp_tool_name=search 1", "api_key_alias=a,mcp_server_name=gh,mcp_tool_name=_OTHER 1"} {
		if !strings.Contains(got, want) {
			t.Errorf("tool calls %q lack %q", got, want)
		}
	}
	if spend := strings.Join(series(t, m, "litellm_mcp_tool_call_spend_metric_total"), " | "); !strings.Contains(spend, "mcp_tool_name=search 0.5") || strings.Count(spend, "|") != 0 {
		t.Errorf("spend %q: want one series of 0.5", spend)
	}
	hist := strings.Join(series(t, m, "mcp_server_operation_duration_seconds"), " | ")
	for _, want := range []string{"gen_ai_tool_name=_OTHER", "mcp_method_name=_OTHER", "mcp_protocol_version=_OTHER", "error_type=unknown_tool"} {
		if !strings.Contains(hist, want) {
			t.Errorf("histogram %q lacks %q", hist, want)
		}
	}
	if strings.Contains(hist, "nosuch") || strings.Contains(hist, "invented") || strings.Contains(hist, "1999") {
		t.Errorf("a caller's value was exported as sent: %q", hist)
	}
}
