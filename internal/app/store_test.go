package app_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpgw/mcpgw/internal/app"
)

// TestDatabaseURLIsRefused: a database URL, from the config or the environment, stops the
// start with a clear error instead of falling back to SQLite.
func TestDatabaseURLIsRefused(t *testing.T) {
	env := func(k string) (string, bool) {
		if k == "DATABASE_URL" {
			return "postgres://u:SEKRIT@127.0.0.1/db", true
		}
		return "", false
	}
	for name, tc := range map[string]struct {
		yaml string
		env  func(string) (string, bool)
	}{
		"config": {minimal + "  database_url: postgres://u:SEKRIT@127.0.0.1/db\n", noEnv},
		"env":    {minimal, env},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			_, err := app.New(parse(t, tc.yaml), app.WithLookupEnv(tc.env), app.WithDataDir(dir))
			if err == nil || !strings.Contains(err.Error(), "Postgres support is not built yet") ||
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
