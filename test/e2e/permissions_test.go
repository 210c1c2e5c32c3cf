package e2e

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcpgw/mcpgw/internal/testpeers"
)

// permRow is one rule of the permission table: the object_permission of each level (JSON, ""
// for no such entity), extra general_settings, and what the key may then reach.
type permRow struct {
	name                          string
	settings                      string
	allowAllC                     bool // server c has allow_all_keys: true
	org, team, user, endUser, key string
	want                          []string // servers (a, b, c) visible
	denied                        []string // tools refused although their server is visible
}

// permissionRows: one row per documented rule (LiteLLM's mcp_control and access-inheritance
// docs) and per permission bug LiteLLM's users reported. Servers a and b are in access group g.
func permissionRows() []permRow {
	const simple = "test_simple_text"
	return []permRow{
		{name: "no lists anywhere: every server", org: `{}`, team: `{}`, user: `{}`, key: `{}`, want: []string{"a", "b", "c"}},
		{name: "key and team lists intersect", team: `{"mcp_servers":["b","c"]}`, key: `{"mcp_servers":["a","b"]}`, want: []string{"b"}},
		{name: "empty key list inherits the team's", team: `{"mcp_servers":["c"]}`, key: `{}`, want: []string{"c"}},
		{name: "require_key_mcp_access_defined: empty key gets nothing", settings: "  require_key_mcp_access_defined: true\n",
			team: `{"mcp_servers":["c"]}`, key: `{}`, want: nil},
		{name: "require_key_mcp_access_defined: team is a ceiling", settings: "  require_key_mcp_access_defined: true\n",
			team: `{"mcp_servers":["c"]}`, key: `{"mcp_servers":["b","c"]}`, want: []string{"c"}},
		{name: "organisation is a ceiling over the key", org: `{"mcp_servers":["b"]}`, team: `{}`, key: `{"mcp_servers":["a","b"]}`, want: []string{"b"}},
		{name: "organisation is a ceiling over the team", org: `{"mcp_servers":["a"]}`, team: `{"mcp_servers":["a","b"]}`, key: `{}`, want: []string{"a"}},
		{name: "user level restricts", user: `{"mcp_servers":["c"]}`, key: `{}`, want: []string{"c"}},
		{name: "end user level restricts", endUser: `{"mcp_servers":["c"]}`, key: `{"mcp_servers":["a","c"]}`, want: []string{"c"}},
		{name: "require_end_user_mcp_access_defined: end user without lists gets nothing",
			settings: "  require_end_user_mcp_access_defined: true\n", endUser: `{}`, key: `{}`, want: nil},
		{name: "no-mcp-servers on the team overrides the key", team: `{"mcp_servers":["no-mcp-servers"]}`, key: `{"mcp_servers":["a"]}`, want: nil},
		{name: "no-mcp-servers on the key hides allow_all_keys too", allowAllC: true, key: `{"mcp_servers":["no-mcp-servers"]}`, want: nil},
		{name: "all-proxy-mcpservers on the team, key lists one", team: `{"mcp_servers":["all-proxy-mcpservers"]}`, key: `{"mcp_servers":["b"]}`, want: []string{"b"}},
		{name: "team access group grants its servers", team: `{"mcp_access_groups":["g"]}`, key: `{}`, want: []string{"a", "b"}},
		{name: "key access group intersected with team servers", team: `{"mcp_servers":["b","c"]}`, key: `{"mcp_access_groups":["g"]}`, want: []string{"b"}},
		{name: "allow_all_keys server visible despite disjoint lists", allowAllC: true, team: `{"mcp_servers":["b"]}`, key: `{"mcp_servers":["a"]}`, want: []string{"c"}},
		{name: "mcp_allow_all_keys_respects_mcp_scope: scoped key does not get it", allowAllC: true,
			settings: "  mcp_allow_all_keys_respects_mcp_scope: true\n", key: `{"mcp_servers":["a"]}`, want: []string{"a"}},
		{name: "#21954: team tool permissions never grant a server",
			team: `{"mcp_servers":["a"],"mcp_tool_permissions":{"c":["` + simple + `"]}}`, key: `{}`, want: []string{"a"}},
		{name: "#33397: key tool permissions for a server the team does not grant",
			team: `{"mcp_servers":["a"]}`, key: `{"mcp_tool_permissions":{"b":["` + simple + `"]}}`, want: []string{"a"}},
		{name: "team tool permissions restrict tools on the key's servers",
			team: `{"mcp_tool_permissions":{"a":["test_input_required_result_elicitation"]}}`, key: `{"mcp_servers":["a","b"]}`,
			want: []string{"a", "b"}, denied: []string{"a-" + simple}},
		{name: "blocked_tools on the organisation, prefixed", org: `{"blocked_tools":["b-` + simple + `"]}`, team: `{}`, key: `{}`,
			want: []string{"a", "b", "c"}, denied: []string{"b-" + simple}},
		{name: "blocked_tools on the key, bare", key: `{"blocked_tools":["` + simple + `"]}`,
			want: []string{"a", "b", "c"}, denied: []string{"a-" + simple, "b-" + simple, "c-" + simple}},
	}
}

