package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mcpgw/mcpgw/internal/app"
)

// registryAdminKey is the proxy admin of the seed-through-the-API tests' webhook.
const registryAdminKey = "sk-registry-admin-test"

// registryAuth is a custom_auth webhook for the seed's caller (subscriptionKey: alice, who may
// use subscription-server) and a proxy admin (registryAdminKey), who manages the servers.
func registryAuth(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var in struct {
			APIKey string `json:"api_key"`
		}
		_ = json.NewDecoder(r.Body).Decode(&in)
		w.Header().Set("Content-Type", "application/json")
		switch in.APIKey {
		case subscriptionKey:
			_ = json.NewEncoder(w).Encode(seedIdentity("metadata"))
		case registryAdminKey:
			_ = json.NewEncoder(w).Encode(map[string]any{"api_key": in.APIKey, "user_id": "registry-admin", "user_role": "proxy_admin"})
		default:
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = io.WriteString(w, `{"detail":"Unknown caller"}`)
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// registryAdmin calls a /v1/mcp/server route as the webhook's proxy admin.
func registryAdmin(t *testing.T, method, url, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+registryAdminKey)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestSubscriptionSeedChangesThroughTheAPI runs the seed's metadata and config-change cases
// with the subscribed server kept in the store and changed through PUT /v1/mcp/server
// instead of a config reload: a metadata-only change (authorization_url) keeps the
// subscription, which then delivers the upstream's change; a URL change ends it.
func TestSubscriptionSeedChangesThroughTheAPI(t *testing.T) {
	tsClients(t)
	for _, access := range []string{"metadata", "config-change"} {
		t.Run(access, func(t *testing.T) {
			t.Parallel()
			r := &seedRun{seedCase: seedCase{"tools", access}, up: startSubscriptionUpstream(t, subUpstreamOptions{Kind: "tools"}),
				env: seedEnv(access)}
			yaml := fmt.Sprintf("model_list: []\ngeneral_settings:\n  master_key: %s\n  custom_auth: %s\n  store_model_in_db: true\n"+
				"  mcp_advertised_versions: [\"2025-11-25\", \"2026-07-28\"]\n", subscriptionKey, registryAuth(t))
			r.gw = startGatewayWith(t, yaml, r.env, app.WithDataDir(t.TempDir()))
			r.stop = r.gw.stop
			peer := fmt.Sprintf(`{"server_id":"subscription-server","server_name":"peer","url":%q,"transport":"http",
				"mcp_info":{"protocol_version":"2026-07-28"}}`, r.up.MCPURL())
			if status, body := registryAdmin(t, "POST", r.gw.url+"/v1/mcp/server", peer); status != http.StatusCreated {
				t.Fatalf("POST peer = %d %s", status, body)
			}
			r.caller = startSeedCaller(t, r.gw.url+"/mcp/", map[string]string{"Authorization": "Bearer " + subscriptionKey})
			discovery, err := r.caller.discoverWithin(30 * time.Second)
			if err != nil {
				t.Fatalf("server/discover: %v", err)
			}
			r.checkDiscovery(t, discovery)
			if before := r.caller.mustList("tools"); !before["peer-change_tools"] || before["peer-added"] {
				t.Fatalf("tools/list before the change = %v", before)
			}
			honored, err := r.caller.listen(map[string]any{"toolsListChanged": true, "promptsListChanged": false,
				"resourcesListChanged": false, "resourceSubscriptions": []string{}})
			if err != nil {
				t.Fatalf("listen: %v", err)
			}
			change := `{"server_id":"subscription-server","authorization_url":"https://authorization.example/authorize"}`
			if access == "config-change" {
				change = fmt.Sprintf(`{"server_id":"subscription-server","url":%q}`, r.up.MCPURL()+"/changed")
			}
			if status, body := registryAdmin(t, "PUT", r.gw.url+"/v1/mcp/server", change); status != http.StatusOK {
				t.Fatalf("PUT peer = %d %s", status, body)
			}
			r.up.Change(t)
			if access == "config-change" {
				r.expectEnd(t, 5*time.Second)
				r.up.WaitListenersClosed(t, 3*time.Second)
			} else {
				r.expectChange(t, honored)
				r.expectNoEvent(t)
				if err := r.caller.leave(); err != nil {
					t.Fatal(err)
				}
				r.up.WaitListenersClosed(t, 3*time.Second)
			}
			r.stop()
			r.up.WaitListenersClosed(t, 10*time.Second)
		})
	}
}
