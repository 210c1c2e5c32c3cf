package identity

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestStoreKeys(t *testing.T) {
	keys := map[string]StoredKey{
		hashOf("sk-good"): {UserID: "u", TeamID: "t", Servers: []string{"fx", ""}, AccessGroups: []string{},
			ToolPermissions: map[string][]string{"fx": {"echo"}, "other": {}}},
		hashOf("sk-blocked"): {Blocked: true},
		hashOf("sk-expired"): {Expires: time.Now().Add(-time.Second)},
		hashOf("sk-later"):   {Expires: time.Now().Add(time.Hour)},
	}
	var asked []string
	lookup := func(_ context.Context, h, _ string) (StoredKey, bool, error) {
		asked = append(asked, h)
		if h == hashOf("sk-broken") {
			return StoredKey{}, false, errors.New("disk on fire")
		}
		k, ok := keys[h]
		return k, ok, nil
	}
	a, err := New(Config{MasterKey: strongKey, Keys: lookup})
	if err != nil {
		t.Fatal(err)
	}
	auth := func(key string) (*Caller, error) {
		return a.Authenticate(context.Background(), request(map[string]string{"Authorization": "Bearer " + key}), "tools/list")
	}
	c, err := auth("sk-good")
	if err != nil {
		t.Fatal(err)
	}
	if c.IsMaster || c.UserID != "u" || c.TeamID != "t" || c.KeyHash != hashOf("sk-good") ||
		!slices.Equal(c.Servers, []string{"fx"}) || c.AccessGroups != nil ||
		len(c.ToolPermissions) != 1 || !slices.Equal(c.ToolPermissions["fx"], []string{"echo"}) {
		t.Fatalf("caller = %+v", c)
	}
	if _, err := auth("sk-later"); err != nil {
		t.Fatalf("a key expiring later: %v", err)
	}
	for key, want := range map[string]string{
		"sk-blocked": "blocked", "sk-expired": "expired", "sk-unknown": "no such key",
	} {
		_, err := auth(key)
		if e := authErr(t, err); e.Status != 401 || !strings.Contains(e.Message, want) {
			t.Errorf("%s: %d %q, want 401 containing %q", key, e.Status, e.Message, want)
		}
	}
	if _, err := auth("sk-broken"); authErr(t, err).Status != 503 {
		t.Errorf("store failure: %v, want 503", err)
	}
	asked = nil
	if c, err := auth(strongKey); err != nil || !c.IsMaster || len(asked) != 0 {
		t.Fatalf("master key: %v %+v, store asked %d times", err, c, len(asked))
	}
}

func TestWebhookDecidesEvenWithAStore(t *testing.T) {
	called := false
	a, err := New(Config{MasterKey: strongKey, CustomAuthURL: "http://127.0.0.1:1/auth", Timeout: time.Second,
		Keys: func(context.Context, string, string) (StoredKey, bool, error) {
			called = true
			return StoredKey{}, true, nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = a.Authenticate(context.Background(), request(map[string]string{"Authorization": "Bearer sk-any"}), "tools/list")
	if authErr(t, err).Status != 503 || called {
		t.Fatalf("err = %v, store called = %v: the (unreachable) webhook must decide", err, called)
	}
}

// TestStoreKeyLevels: the levels the lookup resolved reach the caller (normalised as the key's
// own lists are), the request's end user is passed to the lookup and bound to the caller, and a
// blocked level refuses the key with 403.
func TestStoreKeyLevels(t *testing.T) {
	var endUsers []string
	lookup := func(_ context.Context, h, endUser string) (StoredKey, bool, error) {
		endUsers = append(endUsers, endUser)
		switch h {
		case hashOf("sk-team-blocked"):
			return StoredKey{TeamID: "t", BlockedBy: "team"}, true, nil
		case hashOf("sk-levels"):
			return StoredKey{UserID: "u", TeamID: "t", OrgID: "o", Role: RoleInternalUser, BlockedTools: []string{"", "rm"},
				Grants: []Grant{
					{Level: LevelTeam, Servers: []string{"a", ""}, ToolPermissions: map[string][]string{"a": {"x"}, "b": {}}},
					{Level: LevelOrganization, AccessGroups: []string{}, BlockedTools: []string{"drop"}},
				}}, true, nil
		}
		return StoredKey{}, false, nil
	}
	a, err := New(Config{MasterKey: strongKey, Keys: lookup})
	if err != nil {
		t.Fatal(err)
	}
	r := request(map[string]string{"Authorization": "Bearer sk-levels", "X-Litellm-End-User-Id": "bob"})
	c, err := a.Authenticate(context.Background(), r, "tools/list")
	if err != nil {
		t.Fatal(err)
	}
	want := []Grant{
		{Level: LevelTeam, Servers: []string{"a"}, ToolPermissions: map[string][]string{"a": {"x"}}},
		{Level: LevelOrganization},
	}
	want[1].BlockedTools = []string{"drop"}
	if c.EndUserID != "bob" || c.Role != RoleInternalUser || c.OrgID != "o" || !slices.Equal(c.BlockedTools, []string{"rm"}) ||
		len(c.Grants) != 2 || !grantEqual(c.Grants[0], want[0]) || !grantEqual(c.Grants[1], want[1]) {
		t.Fatalf("caller = %+v", c)
	}
	if !slices.Equal(endUsers, []string{"bob"}) {
		t.Fatalf("end users asked = %q", endUsers)
	}
	if c.Binding() == (&Caller{KeyHash: c.KeyHash, UserID: "u", TeamID: "t", OrgID: "o"}).Binding() {
		t.Fatal("the end user is not part of the binding")
	}
	_, err = a.Authenticate(context.Background(), request(map[string]string{"Authorization": "Bearer sk-team-blocked"}), "tools/list")
	if e := authErr(t, err); e.Status != 403 || !strings.Contains(e.Message, "team is blocked") {
		t.Fatalf("blocked team: %d %q", e.Status, e.Message)
	}
	long := request(map[string]string{"Authorization": "Bearer sk-levels", "X-Litellm-End-User-Id": strings.Repeat("x", 257)})
	if _, err := a.Authenticate(context.Background(), long, "tools/list"); authErr(t, err).Status != 403 {
		t.Fatalf("overlong end user id: %v", err)
	}
}

func grantEqual(a, b Grant) bool {
	if a.Level != b.Level || !slices.Equal(a.Servers, b.Servers) || !slices.Equal(a.AccessGroups, b.AccessGroups) ||
		!slices.Equal(a.BlockedTools, b.BlockedTools) || len(a.ToolPermissions) != len(b.ToolPermissions) {
		return false
	}
	for k, v := range a.ToolPermissions {
		if !slices.Equal(v, b.ToolPermissions[k]) {
			return false
		}
	}
	return true
}
