package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/mcpgw/mcpgw/internal/testpeers"
)

// mustManage calls a management route with the master key and fails unless it answers 200.
func mustManage(t *testing.T, method, url, body string) map[string]any {
	t.Helper()
	status, m := manage(t, method, url, testKey, body)
	if status != 200 {
		t.Fatalf("%s %s = %d %v", method, url, status, m)
	}
	return m
}

// manageList calls a list route (its answer is a JSON array) with the master key.
func manageList(t *testing.T, url string) []any {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	req.Header.Set("Authorization", "Bearer "+testKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var list []any
	if resp.StatusCode != 200 || json.Unmarshal(raw, &list) != nil {
		t.Fatalf("GET %s = %d %s", url, resp.StatusCode, raw)
	}
	return list
}

// TestTeamsOrgsUsersLifecycle drives every team, organisation and user route over HTTP: an
// organisation, a team in it, a user, a member, a key of the team; info and list show them;
// the organisation cannot be deleted while the team is in it; deleting the team deletes its
// key, which is then refused on /mcp.
func TestTeamsOrgsUsersLifecycle(t *testing.T) {
	forEachStore(t, func(t *testing.T, st storeBackend) {
		fixture := testpeers.StartGoFixtureHTTP(t, false)
		gw := startGatewayWithStore(t, st, fmt.Sprintf("general_settings:\n  master_key: %s\nmcp_servers:\n  fx:\n    url: %s\n", testKey, fixture))

		org := mustManage(t, http.MethodPost, gw+"/organization/new",
			`{"organization_alias":"acme","metadata":{"tier":"gold"},"object_permission":{"mcp_servers":["fx"]}}`)
		orgID, _ := org["organization_id"].(string)
		if len(orgID) != 36 || org["organization_alias"] != "acme" {
			t.Fatalf("/organization/new = %v", org)
		}
		team := mustManage(t, http.MethodPost, gw+"/team/new", `{"team_alias":"eng","organization_id":"`+orgID+`",
			"members_with_roles":[{"user_id":"lead","role":"admin"}],"object_permission":{"mcp_servers":["fx"]},"rpm_limit":60}`)
		teamID, _ := team["team_id"].(string)
		if teamID == "" || team["organization_id"] != orgID || team["rpm_limit"] != 60.0 || len(team["members_with_roles"].([]any)) != 1 {
			t.Fatalf("/team/new = %v", team)
		}
		user := mustManage(t, http.MethodPost, gw+"/user/new", `{"user_id":"alice","user_email":"alice@example.com",
			"user_role":"internal_user","organization_id":"`+orgID+`"}`)
		if user["user_id"] != "alice" || user["user_role"] != "internal_user" {
			t.Fatalf("/user/new = %v", user)
		}
		team = mustManage(t, http.MethodPost, gw+"/team/member_add", `{"team_id":"`+teamID+`","member":[{"user_id":"alice","role":"user"}]}`)
		if got := fmt.Sprint(team["members_with_roles"]); !strings.Contains(got, "alice") || !strings.Contains(got, "lead") {
			t.Fatalf("/team/member_add = %v", team)
		}
		key := generateKey(t, gw, `{"user_id":"alice","team_id":"`+teamID+`","object_permission":{"mcp_servers":["fx"]}}`)
		if status, _ := listAs(t, gw, key); status != 200 {
			t.Fatalf("the team's key: %d", status)
		}

		// info and list show them.
		info := mustManage(t, http.MethodGet, gw+"/team/info?team_id="+teamID, "")
		if ti, _ := info["team_info"].(map[string]any); ti["team_alias"] != "eng" || len(info["keys"].([]any)) != 1 {
			t.Fatalf("/team/info = %v", info)
		}
		info = mustManage(t, http.MethodGet, gw+"/user/info?user_id=alice", "")
		if ui, _ := info["user_info"].(map[string]any); ui["user_email"] != "alice@example.com" ||
			!slices.Contains(ui["teams"].([]any), any(teamID)) || len(info["keys"].([]any)) != 1 {
			t.Fatalf("/user/info = %v", info)
		}
		info = mustManage(t, http.MethodGet, gw+"/organization/info?organization_id="+orgID, "")
		if teams, _ := info["teams"].([]any); len(teams) != 1 || info["organization_alias"] != "acme" {
			t.Fatalf("/organization/info = %v", info)
		}
		if list := manageList(t, gw+"/team/list?user_id=alice"); len(list) != 1 {
			t.Fatalf("/team/list?user_id=alice = %v", list)
		}
		if list := manageList(t, gw+"/organization/list"); len(list) != 1 {
			t.Fatalf("/organization/list = %v", list)
		}
		if m := mustManage(t, http.MethodGet, gw+"/user/list", ""); len(m["users"].([]any)) != 2 {
			t.Fatalf("/user/list = %v, want alice and the team's lead", m)
		}

		// Updates.
		team = mustManage(t, http.MethodPost, gw+"/team/update", `{"team_id":"`+teamID+`","team_alias":"platform","metadata":{"v":2}}`)
		if team["team_alias"] != "platform" || team["rpm_limit"] != 60.0 || len(team["members_with_roles"].([]any)) != 2 {
			t.Fatalf("/team/update = %v", team)
		}
		org = mustManage(t, http.MethodPatch, gw+"/organization/update", `{"organization_id":"`+orgID+`","organization_alias":"acme-corp"}`)
		if org["organization_alias"] != "acme-corp" || fmt.Sprint(org["metadata"]) != "map[tier:gold]" {
			t.Fatalf("/organization/update = %v", org)
		}
		user = mustManage(t, http.MethodPost, gw+"/user/update", `{"user_id":"alice","user_role":"internal_user_viewer"}`)
		if user["user_role"] != "internal_user_viewer" || user["user_email"] != "alice@example.com" {
			t.Fatalf("/user/update = %v", user)
		}
		if team = mustManage(t, http.MethodPost, gw+"/team/block", `{"team_id":"`+teamID+`"}`); team["blocked"] != true {
			t.Fatalf("/team/block = %v", team)
		}
		if team = mustManage(t, http.MethodPost, gw+"/team/unblock", `{"team_id":"`+teamID+`"}`); team["blocked"] != false {
			t.Fatalf("/team/unblock = %v", team)
		}
		team = mustManage(t, http.MethodPost, gw+"/team/member_delete", `{"team_id":"`+teamID+`","user_id":"lead"}`)
		if got := fmt.Sprint(team["members_with_roles"]); strings.Contains(got, "lead") {
			t.Fatalf("/team/member_delete = %v", team)
		}

		// The organisation is in use: refused (409), nothing deleted.
		status, m := manage(t, http.MethodDelete, gw+"/organization/delete", testKey, `{"organization_ids":["`+orgID+`"]}`)
		if e, _ := m["error"].(map[string]any); status != 409 || !strings.Contains(fmt.Sprint(e["message"]), "still has teams") {
			t.Fatalf("/organization/delete of an org in use = %d %v", status, m)
		}

		// Deleting the team deletes its key: refused on /mcp at once.
		if m := mustManage(t, http.MethodPost, gw+"/team/delete", `{"team_ids":["`+teamID+`"]}`); len(m["deleted_teams"].([]any)) != 1 {
			t.Fatalf("/team/delete = %v", m)
		}
		if status, body := listAs(t, gw, key); status != 401 {
			t.Fatalf("a deleted team's key: %d %v, want 401", status, body)
		}
		if status, _ := manage(t, http.MethodGet, gw+"/team/info?team_id="+teamID, testKey, ""); status != 404 {
			t.Fatalf("/team/info of a deleted team = %d", status)
		}
		info = mustManage(t, http.MethodGet, gw+"/user/info?user_id=alice", "")
		if ui, _ := info["user_info"].(map[string]any); len(ui["teams"].([]any)) != 0 || len(info["keys"].([]any)) != 0 {
			t.Fatalf("alice after her team's delete = %v", info)
		}

		// Users hold the organisation still; deleting them (and their keys) frees it.
		key2 := generateKey(t, gw, `{"user_id":"alice"}`)
		mustManage(t, http.MethodPost, gw+"/user/delete", `{"user_ids":["alice","lead"]}`)
		if status, _ := listAs(t, gw, key2); status != 401 {
			t.Fatalf("a deleted user's key: %d, want 401", status)
		}
		mustManage(t, http.MethodDelete, gw+"/organization/delete", `{"organization_ids":["`+orgID+`"]}`)
		if list := manageList(t, gw+"/organization/list"); len(list) != 0 {
			t.Fatalf("/organization/list after delete = %v", list)
		}
	})
}

// TestEndUsersAndDirectoryGuard: /customer/* and its /end_user/* aliases store end users; only
// the master key may call any of the directory routes; bad input is 4xx naming the field.
func TestEndUsersAndDirectoryGuard(t *testing.T) {
	forEachStore(t, func(t *testing.T, st storeBackend) {
		gw := startGatewayWithStore(t, st, "general_settings:\n  master_key: "+testKey+"\n")
		c := mustManage(t, http.MethodPost, gw+"/customer/new", `{"user_id":"cust-1","alias":"Big Co","object_permission":{"mcp_servers":["fx"]}}`)
		if c["user_id"] != "cust-1" || c["alias"] != "Big Co" || c["blocked"] != false {
			t.Fatalf("/customer/new = %v", c)
		}
		c = mustManage(t, http.MethodPost, gw+"/end_user/update", `{"user_id":"cust-1","blocked":true}`)
		if c["blocked"] != true || c["alias"] != "Big Co" {
			t.Fatalf("/end_user/update = %v", c)
		}
		mustManage(t, http.MethodPost, gw+"/customer/unblock", `{"user_ids":["cust-1"]}`)
		if status, m := manage(t, http.MethodPost, gw+"/customer/block", testKey, `{"user_ids":["cust-1","nope"]}`); status != 404 {
			t.Fatalf("/customer/block of a missing end user = %d %v", status, m)
		}
		if c = mustManage(t, http.MethodGet, gw+"/customer/info?end_user_id=cust-1", ""); c["blocked"] != false {
			t.Fatalf("a refused /customer/block changed: %v", c)
		}
		mustManage(t, http.MethodPost, gw+"/end_user/block", `{"user_ids":["cust-1"]}`)
		if c = mustManage(t, http.MethodGet, gw+"/end_user/info?end_user_id=cust-1", ""); c["blocked"] != true {
			t.Fatalf("/end_user/info = %v", c)
		}
		if list := manageList(t, gw+"/customer/list"); len(list) != 1 {
			t.Fatalf("/customer/list = %v", list)
		}
		mustManage(t, http.MethodPost, gw+"/customer/delete", `{"user_ids":["cust-1"]}`)
		if status, _ := manage(t, http.MethodGet, gw+"/customer/info?end_user_id=cust-1", testKey, ""); status != 404 {
			t.Fatalf("/customer/info of a deleted end user = %d", status)
		}

		storeKey := generateKey(t, gw, `{}`)
		for _, tt := range []struct {
			key, method, path, body string
			status                  int
			want                    string
		}{
			{"", http.MethodPost, "/team/new", `{}`, 401, "missing credential"},
			{storeKey, http.MethodPost, "/team/new", `{}`, 403, "only the proxy admin"},
			{storeKey, http.MethodGet, "/organization/list", ``, 403, "only the proxy admin"},
			{storeKey, http.MethodPost, "/customer/new", `{"user_id":"x"}`, 403, "only the proxy admin"},
			{testKey, http.MethodPost, "/team/new", `{"models":["gpt-4"]}`, 400, `unknown field "models"`},
			{testKey, http.MethodPost, "/team/new", `{"team_alias":`, 400, "malformed JSON"},
			{testKey, http.MethodPost, "/organization/new", `{"organization_alias":5}`, 400, "want a string"},
			{testKey, http.MethodPost, "/user/new", `{"user_role":"root"}`, 400, "user_role"},
			{testKey, http.MethodPost, "/customer/new", `{"user_id":"c","max_budget":1}`, 400, `unknown field "max_budget"`},
			{testKey, http.MethodPost, "/team/new", `{"organization_id":"nope"}`, 400, "organization_id 'nope' does not exist"},
			{testKey, http.MethodPost, "/key/generate", `{"team_id":"nope"}`, 400, "team_id 'nope' does not exist"},
		} {
			t.Run(tt.path+" "+tt.body, func(t *testing.T) {
				status, m := manage(t, tt.method, gw+tt.path, tt.key, tt.body)
				e, _ := m["error"].(map[string]any)
				if status != tt.status || e["code"] != fmt.Sprint(tt.status) || !strings.Contains(fmt.Sprint(e["message"]), tt.want) {
					t.Fatalf("= %d %v, want %d with %q", status, m, tt.status, tt.want)
				}
			})
		}
		if m := mustManage(t, http.MethodGet, gw+"/key/list", ""); m["total_count"] != 1.0 {
			t.Fatalf("a refused /key/generate wrote a key: %v", m)
		}
	})
}
