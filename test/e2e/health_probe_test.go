package e2e

import (
	"fmt"
	"maps"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/mcpgw/mcpgw/internal/testpeers"
)

// serverStatuses calls GET /v1/mcp/server/health with key and returns each
// listed server_id's status, and the ids in answer order.
func serverStatuses(t *testing.T, gw, key, query string) (map[string]string, []string) {
	t.Helper()
	status, m := manage(t, http.MethodGet, gw+"/v1/mcp/server/health"+query, key, "")
	list, ok := m["list"].([]any)
	if status != http.StatusOK || !ok {
		t.Fatalf("/v1/mcp/server/health%s = %d %v", query, status, m)
	}
	out := map[string]string{}
	var ids []string
	for _, e := range list {
		entry := e.(map[string]any)
		id, _ := entry["server_id"].(string)
		out[id], _ = entry["status"].(string)
		ids = append(ids, id)
	}
	return out, ids
}

// TestHealthEndpointChecksWithoutSpawning: GET /v1/mcp/server/health
// answers LiteLLM's [{server_id, status}] for the servers the caller sees:
// HTTP upstreams of both eras are healthy; a stdio server whose child has
// not started is unknown (checking it never starts one) and healthy once a
// request has started it; a key limited to one server sees that server
// only, and server_ids outside what it sees are left out.
func TestHealthEndpointChecksWithoutSpawning(t *testing.T) {
	gw := startGatewayWithStore(t, storeBackends()[0], fmt.Sprintf(`
general_settings:
  master_key: %s
  mcp_health_check_interval: 0.2
mcp_servers:
  stdio_fx:
    transport: stdio
    command: %s
  modern_fx:
    url: %s
  legacy_fx:
    server_id: legacy-id
    url: %s
`, testKey, testpeers.GoFixture(t), testpeers.StartGoFixtureHTTP(t, true), testpeers.StartGoFixtureHTTP(t, false)))

	got, ids := serverStatuses(t, gw, testKey, "")
	want := map[string]string{"stdio_fx": "unknown", "modern_fx": "healthy", "legacy-id": "healthy"}
	if !maps.Equal(got, want) || !slices.Equal(ids, []string{"stdio_fx", "modern_fx", "legacy-id"}) {
		t.Fatalf("health = %v (order %v), want %v in config order", got, ids, want)
	}
	time.Sleep(500 * time.Millisecond) // background rounds run meanwhile
	if got, _ := serverStatuses(t, gw, testKey, "?server_ids=stdio_fx"); got["stdio_fx"] != "unknown" {
		t.Fatalf("stdio server after background rounds = %v, want unknown: a check must not start its child", got)
	}

	// A listing starts the child; the next check finds it healthy.
	if status, m := manage(t, http.MethodGet, gw+"/mcp-rest/tools/list?server_id=stdio_fx", testKey, ""); status != 200 {
		t.Fatalf("tools/list = %d %v", status, m)
	}
	if got, _ := serverStatuses(t, gw, testKey, "?server_ids=stdio_fx"); !maps.Equal(got, map[string]string{"stdio_fx": "healthy"}) {
		t.Fatalf("stdio server once running = %v, want healthy", got)
	}

	key := generateKey(t, gw, `{"object_permission":{"mcp_servers":["modern_fx"]}}`)
	if got, _ := serverStatuses(t, gw, key, ""); !maps.Equal(got, map[string]string{"modern_fx": "healthy"}) {
		t.Fatalf("limited key sees %v, want modern_fx only", got)
	}
	if got, ids := serverStatuses(t, gw, key, "?server_ids=legacy-id,modern_fx&server_ids=nope"); len(ids) != 1 || got["modern_fx"] != "healthy" {
		t.Fatalf("limited key with server_ids sees %v, want modern_fx only", got)
	}
	if status, _ := manage(t, http.MethodGet, gw+"/v1/mcp/server/health", "sk-not-a-key", ""); status != http.StatusUnauthorized {
		t.Fatalf("unknown key = %d, want 401", status)
	}

	// The server list shows the prober's last word.
	status, m := manage(t, http.MethodGet, gw+"/v1/mcp/server", testKey, "")
	list, _ := m["list"].([]any)
	seen := map[string]any{}
	for _, e := range list {
		if v, ok := e.(map[string]any); ok {
			seen[fmt.Sprint(v["server_id"])] = v["status"]
		}
	}
	if status != http.StatusOK || seen["modern_fx"] != "healthy" || seen["stdio_fx"] != "healthy" {
		t.Fatalf("/v1/mcp/server = %d, statuses %v", status, seen)
	}

	// Readiness lists each server's last status by name, and stays 200.
	status, m = manage(t, http.MethodGet, gw+"/health/readiness", "", "")
	servers, _ := m["mcp_servers"].(map[string]any)
	if status != http.StatusOK || servers["stdio_fx"] != "healthy" || servers["modern_fx"] != "healthy" || servers["legacy_fx"] != "healthy" {
		t.Fatalf("readiness = %d %v", status, m)
	}
}

// TestHealthReadinessStaysUpWithAServerDown: an unreachable server is
// unhealthy in readiness's detail and in /v1/mcp/server/health, and
// readiness still answers 200.
func TestHealthReadinessStaysUpWithAServerDown(t *testing.T) {
	gw := startGateway(t, fmt.Sprintf(`
general_settings:
  master_key: %s
  mcp_health_check_interval: 0.1
mcp_servers:
  gone:
    url: http://127.0.0.1:1/mcp
`, testKey), nil)
	if got, _ := serverStatuses(t, gw.url, testKey, ""); got["gone"] != "unhealthy" {
		t.Fatalf("health = %v, want gone unhealthy", got)
	}
	status, m := manage(t, http.MethodGet, gw.url+"/health/readiness", "", "")
	servers, _ := m["mcp_servers"].(map[string]any)
	if status != http.StatusOK || m["status"] != "healthy" || servers["gone"] != "unhealthy" {
		t.Fatalf("readiness = %d %v, want 200 healthy with gone unhealthy", status, m)
	}
}
