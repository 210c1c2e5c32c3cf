package config

import (
	"math"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// ServerCost is a server's mcp_info.mcp_server_cost_info: what its tool calls cost, in
// LiteLLM's spend units.
type ServerCost struct {
	// DefaultPerQuery is default_cost_per_query: what a call of any tool costs.
	DefaultPerQuery float64
	// PerTool is tool_name_to_cost_per_query: what a call of one tool costs, by tool name.
	PerTool map[string]float64
}

// serverCost reads mcp_info.mcp_server_cost_info into c.
func (l *loader) serverCost(n *yaml.Node, field string, c *ServerCost) {
	for _, e := range l.entries(n, field, "key") {
		switch e.key {
		case "default_cost_per_query":
			if v, ok := l.cost(e.v, field+".default_cost_per_query"); ok {
				c.DefaultPerQuery = v
			}
		case "tool_name_to_cost_per_query":
			f := field + ".tool_name_to_cost_per_query"
			for _, te := range l.entries(e.v, f, "tool name") {
				if v, ok := l.cost(te.v, f+"."+te.key); ok {
					if c.PerTool == nil {
						c.PerTool = map[string]float64{}
					}
					c.PerTool[te.key] = v
				}
			}
		default:
			l.warnf(e.k, "%s: unknown key %q is ignored", field, e.key)
		}
	}
}

// cost parses a finite number ≥ 0.
func (l *loader) cost(n *yaml.Node, field string) (float64, bool) {
	s, ok := l.str(n, field)
	if !ok {
		return 0, false
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil || v < 0 || math.IsInf(v, 0) || math.IsNaN(v) {
		l.errorf(n, "%s must be a number ≥ 0", field)
		return 0, false
	}
	return v, true
}
