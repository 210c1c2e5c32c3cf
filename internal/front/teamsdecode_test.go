package front

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/mcpgw/mcpgw/internal/identity"
	"github.com/mcpgw/mcpgw/internal/store"
)

// TestDirectoryDecodersRefuseBadInput: every decoder refuses malformed JSON, a non-object,
// unknown fields (LiteLLM's LLM-only fields included), wrong types and missing required
// fields with a badRequest naming the field.
func TestDirectoryDecodersRefuseBadInput(t *testing.T) {
	decoders := map[string]func([]byte) error{
		"team/new":      func(b []byte) error { _, err := decodeTeamNew(b); return err },
		"team/update":   func(b []byte) error { _, _, err := decodeTeamUpdate(b); return err },
		"member_add":    func(b []byte) error { _, _, err := decodeMemberAdd(b); return err },
		"member_delete": func(b []byte) error { _, _, err := decodeMemberDelete(b); return err },
		"team/delete":   func(b []byte) error { _, err := decodeIDList(b, "team_ids"); return err },
		"org/new":       func(b []byte) error { _, err := decodeOrgNew(b); return err },
		"org/update":    func(b []byte) error { _, _, err := decodeOrgUpdate(b); return err },
		"user/new":      func(b []byte) error { _, err := decodeUserNew(b); return err },
		"user/update":   func(b []byte) error { _, _, err := decodeUserUpdate(b); return err },
		"customer":      func(b []byte) error { _, _, err := decodeEndUser(b); return err },
	}
	tests := []struct {
		decoder, body, param, want string
	}{
		{"team/new", `{"team_alias":`, "", "malformed JSON"},
		{"team/new", `[]`, "", "want a JSON object"},
		{"team/new", `{} {}`, "", "unexpected data"},
		{"team/new", `{"models":["gpt-4"]}`, "models", `unknown field "models"`},
		{"team/new", `{"max_budget":-1}`, "max_budget", `max_budget: want a number ≥ 0`},
		{"team/new", `{"TEAM_ALIAS":"x"}`, "TEAM_ALIAS", "unknown field"},
		{"team/new", `{"team_alias":1}`, "team_alias", "want a string"},
		{"team/new", `{"blocked":"yes"}`, "blocked", "want true or false"},
		{"team/new", `{"rpm_limit":-1}`, "rpm_limit", "non-negative"},
		{"team/new", `{"metadata":[]}`, "metadata", "want a JSON object"},
		{"team/new", `{"object_permission":{"mcp_toolsets":["x"]}}`, "object_permission.mcp_toolsets", "not supported"},
		{"team/new", `{"object_permission":{"mcp_server":["x"]}}`, "mcp_server", "unknown field"},
		{"team/new", `{"members_with_roles":[{"user_id":"a","role":"owner"}]}`, "role", "admin or user"},
		{"team/new", `{"members_with_roles":[{"user_id":"a","role":"user"},{"user_id":"a","role":"admin"}]}`, "members_with_roles", "twice"},
		{"team/new", `{"members_with_roles":[{"user_email":"a@b"}]}`, "user_email", "unknown field"},
		{"team/update", `{"team_alias":"x"}`, "team_id", "team_id: required"},
		{"team/update", `{"team_id":"t","members_with_roles":[]}`, "members_with_roles", "unknown field"},
		{"member_add", `{"team_id":"t"}`, "member", "member: required"},
		{"member_add", `{"team_id":"t","member":{"user_id":"u"}}`, "role", "role: required"},
		{"member_add", `{"team_id":"t","member":[]}`, "member", "1 to"},
		{"member_add", `{"team_id":"t","member":"u"}`, "member", "want a member"},
		{"member_delete", `{"team_id":"t"}`, "user_id", "user_id: required"},
		{"team/delete", `{"team_ids":[]}`, "team_ids", "non-empty"},
		{"team/delete", `{"team_ids":"t"}`, "team_ids", "list of strings"},
		{"team/delete", `{"keys":["t"]}`, "keys", "unknown field"},
		{"org/new", `{}`, "organization_alias", "organization_alias: required"},
		{"org/new", `{"organization_alias":"a","budget_id":"b"}`, "budget_id", "unknown field"},
		{"org/update", `{"organization_alias":"a"}`, "organization_id", "required"},
		{"org/update", `{"organization_id":"o","organization_alias":null}`, "organization_alias", "cannot be cleared"},
		{"user/new", `{"user_role":"admin"}`, "user_role", "want one of"},
		{"user/new", `{"auto_create_key":true}`, "auto_create_key", "/key/generate"},
		{"user/new", `{"teams":[1]}`, "teams", "team id"},
		{"user/new", `{"teams":[{"team_id":"t","user_role":"boss"}]}`, "user_role", "admin or user"},
		{"user/new", `{"teams":["t","t"]}`, "teams", "twice"},
		{"user/new", `{"max_budget":3}`, "max_budget", "unknown field"},
		{"user/update", `{"user_role":"proxy_admin"}`, "user_id", "required"},
		{"user/update", `{"user_id":"u","teams":["t"]}`, "teams", "unknown field"},
		{"user/update", `{"user_id":"u","user_role":null}`, "user_role", "cannot be cleared"},
		{"customer", `{"alias":"a"}`, "user_id", "required"},
		{"customer", `{"user_id":"c","allowed_model_region":"eu"}`, "allowed_model_region", "unknown field"},
		{"customer", `{"user_id":"c","blocked":1}`, "blocked", "true or false"},
	}
	for _, tt := range tests {
		t.Run(tt.decoder+" "+tt.body, func(t *testing.T) {
			err := decoders[tt.decoder]([]byte(tt.body))
			br, ok := err.(*badRequest)
			if !ok || br.param != tt.param || !strings.Contains(br.msg, tt.want) {
				t.Fatalf("= %v (%T), want a badRequest on %q saying %q", err, err, tt.param, tt.want)
			}
		})
	}
}

