package store

import (
	"context"
	"testing"
)

// opener opens a fresh, empty store on one backend for the running test.
type opener func(t *testing.T, opts Options) *Store

// backend is one database the store runs on.
type backend struct {
	name string
	open opener
}

// backends lists the databases the store tests run on: SQLite always.
func backends() []backend {
	return []backend{{name: "sqlite", open: openSQLiteForTest}}
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
