package config

import (
	"reflect"
	"testing"
)

func TestServerCostInfo(t *testing.T) {
	src := `mcp_servers:
  s:
    url: http://a/mcp
    mcp_info:
      server_name: free-form
      mcp_server_cost_info:
        default_cost_per_query: 0.01
        tool_name_to_cost_per_query:
          echo: 0.5
          free: 0
        typo: 1
`
	cfg, problems := mustParse(t, src, Options{})
	checkProblems(t, problems, []want{w(11, `unknown key "typo"`)})
	wantCost := ServerCost{DefaultPerQuery: 0.01, PerTool: map[string]float64{"echo": 0.5, "free": 0}}
	if got := cfg.Servers[0].Cost; !reflect.DeepEqual(got, wantCost) {
		t.Fatalf("cost = %+v, want %+v", got, wantCost)
	}
	bad := "mcp_servers:\n  s:\n    url: http://a/mcp\n    mcp_info:\n      mcp_server_cost_info:\n        default_cost_per_query: -1\n        tool_name_to_cost_per_query: {x: abc}\n"
	_, problems, _ = Parse([]byte(bad), Options{})
	checkProblems(t, problems, []want{e(6, "must be a number ≥ 0"), e(7, "must be a number ≥ 0")})
}