// TestPermissionTable runs every rule through listing, calling, reading a resource,
// subscribing to it and resuming a multi-round-trip call, with keys minted through the
// management API and levels created through it.
func TestPermissionTable(t *testing.T) {
	forEachStore(t, func(t *testing.T, st storeBackend) {
		fx := testpeers.StartGoFixtureHTTP(t, true)
		for _, row := range permissionRows() {
			t.Run(row.name, func(t *testing.T) {
				t.Parallel()
				gw, key, endUser := permissionGateway(t, st, fx, row)
				checkPermissionRow(t, gw, key, endUser, row)
			})
		}
	})
}

// permissionGateway starts a gateway with a store for row, creates its levels and mints its key.
func permissionGateway(t *testing.T, st storeBackend, fx string, row permRow) (gw, key, endUser string) {
	t.Helper()
	allowAll := ""
	if row.allowAllC {
		allowAll = ", allow_all_keys: true"
	}
	g := startGatewayWithStoreEnv(t, st, fmt.Sprintf(`
general_settings:
  master_key: %[1]s
%[3]smcp_servers:
  a: {url: %[2]s, access_groups: [g], allow_elicitation: true}
  b: {url: %[2]s, access_groups: [g], allow_elicitation: true}
  c: {url: %[2]s, allow_elicitation: true%[4]s}
`, testKey, fx, row.settings, allowAll), map[string]string{"LITELLM_SALT_KEY": "permission-table-salt-0123456789"})
	gw = g.url
	create := func(path, body string) {
		t.Helper()
		if status, m := manage(t, http.MethodPost, gw+path, testKey, body); status != 200 {
			t.Fatalf("%s %s = %d %v", path, body, status, m)
		}
	}
	keyBody := `"object_permission":` + orEmpty(row.key)
	if row.org != "" {
		create("/organization/new", `{"organization_id":"o","organization_alias":"o","object_permission":`+row.org+`}`)
	}
	if row.team != "" {
		org := ""
		if row.org != "" {
			org = `"organization_id":"o",`
		}
		create("/team/new", `{"team_id":"t",`+org+`"object_permission":`+row.team+`}`)
		keyBody += `,"team_id":"t"`
	} else if row.org != "" {
		keyBody += `,"organization_id":"o"`
	}
	if row.user != "" {
		create("/user/new", `{"user_id":"u","user_role":"internal_user","object_permission":`+row.user+`}`)
		keyBody += `,"user_id":"u"`
	}
	if row.endUser != "" {
		create("/customer/new", `{"user_id":"e","object_permission":`+row.endUser+`}`)
		endUser = "e"
	}
	return gw, generateKey(t, gw, "{"+keyBody+"}"), endUser
}

func orEmpty(s string) string {
	if s == "" {
		return "{}"
	}
	return s
}

// checkPermissionRow checks one row on every path: listing, calling, resource read, resource
// subscription and a multi-round-trip call resumed.
func checkPermissionRow(t *testing.T, gw, key, endUser string, row permRow) {
	t.Helper()
	as := func(method, name string) map[string]string {
		h := modernAs(key, method, name)
		if endUser != "" {
			h["X-Litellm-End-User-Id"] = endUser
		}
		return h
	}
	status, _, body := rpc(t, gw+"/mcp", as("tools/list", ""), `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{`+modernMeta+`}}`)
	if got := serversOf(body); status != 200 || !slices.Equal(got, row.want) {
		t.Fatalf("tools/list: %d servers %v, want %v", status, got, row.want)
	}
	for _, s := range []string{"a", "b", "c"} {
		visible := slices.Contains(row.want, s)
		tool := s + "-test_simple_text"
		allowed := visible && !slices.Contains(row.denied, tool)
		if listed := slices.Contains(toolsOf(body), tool); listed != allowed {
			t.Errorf("%s listed = %v, want %v", tool, listed, allowed)
		}
		status, _, res := rpc(t, gw+"/mcp", as("tools/call", tool), callBody(tool, `{}`, modernMeta, ""))
		if ok := status == 200 && strings.Contains(fmt.Sprint(resultOf(res)["content"]), "simple text"); ok != allowed {
			t.Errorf("tools/call %s: %d %v, want allowed = %v", tool, status, res, allowed)
		}
		read := `{"jsonrpc":"2.0","id":2,"method":"resources/read","params":{"uri":"test://static-text",` + modernMeta + `}}`
		status, _, res = rpc(t, gw+"/"+s+"/mcp", as("resources/read", "test://static-text"), read)
		if ok := status == 200 && resultOf(res)["contents"] != nil; ok != visible {
			t.Errorf("resources/read on /%s/mcp: %d %v, want allowed = %v", s, status, res, visible)
		}
		if acked := subscribedTo(t, gw+"/"+s+"/mcp", as("subscriptions/listen", "")); acked != visible {
			t.Errorf("subscriptions/listen on /%s/mcp acknowledged the resource = %v, want %v", s, acked, visible)
		}
		elicit := s + "-test_input_required_result_elicitation"
		if resumed := resume(t, gw, as("tools/call", elicit), elicit); resumed != visible {
			t.Errorf("%s resumed = %v, want %v", elicit, resumed, visible)
		}
	}
}

