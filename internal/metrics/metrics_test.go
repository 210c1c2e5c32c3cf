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

// Values from outside the gateway can neither panic the registry nor push
// other callers out: a tool name clipped mid-character and an end-user
// header of raw bytes are exported as valid UTF-8, end users past the cap
// read _OTHER while the key's own labels stay, and an upstream's own error
// code reads _OTHER while the specs' codes are kept.
func TestOutsideValuesAreSafeLabels(t *testing.T) {
	m := metrics.New(metrics.Config{MaxCallers: 1, Labels: []string{"mcp_tool_name", "api_key_alias", "end_user"}})
	clipped := "gh-" + strings.Repeat("a", 252) + "é"[:1] // 256 bytes ending inside "é"
	call(m, observe.Request{Method: "tools/call", Target: clipped, Server: "gh", Caller: observe.Caller{KeyAlias: "k", EndUser: "u1"}})
	call(m, observe.Request{Method: "tools/call", Target: "gh-x", Server: "gh", Caller: observe.Caller{KeyAlias: "k", EndUser: "\xff\xfe"}})
	call(m, observe.Request{Method: "tools/call", Target: "gh-x", Server: "gh", Caller: observe.Caller{KeyAlias: "k", EndUser: "u3"}})
	call(m, observe.Request{Method: "tools/call", Target: "gh-x", Server: "gh", ErrorCode: -31999, Fault: fault.UpstreamRPC})
	call(m, observe.Request{Method: "tools/call", Target: "gh-x", Server: "gh", ErrorCode: -32602, Fault: fault.InvalidParams})
	got := strings.Join(series(t, m, "litellm_mcp_tool_calls_total"), " | ")
	for _, want := range []string{"api_key_alias=k,end_user=u1,", "api_key_alias=k,end_user=_OTHER,mcp_tool_name=x 2"} {
		if !strings.Contains(got, want) {
			t.Errorf("tool calls %q lack %q", got, want)
		}
	}
	if strings.Contains(got, "\xff") || !strings.Contains(got, "\uFFFD") {
		t.Errorf("tool calls %q: want the clipped name made valid UTF-8", got)
	}
	hist := strings.Join(series(t, m, "mcp_server_operation_duration_seconds"), " | ")
	if strings.Contains(hist, "-31999") || !strings.Contains(hist, "rpc_response_status_code=_OTHER") || !strings.Contains(hist, "rpc_response_status_code=-32602") {
		t.Errorf("histogram %q: want an upstream's own code as _OTHER and -32602 kept", hist)
	}
}
