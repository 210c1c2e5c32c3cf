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
	lookup := func(_ context.Context, h string) (StoredKey, bool, error) {
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
		Keys: func(context.Context, string) (StoredKey, bool, error) { called = true; return StoredKey{}, true, nil }})
	if err != nil {
		t.Fatal(err)
	}
	_, err = a.Authenticate(context.Background(), request(map[string]string{"Authorization": "Bearer sk-any"}), "tools/list")
	if authErr(t, err).Status != 503 || called {
		t.Fatalf("err = %v, store called = %v: the (unreachable) webhook must decide", err, called)
	}
}