// subscribedTo opens a listen for test://static-text and reports whether its acknowledgement
// keeps the resource.
func subscribedTo(t *testing.T, url string, hdr map[string]string) bool {
	t.Helper()
	_, events := listenWith(t, url, hdr, `{"resourceSubscriptions":["test://static-text"]}`)
	ack := nextEvent(events, 10*time.Second)
	return strings.Contains(ack, "notifications/subscriptions/acknowledged") && strings.Contains(ack, "test://static-text")
}

// resume calls tool, which asks for input, and resumes it with the answer; true when the
// resumed call completes.
func resume(t *testing.T, gw string, hdr map[string]string, tool string) bool {
	t.Helper()
	_, _, body := rpc(t, gw+"/mcp", hdr, callBody(tool, `{}`, elicitMeta, ""))
	tok, _ := resultOf(body)["requestState"].(string)
	if tok == "" {
		return false
	}
	extra := `,"requestState":"` + tok + `","inputResponses":{"user_name":{"action":"accept","content":{"name":"Ada"}}}`
	status, _, body := rpc(t, gw+"/mcp", hdr, callBody(tool, `{}`, elicitMeta, extra))
	return status == 200 && strings.Contains(fmt.Sprint(resultOf(body)["content"]), "Hello, Ada!")
}

// TestPermissionChangeReachesResumesAndListens: authority is re-checked on every request, so
// narrowing a key's team takes effect on a continuation minted before the change and on a
// listen opened before it.
func TestPermissionChangeReachesResumesAndListens(t *testing.T) {
	forEachStore(t, func(t *testing.T, st storeBackend) {
		fx := testpeers.StartGoFixtureHTTP(t, true)
		gw, key, _ := permissionGateway(t, st, fx, permRow{team: `{"mcp_servers":["a","b"]}`, key: `{}`})
		const tool = "a-test_input_required_result_elicitation"
		_, _, body := rpc(t, gw+"/mcp", modernAs(key, "tools/call", tool), callBody(tool, `{}`, elicitMeta, ""))
		tok, _ := resultOf(body)["requestState"].(string)
		if tok == "" {
			t.Fatalf("first call: %v", body)
		}
		_, events := listenWith(t, gw+"/a/mcp", modernAs(key, "subscriptions/listen", ""), `{"toolsListChanged":true}`)
		if ack := nextEvent(events, 10*time.Second); !strings.Contains(ack, "toolsListChanged") {
			t.Fatalf("ack = %q", ack)
		}
		if status, m := manage(t, http.MethodPost, gw+"/team/update", testKey, `{"team_id":"t","object_permission":{"mcp_servers":["b"]}}`); status != 200 {
			t.Fatalf("/team/update = %d %v", status, m)
		}
		extra := `,"requestState":"` + tok + `","inputResponses":{"user_name":{"action":"accept","content":{"name":"Ada"}}}`
		_, _, body = rpc(t, gw+"/mcp", modernAs(key, "tools/call", tool), callBody(tool, `{}`, elicitMeta, extra))
		if strings.Contains(fmt.Sprint(resultOf(body)["content"]), "Hello, Ada!") {
			t.Fatalf("a continuation resumed after its server was taken away: %v", body)
		}
		// An upstream change on a makes the listen re-check its caller, who may no longer see a.
		trigger := "a-test_trigger_tool_change"
		if status, _, body := rpc(t, gw+"/mcp", modernHeaders("tools/call", trigger), callBody(trigger, `{}`, modernMeta, "")); status != 200 {
			t.Fatalf("trigger: %d %v", status, body)
		}
		deadline := time.After(15 * time.Second)
		for {
			select {
			case ev, open := <-events:
				if !open {
					return
				}
				if strings.Contains(ev, "list_changed") {
					t.Fatalf("a change on a server the key may no longer see was delivered: %s", ev)
				}
			case <-deadline:
				t.Fatal("the listen did not end after the key's team lost its server")
			}
		}
	})
}
