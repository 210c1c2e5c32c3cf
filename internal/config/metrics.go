package config

import (
	"fmt"
	"slices"

	"go.yaml.in/yaml/v3"
)

// mcpToolMetricLabels are the labels of LiteLLM's two MCP tool metrics
// (litellm_mcp_tool_calls_total, litellm_mcp_tool_call_spend_metric), the
// ones prometheus_metrics_config include_labels may keep.
var mcpToolMetricLabels = []string{"mcp_tool_name", "mcp_server_name", "hashed_api_key", "api_key_alias", "team", "team_alias", "user", "end_user"}

// mcpToolMetrics are the metric names a prometheus_metrics_config group
// names to narrow the MCP tool metrics' labels ("*" names every metric).
var mcpToolMetrics = []string{"litellm_mcp_tool_calls_total", "litellm_mcp_tool_call_spend_metric", "*"}

// Metrics are the /metrics settings (litellm_settings keys in brackets).
type Metrics struct {
	// Public serves /metrics without a credential
	// (require_auth_for_metrics_endpoint: false); by default it needs the
	// master key or a proxy_admin key.
	Public bool
	// ToolLabels, when set, are the only labels of the MCP tool metrics
	// (prometheus_metrics_config: the include_labels of the first group
	// whose metrics name either of them, or "*"); nil keeps all of them.
	ToolLabels []string
}

// prometheusMetricsConfig reads prometheus_metrics_config: a list of
// {group, metrics, include_labels}. Only the groups naming the MCP tool
// metrics matter here; the others are accepted and ignored, as mcpgw
// exports none of LiteLLM's other metrics.
func (l *loader) prometheusMetricsConfig(n *yaml.Node, field string, m *Metrics) {
	d := deref(n)
	if isNull(n) {
		return
	}
	if d.Kind != yaml.SequenceNode {
		l.errorf(n, "%s must be a list of {group, metrics, include_labels}", field)
		return
	}
	for i, item := range d.Content {
		at := fmt.Sprintf("%s[%d]", field, i)
		var metrics, labels []string
		labelsSet := false
		for _, e := range l.entries(item, at, "key") {
			switch e.key {
			case "group":
				l.str(e.v, at+".group")
			case "metrics":
				metrics = l.strList(e.v, at+".metrics")
			case "include_labels":
				labels, labelsSet = l.strList(e.v, at+".include_labels"), true
			default:
				l.warnf(e.k, "key %q in %s is not used by mcpgw (ignored)", e.key, at)
			}
		}
		if !labelsSet || m.ToolLabels != nil || !slices.ContainsFunc(metrics, func(s string) bool { return slices.Contains(mcpToolMetrics, s) }) {
			continue
		}
		kept := []string{}
		for _, lb := range labels {
			if !slices.Contains(mcpToolMetricLabels, lb) {
				l.warnf(item, "%s.include_labels: %q is not a label of the MCP tool metrics (ignored)", at, lb)
				continue
			}
			kept = append(kept, lb)
		}
		m.ToolLabels = kept
	}
}
