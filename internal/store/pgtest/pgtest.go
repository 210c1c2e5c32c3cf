// Package pgtest gives a test a fresh, empty Postgres database of its own on the cluster that
// MCPGW_TEST_DATABASE_URL names (scripts/postgres.sh starts a throwaway one), so tests on
// Postgres are independent and can run in parallel. Only tests import it.
package pgtest

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" database/sql driver
)

// EnvURL names the environment variable holding the test cluster's URL (any database on it;
// its user must be allowed to create databases).
const EnvURL = "MCPGW_TEST_DATABASE_URL"

// envRequire, set to 1, turns a missing test cluster into a failure instead of a skip (CI).
const envRequire = "MCPGW_REQUIRE_PEERS"

// NewDatabase creates an empty database on the test cluster and returns its URL; it is dropped
// at the test's cleanup (after cleanups registered later, such as closing a store on it).
// Without MCPGW_TEST_DATABASE_URL the test fails when MCPGW_REQUIRE_PEERS=1 and is skipped
// otherwise.
func NewDatabase(t testing.TB) string {
	t.Helper()
	admin := os.Getenv(EnvURL)
	if admin == "" {
		msg := EnvURL + " is not set: no Postgres to test on (scripts/postgres.sh starts one)"
		if os.Getenv(envRequire) == "1" {
			t.Fatal(msg + ", and " + envRequire + "=1 forbids skipping")
		}
		t.Skip(msg)
	}
	u, err := url.Parse(admin)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		t.Fatalf("%s must be a postgres:// URL", EnvURL)
	}
	raw := make([]byte, 8)
	_, _ = rand.Read(raw)
	name := "mcpgw_test_" + hex.EncodeToString(raw)
	exec(t, admin, "CREATE DATABASE "+name)
	t.Cleanup(func() { exec(t, admin, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)") })
	u.Path = "/" + name
	return u.String()
}

// exec runs one statement on the cluster through a connection of its own.
func exec(t testing.TB, dsn, stmt string) {
	t.Helper()
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := db.ExecContext(ctx, stmt); err != nil {
		t.Fatal(fmt.Errorf("test cluster: %s: %w", stmt, err))
	}
}
