package app

import (
	"context"
	"slices"
	"testing"

	"github.com/mcpgw/mcpgw/internal/identity"
	"github.com/mcpgw/mcpgw/internal/store"
)

// TestKeyLookupResolvesLevels: a store key's caller carries its team, user, organisations
// (the key's and its team's) and the request's end user as levels, with the user's role; a
// blocked team or end user is named; an end user not in the store is a level without lists.
func TestKeyLookupResolvesLevels(t *testing.T) {
	ctx := context.Background()
	st, err := store.OpenSQLite(ctx, t.TempDir(), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	perm := func(servers ...string) store.Permission { return store.Permission{MCPServers: servers} }
	mustDo(t, func() error {
		_, err := st.CreateOrganization(ctx, store.Organization{OrganizationID: "o1", Alias: "o1", Permission: perm("a", "b")})
		return err
	})
	mustDo(t, func() error {
		_, err := st.CreateOrganization(ctx, store.Organization{OrganizationID: "o2", Alias: "o2", Permission: perm("b")})
		return err
	})
	mustDo(t, func() error {
		_, err := st.CreateTeam(ctx, store.Team{TeamID: "t", OrganizationID: "o1", Permission: perm("a")})
		return err
	})
	mustDo(t, func() error {
		_, err := st.CreateUser(ctx, store.User{UserID: "u", Role: store.UserRoleProxyAdminViewer, Permission: perm("c")})
		return err
	})
	mustDo(t, func() error {
		_, err := st.CreateEndUser(ctx, store.EndUser{UserID: "bob", Permission: perm("d")})
		return err
	})
	mustDo(t, func() error { _, err := st.CreateEndUser(ctx, store.EndUser{UserID: "eve", Blocked: true}); return err })
	secret, _, err := st.Generate(ctx, store.NewKey{TeamID: "t", UserID: "u", OrganizationID: "o2",
		Permission: store.Permission{MCPServers: []string{"a"}, BlockedTools: []string{"rm"}}})
	if err != nil {
		t.Fatal(err)
	}
	lookup := keyLookup(st)
	k, found, err := lookup(ctx, store.Hash(secret), "bob")
	if err != nil || !found {
		t.Fatal(found, err)
	}
	var levels []string
	for _, g := range k.Grants {
		levels = append(levels, g.Level+":"+g.Servers[0])
	}
	want := []string{"team:a", "user:c", "organization:b", "organization:a", "end_user:d"}
	if !slices.Equal(levels, want) || k.Role != identity.RoleProxyAdminViewer || k.BlockedBy != "" ||
		!slices.Equal(k.BlockedTools, []string{"rm"}) {
		t.Fatalf("levels %v (want %v), role %q, blocked by %q, blocked tools %v", levels, want, k.Role, k.BlockedBy, k.BlockedTools)
	}
	k, _, _ = lookup(ctx, store.Hash(secret), "eve")
	if k.BlockedBy != "end user" {
		t.Fatalf("blocked end user: %q", k.BlockedBy)
	}
	k, _, _ = lookup(ctx, store.Hash(secret), "stranger")
	if last := k.Grants[len(k.Grants)-1]; last.Level != identity.LevelEndUser || last.Servers != nil {
		t.Fatalf("unknown end user: %+v", last)
	}
	if _, err := st.UpdateTeam(ctx, "t", func(t *store.Team) { t.Blocked = true }); err != nil {
		t.Fatal(err)
	}
	if k, _, _ = lookup(ctx, store.Hash(secret), ""); k.BlockedBy != "team" || k.Grants[len(k.Grants)-1].Level == identity.LevelEndUser {
		t.Fatalf("blocked team: %q %+v", k.BlockedBy, k.Grants)
	}
	if _, found, err := lookup(ctx, store.Hash("sk-unknown"), ""); found || err != nil {
		t.Fatal(found, err)
	}
}

func mustDo(t *testing.T, f func() error) {
	t.Helper()
	if err := f(); err != nil {
		t.Fatal(err)
	}
}