func TestDirectoryDecodersAccept(t *testing.T) {
	tm, err := decodeTeamNew([]byte(`{"team_id":"t","team_alias":"eng","organization_id":"o","metadata":{"a":1},
		"object_permission":{"mcp_servers":["fx"]},"members_with_roles":[{"user_id":"u","role":"admin"}],"blocked":true,
		"rpm_limit":5,"max_parallel_requests":2,"mcp_rpm_limit":{"fx":1}}`))
	if err != nil || tm.TeamID != "t" || tm.Alias != "eng" || tm.OrganizationID != "o" || string(tm.Metadata) != `{"a":1}` ||
		tm.Permission.MCPServers[0] != "fx" || tm.Members[0] != (store.Membership{UserID: "u", Role: "admin"}) || !tm.Blocked ||
		*tm.RPMLimit != 5 || *tm.MaxParallelRequests != 2 || tm.MCPRPMLimit["fx"] != 1 {
		t.Fatalf("team/new: %+v %v", tm, err)
	}
	id, change, err := decodeTeamUpdate([]byte(`{"team_id":"t","team_alias":null,"blocked":false}`))
	kept := store.Team{Alias: "eng", Blocked: true, OrganizationID: "o"}
	if change(&kept); err != nil || id != "t" || kept.Alias != "" || kept.Blocked || kept.OrganizationID != "o" {
		t.Fatalf("team/update: %+v %v", kept, err)
	}
	if _, ms, err := decodeMemberAdd([]byte(`{"team_id":"t","member":{"user_id":"u","role":"user"}}`)); err != nil || len(ms) != 1 {
		t.Fatalf("member_add single: %v %v", ms, err)
	}
	u, err := decodeUserNew([]byte(`{"user_id":"u","user_email":"u@x","user_role":"proxy_admin_viewer","auto_create_key":false,
		"teams":["a",{"team_id":"b","user_role":"admin"}]}`))
	if err != nil || u.Role != "proxy_admin_viewer" || len(u.Teams) != 2 || u.Teams[0].Role != "user" || u.Teams[1].Role != "admin" {
		t.Fatalf("user/new: %+v %v", u, err)
	}
	if ids, err := decodeIDList([]byte(`{"user_ids":["b","a","b",""]}`), "user_ids"); err != nil || len(ids) != 2 {
		t.Fatalf("ids: %v %v", ids, err)
	}
	if _, _, _, err := decodeQuery(url.Values{"page": {"2"}, "size": {"101"}}, []string{"page", "size"}); err == nil {
		t.Fatal("size 101 accepted")
	}
}

const dirTestKey = "sk-directory-test-master-key-0123456789"

