package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// seedTwoServers are the accesses whose config has the second server.
var seedTwoServers = []string{"fanout", "mixed-capabilities", "missing-credentials", "concurrent-probes", "rate-limited"}

// seedIdentity is what the seed's custom_auth returns for the caller: alice,
// allowed subscription-server (and second-server where the config has it).
func seedIdentity(access string) map[string]any {
	servers := []string{"subscription-server"}
	if slices.Contains(seedTwoServers, access) {
		servers = append(servers, "second-server")
	}
	return map[string]any{"api_key": subscriptionKey, "user_id": "alice", "user_role": "internal_user",
		"object_permission": map[string]any{"object_permission_id": "subscription-permission", "mcp_servers": servers}}
}

// seedSetup is the seed's configuration inputs for one case.
type seedSetup struct {
	access   string
	upstream *subUpstream
	plain    string // the mixed-capabilities second server's URL
	hook     string // the custom_auth webhook
	versions string // mcp_advertised_versions
	peerYAML string // extra keys for peer (metadata, config-change)
	peerURL  string // replaces peer's url (config-change)
}

// seedConfig is the seed's proxy.yaml for s.
func seedConfig(s seedSetup) string {
	up := s.upstream.URL
	legacyUp := s.access == "legacy-upstream-sse" || s.access == "legacy" || s.access == "legacy-both"
	var peer strings.Builder
	peer.WriteString("    server_id: subscription-server\n")
	if strings.HasPrefix(s.access, "renewal") {
		fmt.Fprintf(&peer, "    auth_type: oauth2\n    oauth2_flow: client_credentials\n    client_id: subscription-service\n"+
			"    client_secret: synthetic-client-secret\n    token_url: %s/token\n    scopes: [read, write]\n", up)
	}
	url, transport, version := up+"/mcp", "http", "2026-07-28"
	if s.access == "legacy-upstream-sse" {
		url, transport = up+"/sse", "sse"
	}
	if legacyUp {
		version = "2025-11-25"
	}
	if s.peerURL != "" {
		url = s.peerURL
	}
	fmt.Fprintf(&peer, "    url: %s\n    transport: %s\n    protocol_version: %q\n", url, transport, version)
	switch s.access {
	case "hidden":
		peer.WriteString("    allowed_tools: [change_tools]\n")
	case "rate-limited":
		peer.WriteString("    rpm: 1\n    static_headers: {X-Probe-Target: limited}\n")
	case "concurrent-probes":
		peer.WriteString("    timeout: 2\n")
	case "fanout":
		peer.WriteString("    auth_type: oauth_delegate\n    extra_headers: [Authorization]\n")
	}
	peer.WriteString(s.peerYAML)
	second := ""
	if slices.Contains(seedTwoServers, s.access) {
		secondURL := up + "/mcp"
		if s.plain != "" {
			secondURL = s.plain
		}
		second = fmt.Sprintf("  second:\n    server_id: second-server\n    url: %s\n    transport: http\n", secondURL)
		if s.access == "concurrent-probes" {
			second += "    timeout: 2\n"
		}
		second += "    protocol_version: \"2026-07-28\"\n"
		if s.access == "missing-credentials" {
			second += fmt.Sprintf("    auth_type: oauth2\n    oauth2_flow: authorization_code\n    client_id: subscription-client\n"+
				"    authorization_url: %s/authorize\n    token_url: %s/token\n    extra_headers: [Authorization]\n", up, up)
		} else {
			second += "    auth_type: oauth_delegate\n    extra_headers: [Authorization]\n"
		}
	}
	versions := s.versions
	if versions == "" {
		versions = `["2025-11-25", "2026-07-28"]`
	}
	return fmt.Sprintf(`model_list: []
mcp_servers:
  peer:
%s%sgeneral_settings:
  master_key: %s
  custom_auth: %s
  store_model_in_db: false
  mcp_advertised_versions: %s
`, peer.String(), second, subscriptionKey, s.hook, versions)
}

// seedEnv is the seed's environment for access.
func seedEnv(access string) map[string]string {
	env := map[string]string{"LITELLM_SALT_KEY": "subscription-pagination-key",
		"LITELLM_DANGEROUSLY_PERMIT_WEAK_OR_UNSET_MASTER_KEY": "true"}
	if access == "probe-timeout" {
		env["LITELLM_MCP_TOOL_LISTING_TIMEOUT"] = "2"
	}
	return env
}

// startSeedGateway serves the gateway as startGateway does and also returns
// stop, which shuts it down before the end of the test, as the seed's
// owned_proxy does when its block ends.
func startSeedGateway(t *testing.T, yaml string, env map[string]string) (gw *gatewayUnderTest, stop func()) {
	t.Helper()
	gw = startGateway(t, yaml, env)
	return gw, gw.stop
}

// applySeedConfig changes the running gateway's config to yaml, as a config
// reload does.
func applySeedConfig(t *testing.T, gw *gatewayUnderTest, yaml string, env map[string]string) {
	t.Helper()
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := gw.app.Apply(ctx, loadConfig(t, yaml, lookup)); err != nil {
		t.Fatalf("apply: %v", err)
	}
}
