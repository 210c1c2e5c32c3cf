package store

import (
	"context"
	"testing"
	"time"

	"github.com/mcpgw/mcpgw/internal/store/pgtest"
)

// opener opens a fresh, empty store on one backend for the running test.
type opener func(t *testing.T, opts Options) *Store

// backend is one database the store runs on.
type backend struct {
	name string
	open opener
}

// backends lists the databases the store tests run on: SQLite always, and Postgres, each test
// in a fresh database of its own (see pgtest: without MCPGW_TEST_DATABASE_URL the Postgres
// subtests are skipped, or fail with MCPGW_REQUIRE_PEERS=1).
func backends() []backend {
	return []backend{{name: "sqlite", open: openSQLiteForTest}, {name: "postgres", open: openPostgresForTest}}
}

// forEachBackend runs f as a subtest on every backend.
func forEachBackend(t *testing.T, f func(t *testing.T, open opener)) {
	t.Helper()
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) { f(t, b.open) })
	}
}

func openSQLiteForTest(t *testing.T, opts Options) *Store {
	t.Helper()
	s, err := OpenSQLite(context.Background(), t.TempDir(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func openPostgresForTest(t *testing.T, opts Options) *Store {
	t.Helper()
	return openPostgresAt(t, pgtest.NewDatabase(t), opts)
}

// openPostgresAt opens a store on the Postgres database at url, closed at the test's cleanup;
// two calls on one url are two replicas.
func openPostgresAt(t *testing.T, url string, opts Options) *Store {
	t.Helper()
	s, err := OpenPostgres(context.Background(), url, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// settle waits until s's invalidation listener has applied every notification committed so far,
// its own writes' included (a no-op on SQLite): Postgres delivers notifications in commit
// order, so once a probe sent now has forgotten its cache key, all earlier ones have been
// applied too.
func settle(t *testing.T, s *Store) {
	t.Helper()
	if s.pg == nil {
		return
	}
	probe := "settle:" + Hash(t.Name()+time.Now().String())
	s.cache.put(probe, cacheEntry{found: true}, s.now())
	if _, err := s.db.Exec(`SELECT pg_notify($1, $2)`, notifyChannel, `["`+probe+`"]`); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
		s.cache.mu.Lock()
		_, pending := s.cache.m[probe]
		s.cache.mu.Unlock()
		if !pending {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the invalidation listener did not apply a notification within 5 s")
		}
	}
}

// withRefs creates the organisations and teams a test's keys name (a key's team and
// organisation must exist).
func withRefs(t *testing.T, s *Store, orgs, teams []string) {
	t.Helper()
	ctx := context.Background()
	for _, o := range orgs {
		if _, err := s.CreateOrganization(ctx, Organization{OrganizationID: o, Alias: o}); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range teams {
		if _, err := s.CreateTeam(ctx, Team{TeamID: id}); err != nil {
			t.Fatal(err)
		}
	}
}