// startDirectory serves the key and directory routes over a fresh SQLite store.
func startDirectory(t *testing.T) string {
	t.Helper()
	st, err := store.OpenSQLite(context.Background(), t.TempDir(), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	authn, err := identity.New(identity.Config{MasterKey: dirTestKey})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	k := NewKeys(KeysConfig{Auth: authn, Store: st})
	k.Register(mux)
	k.RegisterDirectory(mux)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv.URL
}

func call(t *testing.T, method, url, body string) (int, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+dirTestKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var m map[string]any
	_ = json.Unmarshal(raw, &m)
	if m == nil {
		m = map[string]any{"raw": string(raw)}
	}
	return resp.StatusCode, m
}

// TestDirectoryRoutesRefuseWithoutWriting: duplicate aliases, foreign ids, a partly missing
// delete and an organisation in use are refused in LiteLLM's error shape, and nothing of the
// refused request is written.
func TestDirectoryRoutesRefuseWithoutWriting(t *testing.T) {
	gw := startDirectory(t)
	if status, m := call(t, "POST", gw+"/organization/new", `{"organization_id":"o1","organization_alias":"acme"}`); status != 200 {
		t.Fatalf("org/new = %d %v", status, m)
	}
	if status, m := call(t, "POST", gw+"/team/new", `{"team_id":"t1","team_alias":"eng","organization_id":"o1"}`); status != 200 {
		t.Fatalf("team/new = %d %v", status, m)
	}
	tests := []struct {
		method, path, body string
		status             int
		param, want        string
	}{
		{"POST", "/team/new", `{"team_alias":"eng"}`, 400, "team_alias", "already in use"},
		{"POST", "/team/new", `{"team_id":"t2","organization_id":"nope"}`, 400, "organization_id", "organization_id 'nope' does not exist"},
		{"POST", "/key/generate", `{"key_alias":"k","team_id":"nope"}`, 400, "team_id", "team_id 'nope' does not exist"},
		{"POST", "/key/generate", `{"key_alias":"k","organization_id":"nope"}`, 400, "organization_id", "does not exist"},
		{"POST", "/organization/new", `{"organization_alias":"acme"}`, 400, "organization_alias", "already in use"},
		{"PATCH", "/organization/update", `{"organization_id":"nope","organization_alias":"x"}`, 404, "organization_id", "does not exist"},
		{"POST", "/team/delete", `{"team_ids":["t1","nope"]}`, 404, "team_ids", "'nope' does not exist"},
		{"DELETE", "/organization/delete", `{"organization_ids":["o1"]}`, 409, "organization_ids", "still has teams"},
		{"POST", "/user/new", `{"user_id":"u1","teams":["t1","nope"]}`, 400, "team_id", "team_id 'nope' does not exist"},
		{"POST", "/team/member_add", `{"team_id":"nope","member":{"user_id":"u9","role":"user"}}`, 404, "team_id", "does not exist"},
		{"POST", "/user/delete", `{"user_ids":["nope"]}`, 404, "user_ids", "does not exist"},
		{"POST", "/customer/update", `{"user_id":"nope","blocked":true}`, 404, "user_id", "does not exist"},
		{"GET", "/team/info", ``, 400, "team_id", "required"},
		{"GET", "/team/info?team_id=t1&x=1", ``, 400, "x", "unknown query parameter"},
		{"GET", "/customer/info?end_user_id=nope", ``, 404, "end_user_id", "does not exist"},
		{"PUT", "/team/new", `{}`, 405, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.path, func(t *testing.T) {
			status, m := call(t, tt.method, gw+tt.path, tt.body)
			e, _ := m["error"].(map[string]any)
			if status != tt.status || (tt.want != "" && (e["param"] != tt.param || e["code"] != fmt.Sprint(tt.status) ||
				!strings.Contains(fmt.Sprint(e["message"]), tt.want))) {
				t.Fatalf("= %d %v, want %d on %q saying %q", status, m, tt.status, tt.param, tt.want)
			}
		})
	}
	// Nothing refused above was written.
	if status, m := call(t, "GET", gw+"/team/info?team_id=t1", ""); status != 200 || m["team_info"].(map[string]any)["team_alias"] != "eng" {
		t.Fatalf("t1 after the refusals: %d %v", status, m)
	}
	for _, path := range []string{"/user/info?user_id=u1", "/user/info?user_id=u9", "/team/info?team_id=t2"} {
		if status, _ := call(t, "GET", gw+path, ""); status != 404 {
			t.Errorf("%s = %d: a refused write was kept", path, status)
		}
	}
	if status, m := call(t, "GET", gw+"/key/list", ""); status != 200 || m["total_count"] != 0.0 {
		t.Fatalf("a refused key was written: %v", m)
	}
}

func FuzzDecodeTeam(f *testing.F) {
	for _, s := range []string{`{}`, `{"team_id":"t","team_alias":"a","members_with_roles":[{"user_id":"u","role":"admin"}]}`,
		`{"team_id":"t","blocked":true,"object_permission":{"mcp_tool_permissions":{"s":["x"]}}}`,
		`{"team_id":"t","member":{"user_id":"u","role":"user"}}`, `{"team_id":"t","member":[{"user_id":"u","role":"user"}]}`,
		`{"team_id":"t","user_id":"u"}`, `{"team_ids":["a","a"]}`, `[1]`, `{"a":1}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		if tm, err := decodeTeamNew(body); err == nil {
			if len(tm.Alias) > maxIDLen || len(tm.TeamID) > maxIDLen || len(tm.Members) > maxListLen {
				t.Fatalf("out of bounds: %+v", tm)
			}
			for _, m := range tm.Members {
				if m.UserID == "" || (m.Role != store.TeamRoleAdmin && m.Role != store.TeamRoleUser) {
					t.Fatalf("bad member %+v", m)
				}
			}
		} else {
			checkDecoded(t, err)
		}
		if id, change, err := decodeTeamUpdate(body); err == nil {
			var tm store.Team
			change(&tm)
			if id == "" || len(tm.Alias) > maxIDLen {
				t.Fatalf("update: %q %+v", id, tm)
			}
		} else {
			checkDecoded(t, err)
		}
		if id, ms, err := decodeMemberAdd(body); err == nil && (id == "" || len(ms) == 0) {
			t.Fatalf("member_add: %q %v", id, ms)
		} else {
			checkDecoded(t, err)
		}
		if id, u, err := decodeMemberDelete(body); err == nil && (id == "" || u == "") {
			t.Fatalf("member_delete: %q %q", id, u)
		} else {
			checkDecoded(t, err)
		}
		if ids, err := decodeIDList(body, "team_ids"); err == nil && (len(ids) == 0 || len(ids) > maxListLen) {
			t.Fatalf("ids %v", ids)
		} else {
			checkDecoded(t, err)
		}
	})
}

func FuzzDecodeOrg(f *testing.F) {
	for _, s := range []string{`{"organization_alias":"a"}`, `{"organization_id":"o","metadata":{"a":[1]}}`,
		`{"organization_id":"o","organization_alias":null}`, `{}`, `{"organization_alias":1}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		if o, err := decodeOrgNew(body); err == nil {
			if o.Alias == "" || len(o.Alias) > maxIDLen || (o.Metadata != nil && !json.Valid(o.Metadata)) {
				t.Fatalf("org/new: %+v", o)
			}
		} else {
			checkDecoded(t, err)
		}
		if id, change, err := decodeOrgUpdate(body); err == nil {
			o := store.Organization{Alias: "kept"}
			change(&o)
			if id == "" || o.Alias == "" {
				t.Fatalf("org/update: %q %+v", id, o)
			}
		} else {
			checkDecoded(t, err)
		}
	})
}

