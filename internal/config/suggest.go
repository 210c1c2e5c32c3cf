package config

import (
	"strconv"
	"strings"
)

// The keys the loader reads at each level, for "did you mean" hints on unknown keys. A test
// checks that each is accepted without a warning, so the lists cannot drift from the loader.
var (
	topLevelKeys = []string{"environment_variables", "model_list", "mcp_servers", "general_settings", "litellm_settings", "router_settings", "guardrails"}
	generalKeys  = []string{"mcp_policies", "master_key", "custom_auth", "mcp_advertised_versions", "database_url",
		"maximum_spend_logs_retention_period", "maximum_spend_logs_retention_interval",
		"store_model_in_db", "mcp_scoped_prefix", "allowed_hosts", "allowed_origins",
		"http_read_header_timeout", "http_read_timeout", "http_write_timeout", "http_idle_timeout",
		"http_max_header_bytes", "max_request_body_bytes", "max_connections", "max_inflight_requests",
		"max_listeners_per_caller", "require_key_mcp_access_defined", "require_end_user_mcp_access_defined",
		"mcp_allow_all_keys_respects_mcp_scope", "redis_failure_mode", "mcp_health_check_interval", "mcp_health_check_timeout",
		"mcp_preview_allow_stdio", "mcp_preview_allow_private_networks", "mcp_access_log",
		"mcp_identity_signing_key", "mcp_identity_issuer", "mcp_identity_header",
		"mcp_public_base_url", "mcp_trusted_proxies", "enable_jwt_auth", "litellm_jwtauth"}
	litellmKeys = []string{"default_mcp_sampling_model", "mcp_aliases", "cache_params", "cache",
		"require_auth_for_metrics_endpoint", "prometheus_metrics_config", "callbacks"}
	routerKeys     = []string{"redis_url", "redis_host", "redis_port", "redis_password"}
	modelKeys      = []string{"model_name", "litellm_params"}
	modelParamKeys = []string{"model", "api_base", "api_key"}
	serverKeys     = []string{"spec_path", "server_id", "alias", "description", "url", "transport", "command", "args",
		"env", "protocol_version", "mcp_info", "auth_type", "auth_value", "authentication_token",
		"auth_header_name", "oauth2_flow", "client_id", "client_secret", "token_url",
		"authorization_url", "scopes", "static_headers", "extra_headers", "allowed_tools",
		"disallowed_tools", "allow_elicitation", "allow_sampling", "allow_all_keys", "access_groups",
		"rpm", "max_concurrent_requests", "timeout", "forward_identity", "pin_tool_definitions", "pinned_tools", "guardrails"}
)

// didYouMean returns `; did you mean "k"?` for the known key closest to key, or "" when none
// is close: at most 2 edits (insertions, deletions, substitutions or swaps of neighbours,
// ignoring case), and at most a third of the known key's length, so short keys are not
// matched to unrelated ones.
func didYouMean(key string, known []string) string {
	best, bestD := "", 3
	for _, k := range known {
		d := editDistance(strings.ToLower(key), k)
		if d < bestD && d*3 <= len(k) {
			best, bestD = k, d
		}
	}
	if best == "" || best == key {
		return ""
	}
	return "; did you mean " + strconv.Quote(best) + "?"
}

// editDistance is the optimal string alignment distance between a and b (byte-wise).
func editDistance(a, b string) int {
	if len(a) > 64 || len(b) > 64 { // keys are short; a long one is no typo of ours
		return 1 << 20
	}
	rows := make([][]int, len(a)+1)
	for i := range rows {
		rows[i] = make([]int, len(b)+1)
		rows[i][0] = i
	}
	for j := range rows[0] {
		rows[0][j] = j
	}
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			d := min(rows[i-1][j]+1, rows[i][j-1]+1, rows[i-1][j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				d = min(d, rows[i-2][j-2]+1)
			}
			rows[i][j] = d
		}
	}
	return rows[len(a)][len(b)]
}
