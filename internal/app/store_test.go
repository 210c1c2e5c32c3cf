package app_test

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpgw/mcpgw/internal/app"
	"github.com/mcpgw/mcpgw/internal/store/pgtest"
)

// TestDatabaseURLOpensPostgres: a database URL, from the config or (when the config has none)
// the environment, opens the Postgres store instead of SQLite; the config's wins over the
// environment's.
func TestDatabaseURLOpensPostgres(t *testing.T) {
	for name, tc := range map[string]struct {
		config, env string
	}{
		"config":            {config: "db"},
		"env":               {env: "db"},
		"config before env": {config: "db", env: "postgres://u:p@127.0.0.1:1/nowhere?connect_timeout=1"},
	} {
		t.Run(name, func(t *testing.T) {
			url := pgtest.NewDatabase(t)
			yaml := minimal
			if tc.config != "" {
				yaml += "  database_url: " + url + "\n"
			}
			env := func(k string) (string, bool) {
				if k == "DATABASE_URL" && tc.env != "" {
					return strings.Replace(tc.env, "db", url, 1), true
				}
				return "", false
			}
			dir := t.TempDir()
			a, err := app.New(parse(t, yaml), app.WithLookupEnv(env), app.WithDataDir(dir))
			if err != nil {
				t.Fatal(err)
			}
			a.Start()
			if status, body := readiness(t, a.Handler()); status != 200 || !strings.Contains(body, `"store":"ok"`) {
				t.Errorf("readiness: %d %s", status, body)
			}
			if err := a.Close(context.Background()); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(filepath.Join(dir, "mcpgw.db")); !os.IsNotExist(err) {
				t.Fatalf("an SQLite file was created: %v", err)
			}
			var n int
			db, err := sql.Open("pgx", url)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			if err := db.QueryRow(`SELECT COUNT(*) FROM keys`).Scan(&n); err != nil {
				t.Fatalf("the Postgres database was not migrated: %v", err)
			}
		})
	}
}

// TestBadDatabaseURLFailsStartWithoutThePassword: a URL that does not parse or names a database
// that does not answer stops the start with a clear error that does not quote the password,
// and no SQLite store is made instead.
func TestBadDatabaseURLFailsStartWithoutThePassword(t *testing.T) {
	for name, tc := range map[string]struct {
		yaml string
		env  func(string) (string, bool)
		want string
	}{
		"config does not parse": {minimal + "  database_url: postgres://u:SEKRIT@127.0.0.1:notaport/db\n", noEnv, "does not parse"},
		"config unreachable": {minimal + "  database_url: postgres://u:SEKRIT@127.0.0.1:1/db?connect_timeout=2\n", noEnv,
			"connecting to Postgres"},
		"env unreachable": {minimal, func(k string) (string, bool) {
			return "postgres://u:SEKRIT@127.0.0.1:1/db?connect_timeout=2", k == "DATABASE_URL"
		}, "connecting to Postgres"},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			_, err := app.New(parse(t, tc.yaml), app.WithLookupEnv(tc.env), app.WithDataDir(dir))
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "DATABASE_URL") ||
				strings.Contains(err.Error(), "SEKRIT") {
				t.Fatalf("err = %v", err)
			}
			if _, err := os.Stat(filepath.Join(dir, "mcpgw.db")); !os.IsNotExist(err) {
				t.Fatalf("an SQLite file was created: %v", err)
			}
		})
	}
}

// TestStoreIsOpenedInTheDataDirAndClosed: New creates <data-dir>/mcpgw.db; after Close
// readiness reports the store as failing.
func TestStoreIsOpenedInTheDataDirAndClosed(t *testing.T) {
	dir := t.TempDir()
	a, err := app.New(parse(t, minimal), app.WithLookupEnv(noEnv), app.WithDataDir(dir))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "mcpgw.db")); err != nil {
		t.Fatal(err)
	}
	a.Start()
	if err := a.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if status, body := readiness(t, a.Handler()); status != 503 || !strings.Contains(body, `"store":"store: sql: database is closed"`) {
		t.Fatalf("after close: %d %s", status, body)
	}
}
