package store

import (
	"context"
	"errors"
	"testing"
)

func TestUpdateChangesOnlyWhatItIsToldAndChecksTheAlias(t *testing.T) {
	forEachBackend(t, func(t *testing.T, open opener) {
		s := open(t, Options{})
		ctx := context.Background()
		_, a, _ := s.Generate(ctx, NewKey{Alias: "a", UserID: "u", Permission: Permission{MCPServers: []string{"fx"}}})
		_, _, _ = s.Generate(ctx, NewKey{Alias: "b"})
		if _, err := s.CreateTeam(ctx, Team{TeamID: "t"}); err != nil {
			t.Fatal(err)
		}
		got, err := s.Update(ctx, a.Token, func(k *Key) { k.TeamID = "t"; k.Permission.MCPServers = []string{"other"} })
		if err != nil {
			t.Fatal(err)
		}
		if got.Alias != "a" || got.UserID != "u" || got.TeamID != "t" || got.Permission.MCPServers[0] != "other" ||
			got.Token != a.Token || got.KeyName != a.KeyName || !got.CreatedAt.Equal(a.CreatedAt) {
			t.Fatalf("updated: %+v", got)
		}
		if stored, _ := s.Get(ctx, a.Token); stored.TeamID != "t" {
			t.Fatalf("not stored: %+v", stored)
		}
		if _, err := s.Update(ctx, a.Token, func(k *Key) { k.Alias = "b"; k.UserID = "changed" }); !errors.Is(err, ErrDuplicateAlias) {
			t.Fatalf("alias of another key: %v", err)
		}
		if stored, _ := s.Get(ctx, a.Token); stored.UserID != "u" || stored.Alias != "a" {
			t.Fatalf("a failed update wrote: %+v", stored)
		}
		if _, err := s.Update(ctx, a.Token, func(k *Key) { k.Alias = "a" }); err != nil {
			t.Fatalf("keeping its own alias: %v", err)
		}
		if _, err := s.Update(ctx, Hash("sk-none"), func(*Key) {}); !errors.Is(err, ErrNotFound) {
			t.Fatalf("missing key: %v", err)
		}
	})
}

func TestListPagesAndFilters(t *testing.T) {
	forEachBackend(t, func(t *testing.T, open opener) {
		s := open(t, Options{})
		ctx := context.Background()
		var tokens []string
		for i := range 5 {
			user := "alice"
			if i%2 == 1 {
				user = "bob"
			}
			_, k, err := s.Generate(ctx, NewKey{UserID: user})
			if err != nil {
				t.Fatal(err)
			}
			tokens = append(tokens, k.Token)
		}
		keys, total, err := s.List(ctx, ListQuery{Limit: 2, Offset: 2})
		if err != nil || total != 5 || len(keys) != 2 {
			t.Fatalf("page 2: %d keys of %d, %v", len(keys), total, err)
		}
		keys, total, err = s.List(ctx, ListQuery{UserID: "bob", Limit: 10})
		if err != nil || total != 2 || len(keys) != 2 || keys[0].UserID != "bob" || keys[1].UserID != "bob" {
			t.Fatalf("bob's keys: %+v of %d, %v", keys, total, err)
		}
		if keys, total, _ := s.List(ctx, ListQuery{UserID: "carol", Limit: 10}); total != 0 || keys != nil {
			t.Fatalf("carol: %v %d", keys, total)
		}
	})
}
