package e2e

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/mcpgw/mcpgw/internal/app"
)

// TestModifyGuardrails: who may add, remove or change the guardrails of a key or team (the
// top-level guardrails field and metadata.guardrails, LiteLLM's other guardrail toggles too),
// on /key/generate, /key/update, /key/regenerate, /team/new and /team/update: the proxy admin
// always; anyone else who may make the rest of the change unless the caller's own team or the
// key's (or the team's own) team says metadata.guardrails.modify_guardrails: false (LiteLLM's
// rule: a team that says nothing allows it); a refusal is 403 with LiteLLM's message; a body
// that leaves the guardrails as they are is not a change.
func TestModifyGuardrails(t *testing.T) {
	gw := startGatewayWith(t, fmt.Sprintf("general_settings:\n  master_key: %s\n", testKey), nil, app.WithDataDir(t.TempDir())).url
	must := func(path, body string) map[string]any {
		t.Helper()
		status, m := manage(t, http.MethodPost, gw+path, testKey, body)
		if status != 200 {
			t.Fatalf("%s %s = %d %v", path, body, status, m)
		}
		return m
	}
	for _, u := range []struct{ id, role string }{{"root", "proxy_admin"}, {"alice", "internal_user"}, {"tadmin", "internal_user"}} {
		must("/user/new", `{"user_id":"`+u.id+`","user_role":"`+u.role+`"}`)
	}
	members := `"members_with_roles":[{"user_id":"alice","role":"user"},{"user_id":"tadmin","role":"admin"}]`
	must("/team/new", `{"team_id":"open","metadata":{"guardrails":{"modify_guardrails":true}},`+members+`}`)
	must("/team/new", `{"team_id":"plain",`+members+`}`)
	must("/team/new", `{"team_id":"locked","metadata":{"guardrails":{"modify_guardrails":false}},`+members+`}`)
	for _, id := range []string{"plain2", "open2", "locked2"} {
		meta := map[string]string{"plain2": `{}`, "open2": `{"guardrails":{"modify_guardrails":true}}`, "locked2": `{"guardrails":{"modify_guardrails":false}}`}[id]
		must("/team/new", `{"team_id":"`+id+`","metadata":`+meta+`,`+members+`}`)
	}
	keyOf := func(body string) string { return must("/key/generate", body)["key"].(string) }
	root := keyOf(`{"user_id":"root"}`)
	alice := keyOf(`{"user_id":"alice"}`)                        // no team
	aliceOpen := keyOf(`{"user_id":"alice","team_id":"open"}`)   // her team allows it
	alicePlain := keyOf(`{"user_id":"alice","team_id":"plain"}`) // her team does not say
	tadmin := keyOf(`{"user_id":"tadmin"}`)
	tadminLocked := keyOf(`{"user_id":"tadmin","team_id":"locked"}`) // the caller's own team forbids it
	guarded := func(team string) string {
		body := `{"user_id":"alice","guardrails":["g1"],"metadata":{"note":"n"}}`
		if team != "" {
			body = `{"user_id":"alice","team_id":"` + team + `","guardrails":["g1"],"metadata":{"note":"n"}}`
		}
		return keyOf(body)
	}

	const refused, ok = http.StatusForbidden, http.StatusOK
	tests := []struct {
		who, caller, path, body string
		want                    int
		adminOnly               bool // refused as the route is the proxy admin's, before any guardrail check
	}{
		// /key/generate
		{"internal_user, no team, field", alice, "/key/generate", `{"guardrails":["g1"]}`, ok, false},
		{"internal_user, no team, metadata", alice, "/key/generate", `{"metadata":{"guardrails":["g1"]}}`, ok, false},
		{"internal_user, no team, toggle", alice, "/key/generate", `{"metadata":{"disable_global_guardrails":true}}`, ok, false},
		{"internal_user, no team, none", alice, "/key/generate", `{"metadata":{"note":"x"},"guardrails":[]}`, ok, false},
		{"internal_user, team allows, field", aliceOpen, "/key/generate", `{"team_id":"open","guardrails":["g1"]}`, ok, false},
		{"internal_user, team allows, metadata", aliceOpen, "/key/generate", `{"team_id":"open","metadata":{"guardrails":["g1"]}}`, ok, false},
		{"internal_user, team silent", alicePlain, "/key/generate", `{"team_id":"plain","guardrails":["g1"]}`, ok, false},
		{"internal_user, team forbids", alice, "/key/generate", `{"team_id":"locked","metadata":{"guardrails":["g1"]}}`, refused, false},
		{"proxy_admin user", root, "/key/generate", `{"user_id":"alice","guardrails":["g1"]}`, ok, false},
		{"master key", testKey, "/key/generate", `{"user_id":"alice","metadata":{"guardrails":{"g1":true}}}`, ok, false},

		// /key/update and /key/regenerate
		{"owner, no team, remove by field", alice, "/key/update", `{"key":"` + guarded("") + `","guardrails":[]}`, ok, false},
		{"owner, no team, remove by metadata", alice, "/key/update", `{"key":"` + guarded("") + `","metadata":{"note":"n"}}`, ok, false},
		{"owner, no team, change", alice, "/key/update", `{"key":"` + guarded("") + `","guardrails":["g2"]}`, ok, false},
		{"owner, no team, toggle", alice, "/key/update", `{"key":"` + guarded("") + `","metadata":{"guardrails":["g1"],"opted_out_global_guardrails":["x"]}}`, ok, false},
		{"owner, no team, unchanged", alice, "/key/update", `{"key":"` + guarded("") + `","metadata":{"guardrails":["g1"],"note":"m"},"guardrails":["g1"]}`, ok, false},
		{"owner, no team, other field", alice, "/key/update", `{"key":"` + guarded("") + `","key_alias":"mine"}`, ok, false},
		{"owner, no team, regenerate", alice, "/key/regenerate", `{"key":"` + guarded("") + `","guardrails":[]}`, ok, false},
		{"owner, team allows", aliceOpen, "/key/update", `{"key":"` + guarded("open") + `","guardrails":[]}`, ok, false},
		{"owner, team silent", alicePlain, "/key/update", `{"key":"` + guarded("plain") + `","metadata":{}}`, ok, false},
		{"owner, team forbids", alicePlain, "/key/update", `{"key":"` + guarded("locked") + `","metadata":{}}`, refused, false},
		{"team admin, team allows", tadmin, "/key/update", `{"key":"` + guarded("open") + `","guardrails":["g2"]}`, ok, false},
		{"team admin, team silent", tadmin, "/key/update", `{"key":"` + guarded("plain") + `","guardrails":[]}`, ok, false},
		{"team admin, team forbids", tadmin, "/key/update", `{"key":"` + guarded("locked") + `","guardrails":[]}`, refused, false},
		{"team admin, own team forbids", tadminLocked, "/key/update", `{"key":"` + guarded("open") + `","metadata":{"guardrails":["g2"]}}`, refused, false},
		{"team admin, move to a silent team", tadmin, "/key/update", `{"key":"` + guarded("open") + `","team_id":"plain","guardrails":["g2"]}`, ok, false},
		{"team admin, move to a team that forbids", tadmin, "/key/update", `{"key":"` + guarded("open") + `","team_id":"locked","guardrails":["g2"]}`, refused, false},
		{"team admin, move out of a team that forbids", tadmin, "/key/update", `{"key":"` + guarded("locked") + `","team_id":"open","guardrails":[]}`, refused, false},
		{"proxy_admin user", root, "/key/update", `{"key":"` + guarded("plain") + `","guardrails":[]}`, ok, false},
		{"master key", testKey, "/key/update", `{"key":"` + guarded("locked") + `","metadata":{}}`, ok, false},

		// /team/new (the proxy admin's) and /team/update
		{"proxy_admin user, team/new", root, "/team/new", `{"team_id":"n1","guardrails":["g1"]}`, ok, false},
		{"team admin, team/new", tadmin, "/team/new", `{"team_id":"n2","guardrails":["g1"]}`, refused, true},
		{"team admin, silent team, field", tadmin, "/team/update", `{"team_id":"plain","guardrails":["g1"]}`, ok, false},
		{"team admin, locked team, grants itself", tadmin, "/team/update", `{"team_id":"locked2","metadata":{"guardrails":{"modify_guardrails":true}}}`, refused, false},
		{"team admin, silent team, other field", tadmin, "/team/update", `{"team_id":"plain","team_alias":"p","metadata":{"note":"x"}}`, ok, false},
		{"team admin, team allows, metadata", tadmin, "/team/update", `{"team_id":"open2","metadata":{"guardrails":{"modify_guardrails":true,"g1":true}}}`, ok, false},
		{"team admin, team forbids, drops the flag", tadmin, "/team/update", `{"team_id":"locked2","metadata":{}}`, refused, false},
		{"proxy_admin user, team forbids", root, "/team/update", `{"team_id":"locked2","guardrails":["g1"]}`, ok, false},
		{"master key, silent team", testKey, "/team/update", `{"team_id":"plain2","guardrails":["g1"]}`, ok, false},
	}
	for _, tc := range tests {
		t.Run(tc.who+" "+tc.path, func(t *testing.T) {
			status, m := manage(t, http.MethodPost, gw+tc.path, tc.caller, tc.body)
			if status != tc.want {
				t.Fatalf("%s %s = %d %v, want %d", tc.path, tc.body, status, m, tc.want)
			}
			if tc.want == refused && !tc.adminOnly {
				e, _ := m["error"].(map[string]any)
				msg, _ := e["message"].(string)
				if !strings.HasPrefix(msg, "Your team does not have permission to modify guardrails.") || e["code"] != "403" || e["type"] != "auth_error" {
					t.Fatalf("refusal %v, want LiteLLM's message", m)
				}
			}
		})
	}

	// A refused change wrote nothing: the key keeps its guardrails.
	k := guarded("locked")
	if status, _ := manage(t, http.MethodPost, gw+"/key/update", alicePlain, `{"key":"`+k+`","guardrails":[]}`); status != refused {
		t.Fatalf("removal = %d", status)
	}
	_, info := manage(t, http.MethodGet, gw+"/key/info?key="+k, testKey, "")
	if meta := fmt.Sprint(info["info"].(map[string]any)["metadata"]); !strings.Contains(meta, "guardrails:[g1]") {
		t.Fatalf("after a refused removal the key's metadata is %s", meta)
	}
}
