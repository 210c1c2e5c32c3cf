package e2e

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/mcpgw/mcpgw/internal/testpeers"
)

// TestManagementRoles: who may call which management route, by LiteLLM's roles — the proxy
// admin (master key or proxy_admin user) manages everything, proxy_admin_viewer reads, a team's
// admins manage the team's keys and members (not its permissions), an internal_user its own
// keys, an internal_user_viewer reads its own; everything else is 403 in LiteLLM's
// {"error": {...}} shape.
func TestManagementRoles(t *testing.T) {
	forEachStore(t, func(t *testing.T, st storeBackend) {
		fx := testpeers.StartGoFixtureHTTP(t, true)
		gw := startGatewayWithStore(t, st, fmt.Sprintf("general_settings:\n  master_key: %s\nmcp_servers:\n  a:\n    url: %s\n", testKey, fx))
		must := func(path, body string) map[string]any {
			t.Helper()
			status, m := manage(t, http.MethodPost, gw+path, testKey, body)
			if status != 200 {
				t.Fatalf("%s %s = %d %v", path, body, status, m)
			}
			return m
		}
		for _, u := range []struct{ id, role string }{{"root", "proxy_admin"}, {"viewer", "proxy_admin_viewer"},
			{"alice", "internal_user"}, {"tadmin", "internal_user"}, {"bob", "internal_user"}, {"iv", "internal_user_viewer"}} {
			must("/user/new", `{"user_id":"`+u.id+`","user_role":"`+u.role+`"}`)
		}
		must("/team/new", `{"team_id":"t","members_with_roles":[{"user_id":"alice","role":"user"},{"user_id":"tadmin","role":"admin"},{"user_id":"root","role":"user"}]}`)
		must("/team/new", `{"team_id":"t2"}`)
		keyOf := func(body string) string { return must("/key/generate", body)["key"].(string) }
		root, viewer, alice, tadmin, bob, iv := keyOf(`{"user_id":"root"}`), keyOf(`{"user_id":"viewer"}`),
			keyOf(`{"user_id":"alice","team_id":"t"}`), keyOf(`{"user_id":"tadmin"}`), keyOf(`{"user_id":"bob"}`), keyOf(`{"user_id":"iv"}`)
		aliceSolo := keyOf(`{"user_id":"alice"}`)

		tests := []struct {
			who, key, method, path, body string
			want                         int
		}{
			{"no credential", "", "GET", "/key/list", "", 401},
			{"proxy_admin user", root, "POST", "/organization/new", `{"organization_alias":"o"}`, 200},
			{"proxy_admin user", root, "POST", "/key/generate", `{"user_id":"bob","rpm_limit":5}`, 200},
			{"viewer", viewer, "GET", "/key/list", "", 200},
			{"viewer", viewer, "GET", "/key/info?key=" + bob, "", 200},
			{"viewer", viewer, "GET", "/organization/list", "", 200},
			{"viewer", viewer, "POST", "/key/generate", `{}`, 403},
			{"viewer", viewer, "POST", "/team/new", `{}`, 403},
			{"viewer", viewer, "POST", "/key/block", `{"key":"` + bob + `"}`, 403},
			{"internal_user", bob, "POST", "/key/generate", `{"key_alias":"bob-own"}`, 200},
			{"internal_user", bob, "POST", "/key/generate", `{"user_id":"alice"}`, 403},
			{"internal_user", bob, "POST", "/key/generate", `{"team_id":"t"}`, 403},
			{"internal_user", alice, "POST", "/key/generate", `{"team_id":"t"}`, 200},
			{"internal_user", alice, "POST", "/key/generate", `{"team_id":"t2"}`, 403},
			{"internal_user", alice, "POST", "/key/generate", `{"rpm_limit":5}`, 403},
			{"internal_user", alice, "GET", "/key/info?key=" + aliceSolo, "", 200},
			{"internal_user", alice, "GET", "/key/info?key=" + bob, "", 403},
			{"internal_user", alice, "GET", "/key/list?user_id=bob", "", 403},
			{"internal_user", alice, "POST", "/key/update", `{"key":"` + aliceSolo + `","key_alias":"mine"}`, 200},
			{"internal_user", alice, "POST", "/key/update", `{"key":"` + aliceSolo + `","user_id":"bob"}`, 403},
			{"internal_user", alice, "POST", "/key/update", `{"key":"` + bob + `","key_alias":"stolen"}`, 403},
			{"internal_user", alice, "POST", "/key/update", `{"key":"` + aliceSolo + `","max_parallel_requests":9}`, 403},
			{"internal_user", alice, "GET", "/team/info?team_id=t", "", 200},
			{"internal_user", alice, "GET", "/team/info?team_id=t2", "", 403},
			{"internal_user", alice, "POST", "/team/update", `{"team_id":"t","team_alias":"x"}`, 403},
			{"internal_user", alice, "POST", "/team/new", `{}`, 403},
			{"internal_user", alice, "GET", "/user/info", "", 200},
			{"internal_user", alice, "GET", "/user/info?user_id=bob", "", 403},
			{"internal_user", alice, "GET", "/organization/list", "", 403},
			{"internal_user", alice, "POST", "/customer/new", `{"user_id":"e"}`, 403},
			{"team admin", tadmin, "POST", "/key/generate", `{"team_id":"t"}`, 200},                   // its own
			{"team admin", tadmin, "POST", "/key/generate", `{"team_id":"t","user_id":"alice"}`, 403}, // would act as alice
			{"team admin", tadmin, "POST", "/key/generate", `{"team_id":"t","user_id":"root"}`, 403},  // would act as a proxy admin
			{"team admin", tadmin, "POST", "/key/regenerate", `{"key":"` + alice + `"}`, 403},         // a new secret of alice's key
			{"team admin", tadmin, "POST", "/key/update", `{"key":"` + alice + `","key_alias":"a-team"}`, 200},
			{"team admin", tadmin, "POST", "/key/generate", `{"team_id":"t","user_id":"bob"}`, 403}, // not a member
			{"team admin", tadmin, "POST", "/key/generate", `{"team_id":"t2"}`, 403},
			{"team admin", tadmin, "POST", "/key/block", `{"key":"` + alice + `"}`, 200},
			{"team admin", tadmin, "POST", "/key/unblock", `{"key":"` + alice + `"}`, 403}, // undoing a block is the proxy admin's
			{"internal_user", aliceSolo, "POST", "/key/unblock", `{"key":"` + alice + `"}`, 403},
			{"proxy_admin user", root, "POST", "/key/unblock", `{"key":"` + alice + `"}`, 200},
			{"team admin", tadmin, "POST", "/key/block", `{"key":"` + bob + `"}`, 403},
			{"team admin", tadmin, "GET", "/key/list?team_id=t", "", 200},
			{"team admin", tadmin, "POST", "/team/update", `{"team_id":"t","team_alias":"renamed"}`, 200},
			{"team admin", tadmin, "POST", "/team/update", `{"team_id":"t","object_permission":{"mcp_servers":["a"]}}`, 403},
			{"team admin", tadmin, "POST", "/team/member_add", `{"team_id":"t","member":{"user_id":"bob","role":"user"}}`, 200},
			{"team admin", tadmin, "POST", "/key/generate", `{"team_id":"t","user_id":"bob"}`, 403}, // a member now, still another user
			{"team admin", tadmin, "POST", "/team/member_delete", `{"team_id":"t","user_id":"bob"}`, 200},
			{"team admin", tadmin, "POST", "/team/member_add", `{"team_id":"t","member":{"user_id":"nobody","role":"user"}}`, 403}, // not a user
			{"team admin", tadmin, "POST", "/team/member_add", `{"team_id":"t2","member":{"user_id":"bob","role":"user"}}`, 403},
			{"internal_user_viewer", iv, "POST", "/key/generate", `{}`, 403},
			{"internal_user_viewer", iv, "GET", "/key/list", "", 200},
		}
		for _, tt := range tests {
			status, m := manage(t, tt.method, gw+tt.path, tt.key, tt.body)
			if status != tt.want {
				t.Errorf("%s: %s %s %s = %d %v, want %d", tt.who, tt.method, tt.path, tt.body, status, m, tt.want)
				continue
			}
			if status == 403 {
				e, _ := m["error"].(map[string]any)
				if msg, _ := e["message"].(string); e["type"] != "auth_error" || e["code"] != "403" || msg == "" {
					t.Errorf("%s: 403 body %v, want LiteLLM's {\"error\":{type auth_error, code \"403\", message}}", tt.who, m)
				}
			}
		}
		// An internal user's list holds only its own keys.
		_, m := manage(t, "GET", gw+"/key/list?return_full_object=true", alice, "")
		for _, k := range m["keys"].([]any) {
			if k.(map[string]any)["user_id"] != "alice" {
				t.Fatalf("alice's /key/list shows %v", k)
			}
		}
		// A plain member's /team/info shows its own keys of the team, not the others'.
		_, m = manage(t, "GET", gw+"/team/info?team_id=t", alice, "")
		for _, k := range m["keys"].([]any) {
			if k.(map[string]any)["user_id"] != "alice" {
				t.Fatalf("alice's /team/info shows %v", k)
			}
		}
		// A non-admin key that names no user is its maker's.
		_, m = manage(t, "POST", gw+"/key/generate", bob, `{}`)
		if m["user_id"] != "bob" {
			t.Fatalf("bob's key without user_id: %v", m)
		}
	})
}
