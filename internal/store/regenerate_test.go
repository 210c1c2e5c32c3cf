package store

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"testing"
	"time"
)

func TestRegenerateKeepsTheKeyAndRetiresTheOldSecret(t *testing.T) {
	forEachBackend(t, func(t *testing.T, open opener) {
		s := open(t, Options{CacheTTL: time.Hour})
		ctx := context.Background()
		rpm := int64(7)
		exp := time.Now().Add(time.Hour)
		withRefs(t, s, []string{"o"}, []string{"t"})
		oldSecret, before, err := s.Generate(ctx, NewKey{Alias: "ci", UserID: "u", TeamID: "t", OrganizationID: "o",
			Metadata: json.RawMessage(`{"app":"x"}`), Permission: Permission{MCPServers: []string{"fx"}},
			Expires: &exp, RPMLimit: &rpm, MCPRPMLimit: map[string]int64{"fx": 3}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.SetBlocked(ctx, before.Token, true); err != nil {
			t.Fatal(err)
		}
		// The old secret's lookup is cached for an hour: Regenerate must forget it.
		if _, found, err := s.Lookup(ctx, Hash(oldSecret)); err != nil || !found {
			t.Fatalf("lookup before: %v %v", found, err)
		}
		secret, after, err := s.Regenerate(ctx, before.Token, nil)
		if err != nil {
			t.Fatal(err)
		}
		if secret == oldSecret || after.Token != Hash(secret) || after.KeyName != "sk-..."+secret[len(secret)-4:] {
			t.Fatalf("secret %q token %q key_name %q", secret, after.Token, after.KeyName)
		}
		if _, found, err := s.Lookup(ctx, Hash(oldSecret)); err != nil || found {
			t.Fatalf("the old secret still authenticates: found=%v err=%v", found, err)
		}
		if _, err := s.Get(ctx, before.Token); !errors.Is(err, ErrNotFound) {
			t.Fatalf("Get(old token) = %v, want ErrNotFound", err)
		}
		got, found, err := s.Lookup(ctx, after.Token)
		if err != nil || !found {
			t.Fatalf("the new secret is not found: %v %v", found, err)
		}
		want := before
		want.Token, want.KeyName, want.Blocked, want.UpdatedAt = after.Token, after.KeyName, true, got.UpdatedAt
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("regenerated key changed:\n got %+v\nwant %+v", got, want)
		}
		if !got.Blocked {
			t.Fatal("a blocked key was unblocked by regenerating it")
		}
	})
}

func TestRegenerateAppliesChangesOrWritesNothing(t *testing.T) {
	forEachBackend(t, func(t *testing.T, open opener) {
		s := open(t, Options{})
		withRefs(t, s, nil, []string{"t2"})
		ctx := context.Background()
		oldSecret, k, _ := s.Generate(ctx, NewKey{Alias: "a"})
		if _, _, err := s.Generate(ctx, NewKey{Alias: "taken"}); err != nil {
			t.Fatal(err)
		}
		_, _, err := s.Regenerate(ctx, k.Token, func(k *Key) { k.Alias = "taken" })
		if !errors.Is(err, ErrDuplicateAlias) {
			t.Fatalf("err = %v, want ErrDuplicateAlias", err)
		}
		if got, err := s.Get(ctx, Hash(oldSecret)); err != nil || got.Alias != "a" {
			t.Fatalf("a failed regenerate changed the key: %+v %v", got, err)
		}
		secret, got, err := s.Regenerate(ctx, k.Token, func(k *Key) { k.Alias, k.TeamID = "b", "t2" })
		if err != nil || got.Alias != "b" || got.TeamID != "t2" || got.Token != Hash(secret) {
			t.Fatalf("regenerate with changes: %+v %v", got, err)
		}
		if _, _, err := s.Regenerate(ctx, k.Token, nil); !errors.Is(err, ErrNotFound) {
			t.Fatalf("regenerating the retired token: %v, want ErrNotFound", err)
		}
		if _, _, err := s.Regenerate(ctx, Hash("sk-never"), nil); !errors.Is(err, ErrNotFound) {
			t.Fatalf("regenerating a missing key: %v, want ErrNotFound", err)
		}
		var n int
		if err := s.db.QueryRow(`SELECT COUNT(*) FROM keys`).Scan(&n); err != nil || n != 2 {
			t.Fatalf("rows = %d (%v), want 2", n, err)
		}
	})
}