func FuzzDecodeUser(f *testing.F) {
	for _, s := range []string{`{"user_id":"u","user_role":"internal_user","teams":["t",{"team_id":"x","user_role":"admin"}]}`,
		`{"user_id":"u","user_email":"a@b","auto_create_key":false}`, `{"user_id":"u","user_role":null}`, `{"teams":[{}]}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		if u, err := decodeUserNew(body); err == nil {
			if len(u.Teams) > maxListLen || (u.Role != "" && !slicesContains(store.UserRoles, u.Role)) {
				t.Fatalf("user/new: %+v", u)
			}
		} else {
			checkDecoded(t, err)
		}
		if id, change, err := decodeUserUpdate(body); err == nil {
			u := store.User{Role: store.UserRoleInternalUser}
			change(&u)
			if id == "" || !slicesContains(store.UserRoles, u.Role) {
				t.Fatalf("user/update: %q %+v", id, u)
			}
		} else {
			checkDecoded(t, err)
		}
	})
}

func FuzzDecodeEndUser(f *testing.F) {
	for _, s := range []string{`{"user_id":"c","alias":"a","blocked":true}`, `{"user_id":"c","object_permission":{"mcp_servers":["x"]}}`,
		`{"user_id":""}`, `{"user_id":"c","blocked":null}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		e, change, err := decodeEndUser(body)
		checkDecoded(t, err)
		if err == nil {
			var c store.EndUser
			change(&c)
			if e.UserID == "" || len(e.UserID) > maxIDLen || len(c.Alias) > maxIDLen {
				t.Fatalf("customer: %+v", e)
			}
		}
	})
}

func slicesContains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
