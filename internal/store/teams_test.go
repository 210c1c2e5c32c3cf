package store

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"
)

// refusedWith asserts err is a RefError matching base and naming field.
func refusedWith(t *testing.T, err, base error, field string) {
	t.Helper()
	var re *RefError
	if !errors.As(err, &re) || !errors.Is(err, base) || re.Field != field || re.Msg == "" {
		t.Fatalf("error %v (%T), want a RefError %v on %s", err, err, base, field)
	}
}

func TestTeamsOrgsReferences(t *testing.T) {
	forEachBackend(t, func(t *testing.T, open opener) {
		s := open(t, Options{})
		ctx := context.Background()
		org, err := s.CreateOrganization(ctx, Organization{Alias: "acme", Permission: Permission{MCPServers: []string{"fx"}}})
		if err != nil || len(org.OrganizationID) != 36 || string(org.Metadata) != "{}" {
			t.Fatalf("create org: %+v %v", org, err)
		}
		_, err = s.CreateOrganization(ctx, Organization{Alias: "acme"})
		refusedWith(t, err, ErrDuplicateAlias, "organization_alias")
		_, err = s.CreateTeam(ctx, Team{TeamID: "t1", OrganizationID: "nope"})
		refusedWith(t, err, ErrForeign, "organization_id")
		if _, err := s.GetTeam(ctx, "t1"); !errors.Is(err, ErrNotFound) {
			t.Fatalf("a refused team was written: %v", err)
		}
		team, err := s.CreateTeam(ctx, Team{TeamID: "t1", Alias: "eng", OrganizationID: org.OrganizationID,
			Members: []Membership{{UserID: "alice", Role: TeamRoleAdmin}, {UserID: "bob", Role: TeamRoleUser}}})
		if err != nil || len(team.Members) != 2 || team.Members[0] != (Membership{"t1", "alice", "admin"}) {
			t.Fatalf("create team: %+v %v", team, err)
		}
		if u, err := s.GetUser(ctx, "alice"); err != nil || u.Role != UserRoleInternalUser || len(u.Teams) != 1 {
			t.Fatalf("a member is not created as a user: %+v %v", u, err)
		}
		_, err = s.CreateTeam(ctx, Team{TeamID: "t2", Alias: "eng"})
		refusedWith(t, err, ErrDuplicateAlias, "team_alias")
		_, err = s.CreateTeam(ctx, Team{TeamID: "t1"})
		refusedWith(t, err, ErrExists, "team_id")
		_, err = s.CreateTeam(ctx, Team{TeamID: "t3", Members: []Membership{{UserID: "carol", Role: "user"}, {UserID: "dan", Role: "owner"}}})
		refusedWith(t, err, ErrForeign, "role")
		if _, err := s.GetUser(ctx, "carol"); !errors.Is(err, ErrNotFound) {
			t.Fatalf("a refused team created its first member: %v", err)
		}

		// Keys refer to existing teams and organisations only.
		_, _, err = s.Generate(ctx, NewKey{TeamID: "nope"})
		refusedWith(t, err, ErrForeign, "team_id")
		_, _, err = s.Generate(ctx, NewKey{OrganizationID: "nope"})
		refusedWith(t, err, ErrForeign, "organization_id")
		_, k, err := s.Generate(ctx, NewKey{TeamID: "t1", UserID: "bob"})
		if err != nil {
			t.Fatal(err)
		}
		_, err = s.Update(ctx, k.Token, func(k *Key) { k.TeamID = "nope"; k.Alias = "x" })
		refusedWith(t, err, ErrForeign, "team_id")
		if got, _ := s.Get(ctx, k.Token); got.TeamID != "t1" || got.Alias != "" {
			t.Fatalf("a refused update wrote: %+v", got)
		}

		// An organisation still in use is not deleted.
		err = s.DeleteOrganizations(ctx, []string{org.OrganizationID})
		refusedWith(t, err, ErrInUse, "organization_ids")
		if _, err := s.GetOrganization(ctx, org.OrganizationID); err != nil {
			t.Fatalf("a refused delete deleted: %v", err)
		}
		// Updating: alias, organisation, members kept.
		_, err = s.UpdateTeam(ctx, "t1", func(t *Team) { t.OrganizationID = "nope"; t.Alias = "x" })
		refusedWith(t, err, ErrForeign, "organization_id")
		got, err := s.UpdateTeam(ctx, "t1", func(t *Team) { t.OrganizationID = ""; t.Blocked = true; t.Members = nil })
		if err != nil || got.Alias != "eng" || !got.Blocked || len(got.Members) != 2 || got.OrganizationID != "" {
			t.Fatalf("update team: %+v %v", got, err)
		}
		_, err = s.UpdateTeam(ctx, "nope", func(*Team) {})
		refusedWith(t, err, ErrNotFound, "team_id")
		if teams, err := s.ListTeams(ctx, TeamQuery{UserID: "alice", Limit: 10}); err != nil || len(teams) != 1 || teams[0].TeamID != "t1" {
			t.Fatalf("list alice's teams: %+v %v", teams, err)
		}
		if teams, err := s.ListTeams(ctx, TeamQuery{OrganizationID: org.OrganizationID, Limit: 10}); err != nil || len(teams) != 0 {
			t.Fatalf("list the org's teams: %+v %v", teams, err)
		}

		// Deleting a team deletes its keys and memberships; all or none.
		err = s.DeleteTeams(ctx, []string{"t1", "nope"})
		refusedWith(t, err, ErrNotFound, "team_ids")
		if _, err := s.Get(ctx, k.Token); err != nil {
			t.Fatalf("a refused team delete deleted a key: %v", err)
		}
		if err := s.DeleteTeams(ctx, []string{"t1"}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Get(ctx, k.Token); !errors.Is(err, ErrNotFound) {
			t.Fatalf("the team's key outlived it: %v", err)
		}
		if u, _ := s.GetUser(ctx, "alice"); len(u.Teams) != 0 {
			t.Fatalf("a membership outlived its team: %+v", u)
		}
		if err := s.DeleteOrganizations(ctx, []string{org.OrganizationID}); err != nil {
			t.Fatalf("delete an unused org: %v", err)
		}
	})
}

func TestUsersAndMembers(t *testing.T) {
	forEachBackend(t, func(t *testing.T, open opener) {
		s := open(t, Options{})
		ctx := context.Background()
		if _, err := s.CreateTeam(ctx, Team{TeamID: "t1"}); err != nil {
			t.Fatal(err)
		}
		_, err := s.CreateUser(ctx, User{UserID: "u1", Teams: []Membership{{TeamID: "nope", Role: "user"}}})
		refusedWith(t, err, ErrForeign, "team_id")
		_, err = s.CreateUser(ctx, User{UserID: "u1", Role: "god"})
		refusedWith(t, err, ErrForeign, "user_role")
		u, err := s.CreateUser(ctx, User{UserID: "u1", Email: "u1@example.com", Role: UserRoleProxyAdminViewer,
			Teams: []Membership{{TeamID: "t1", Role: "admin"}}})
		if err != nil || len(u.Teams) != 1 || u.Teams[0].Role != "admin" {
			t.Fatalf("create user: %+v %v", u, err)
		}
		_, err = s.CreateUser(ctx, User{UserID: "u1"})
		refusedWith(t, err, ErrExists, "user_id")
		_, err = s.AddTeamMembers(ctx, "t1", []Membership{{UserID: "u2", Role: "user"}, {UserID: "u1", Role: "user"}})
		refusedWith(t, err, ErrExists, "user_id")
		if _, err := s.GetUser(ctx, "u2"); !errors.Is(err, ErrNotFound) {
			t.Fatalf("a refused member_add wrote: %v", err)
		}
		team, err := s.AddTeamMembers(ctx, "t1", []Membership{{UserID: "u2", Role: "user"}})
		if err != nil || len(team.Members) != 2 {
			t.Fatalf("member_add: %+v %v", team, err)
		}
		_, err = s.RemoveTeamMembers(ctx, "t1", []string{"u2", "u3"})
		refusedWith(t, err, ErrNotFound, "user_id")
		if team, err = s.RemoveTeamMembers(ctx, "t1", []string{"u2"}); err != nil || len(team.Members) != 1 {
			t.Fatalf("member_delete: %+v %v", team, err)
		}
		if _, err := s.GetUser(ctx, "u2"); err != nil {
			t.Fatalf("member_delete deleted the user: %v", err)
		}
		got, err := s.UpdateUser(ctx, "u1", func(u *User) { u.Role = UserRoleInternalUser; u.Teams = nil })
		if err != nil || got.Role != UserRoleInternalUser || got.Email != "u1@example.com" || len(got.Teams) != 1 {
			t.Fatalf("update user: %+v %v", got, err)
		}
		_, k, err := s.Generate(ctx, NewKey{UserID: "u1"})
		if err != nil {
			t.Fatal(err)
		}
		refusedWith(t, s.DeleteUsers(ctx, []string{"u1", "nope"}), ErrNotFound, "user_ids")
		if err := s.DeleteUsers(ctx, []string{"u1"}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Get(ctx, k.Token); !errors.Is(err, ErrNotFound) {
			t.Fatalf("the user's key outlived them: %v", err)
		}
		if team, _ := s.GetTeam(ctx, "t1"); len(team.Members) != 0 {
			t.Fatalf("a deleted user is still a member: %+v", team)
		}
		if users, err := s.ListUsers(ctx, "", 0, 10); err != nil || len(users) != 1 || users[0].UserID != "u2" {
			t.Fatalf("list users: %+v %v", users, err)
		}
	})
}

func TestEndUsers(t *testing.T) {
	forEachBackend(t, func(t *testing.T, open opener) {
		s := open(t, Options{})
		ctx := context.Background()
		e, err := s.CreateEndUser(ctx, EndUser{UserID: "c1", Alias: "customer", Permission: Permission{MCPServers: []string{"fx"}}})
		if err != nil || e.Alias != "customer" {
			t.Fatalf("create: %+v %v", e, err)
		}
		_, err = s.CreateEndUser(ctx, EndUser{UserID: "c1"})
		refusedWith(t, err, ErrExists, "user_id")
		if e, err = s.UpdateEndUser(ctx, "c1", func(e *EndUser) { e.Blocked = true }); err != nil || !e.Blocked || e.Alias != "customer" {
			t.Fatalf("update: %+v %v", e, err)
		}
		if list, err := s.ListEndUsers(ctx, 0, 10); err != nil || len(list) != 1 {
			t.Fatalf("list: %+v %v", list, err)
		}
		if _, err := s.CreateEndUser(ctx, EndUser{UserID: "c3"}); err != nil {
			t.Fatal(err)
		}
		refusedWith(t, s.SetEndUsersBlocked(ctx, []string{"c1", "c3", "c2"}, false), ErrNotFound, "user_ids")
		if e, _ := s.GetEndUser(ctx, "c1"); !e.Blocked {
			t.Fatal("a refused unblock of several unblocked one")
		}
		if err := s.SetEndUsersBlocked(ctx, []string{"c1", "c3"}, true); err != nil {
			t.Fatal(err)
		}
		if e, _ := s.GetEndUser(ctx, "c3"); !e.Blocked {
			t.Fatal("block did not block")
		}
		refusedWith(t, s.DeleteEndUsers(ctx, []string{"c1", "c2"}), ErrNotFound, "user_ids")
		if err := s.DeleteEndUsers(ctx, []string{"c1"}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.GetEndUser(ctx, "c1"); !errors.Is(err, ErrNotFound) {
			t.Fatalf("deleted end user: %v", err)
		}
	})
}

// TestLookupsAreCachedAndForgottenOnWrite: a lookup (found or not) is reused within the TTL,
// and this replica's own write forgets it at once, for every kind of row.
func TestLookupsAreCachedAndForgottenOnWrite(t *testing.T) {
	forEachBackend(t, func(t *testing.T, open opener) {
		s := open(t, Options{CacheTTL: time.Hour})
		ctx := context.Background()
		if _, found, err := s.LookupTeam(ctx, "t1"); found || err != nil {
			t.Fatalf("lookup before create: %v %v", found, err)
		}
		if _, err := s.CreateTeam(ctx, Team{TeamID: "t1"}); err != nil {
			t.Fatal(err)
		}
		if _, found, _ := s.LookupTeam(ctx, "t1"); !found {
			t.Fatal("a created team is still cached as missing")
		}
		// A write behind the store's back is not seen within the TTL: the cache answers.
		if _, err := s.db.ExecContext(ctx, `UPDATE teams SET blocked = TRUE WHERE team_id = 't1'`); err != nil {
			t.Fatal(err)
		}
		if tm, _, _ := s.LookupTeam(ctx, "t1"); tm.Blocked {
			t.Fatal("the lookup was not cached")
		}
		if _, err := s.AddTeamMembers(ctx, "t1", []Membership{{UserID: "u1", Role: "user"}}); err != nil {
			t.Fatal(err)
		}
		if tm, _, _ := s.LookupTeam(ctx, "t1"); !tm.Blocked || len(tm.Members) != 1 {
			t.Fatalf("member_add did not forget the team's lookup: %+v", tm)
		}
		if u, found, _ := s.LookupUser(ctx, "u1"); !found || len(u.Teams) != 1 {
			t.Fatalf("user lookup: %+v %v", u, found)
		}
		if err := s.DeleteTeams(ctx, []string{"t1"}); err != nil {
			t.Fatal(err)
		}
		if u, _, _ := s.LookupUser(ctx, "u1"); len(u.Teams) != 0 {
			t.Fatalf("deleting the team did not forget its member's lookup: %+v", u)
		}
		o, _ := s.CreateOrganization(ctx, Organization{Alias: "a"})
		if got, found, _ := s.LookupOrganization(ctx, o.OrganizationID); !found || got.Alias != "a" {
			t.Fatal("org lookup")
		}
		if _, err := s.UpdateOrganization(ctx, o.OrganizationID, func(o *Organization) { o.Alias = "b" }); err != nil {
			t.Fatal(err)
		}
		if got, _, _ := s.LookupOrganization(ctx, o.OrganizationID); got.Alias != "b" {
			t.Fatal("org update not seen by its lookup")
		}
		if _, found, _ := s.LookupEndUser(ctx, "c1"); found {
			t.Fatal("end user found before create")
		}
		if _, err := s.CreateEndUser(ctx, EndUser{UserID: "c1"}); err != nil {
			t.Fatal(err)
		}
		if _, found, _ := s.LookupEndUser(ctx, "c1"); !found {
			t.Fatal("a created end user is still cached as missing")
		}
	})
}

// TestLookupAcrossAnInvalidationIsNotCached: a team read begun before another replica's
// invalidation lands is answered but not cached, whatever kind of row it is.
func TestLookupAcrossAnInvalidationIsNotCached(t *testing.T) {
	s := open(t, Options{CacheTTL: time.Hour})
	ctx := context.Background()
	if _, err := s.CreateTeam(ctx, Team{TeamID: "t1"}); err != nil {
		t.Fatal(err)
	}
	_, found, err := lookupCached(ctx, s, teamCacheKey("t1"), func() (Team, error) {
		s.cache.forget("team:t1") // the invalidation arrives while the row is read
		return s.GetTeam(ctx, "t1")
	})
	if err != nil || !found {
		t.Fatal(found, err)
	}
	if _, ok := s.cache.get(teamCacheKey("t1"), time.Now()); ok {
		t.Fatal("a read that raced an invalidation was cached")
	}
}

// TestMadeUpNamesDoNotEvictRows: "no such row" answers are kept apart from rows found, so a
// stream of invented names never pushes a real caller's cached row out.
func TestMadeUpNamesDoNotEvictRows(t *testing.T) {
	c := newKeyCache(3, time.Hour)
	now := time.Now()
	c.put("key:real", cacheEntry{val: Key{Token: "real"}, found: true}, now)
	for i := range 100 {
		c.put("enduser:"+strconv.Itoa(i), cacheEntry{}, now)
	}
	if _, ok := c.get("key:real", now); !ok {
		t.Fatal("made-up names evicted a row found")
	}
	if len(c.miss) > 3 || len(c.m) != 1 {
		t.Fatalf("sizes: %d found, %d missing", len(c.m), len(c.miss))
	}
	c.put("key:real", cacheEntry{}, now) // a row deleted since: its answer moves
	if e, ok := c.get("key:real", now); !ok || e.found || len(c.m) != 0 {
		t.Fatalf("the answer did not move: %+v %v", e, ok)
	}
}
