package store

import (
	"context"
	"database/sql"
	"io/fs"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/pressly/goose/v3"

	"github.com/mcpgw/mcpgw/internal/store/pgtest"
)

// fullSettings sets every ServerSettings field.
func fullSettings() ServerSettings {
	return ServerSettings{SpecPath: "https://api.example.com/openapi.json", ProtocolVersion: "2025-06-18",
		ForwardIdentity: "jwt", AllowElicitation: true, AllowSampling: true, PinToolDefinitions: true,
		PinnedTools: []string{"search", "fetch"}, Guardrails: []string{"pii", "jailbreak"}}
}

// TestServerSettingsRoundTrip: every setting is stored, read back, changed by an update and
// cleared by one; a server without settings reads back none.
func TestServerSettingsRoundTrip(t *testing.T) {
	forEachBackend(t, func(t *testing.T, open opener) {
		ctx := context.Background()
		s := open(t, Options{})
		sv := sampleServer()
		sv.Settings = fullSettings()
		created, err := s.CreateServer(ctx, sv)
		if err != nil {
			t.Fatal(err)
		}
		got, err := s.GetServer(ctx, created.ServerID)
		if err != nil || !reflect.DeepEqual(got.Settings, fullSettings()) {
			t.Fatalf("read back %+v, %v; want %+v", got.Settings, err, fullSettings())
		}
		up, err := s.UpdateServer(ctx, created.ServerID, func(sv *MCPServer) error {
			sv.Settings.Guardrails, sv.Settings.AllowSampling = []string{"pii"}, false
			return nil
		})
		if err != nil || !reflect.DeepEqual(up.Settings.Guardrails, []string{"pii"}) {
			t.Fatalf("update = %+v, %v", up.Settings, err)
		}
		want := fullSettings()
		want.Guardrails, want.AllowSampling = []string{"pii"}, false
		if list, err := s.ListServers(ctx); err != nil || len(list) != 1 || !reflect.DeepEqual(list[0].Settings, want) {
			t.Fatalf("list = %+v, %v; want %+v", list, err, want)
		}
		if _, err := s.UpdateServer(ctx, created.ServerID, func(sv *MCPServer) error { sv.Settings = ServerSettings{}; return nil }); err != nil {
			t.Fatal(err)
		}
		if got, _ := s.GetServer(ctx, created.ServerID); !reflect.DeepEqual(got.Settings, ServerSettings{}) {
			t.Fatalf("cleared settings read back %+v", got.Settings)
		}
		plain, err := s.CreateServer(ctx, MCPServer{ServerName: "plain", URL: "https://p/mcp"})
		if err != nil {
			t.Fatal(err)
		}
		if got, _ := s.GetServer(ctx, plain.ServerID); !reflect.DeepEqual(got.Settings, ServerSettings{}) {
			t.Fatalf("a server without settings read back %+v", got.Settings)
		}
	})
}

// TestServerSettingsMigrationKeepsRows: a database at migration 00007 holding a stored server
// opens (migrating to 00008) with the server as it was and no settings; the server then takes
// settings like any other.
func TestServerSettingsMigrationKeepsRows(t *testing.T) {
	for _, b := range []struct {
		name    string
		dialect goose.Dialect
		prepare func(t *testing.T) (*sql.DB, func(t *testing.T) *Store)
	}{
		{"sqlite", goose.DialectSQLite3, func(t *testing.T) (*sql.DB, func(t *testing.T) *Store) {
			dir := t.TempDir()
			db, err := openSQLite(context.Background(), filepath.Join(dir, FileName), "file:"+filepath.Join(dir, FileName))
			if err != nil {
				t.Fatal(err)
			}
			return db, func(t *testing.T) *Store { return openSQLiteAt(t, dir) }
		}},
		{"postgres", goose.DialectPostgres, func(t *testing.T) (*sql.DB, func(t *testing.T) *Store) {
			url := pgtest.NewDatabase(t)
			db, err := sql.Open("pgx", url) // the driver postgres.go registers
			if err != nil {
				t.Fatal(err)
			}
			return db, func(t *testing.T) *Store { return openPostgresAt(t, url, Options{}) }
		}},
	} {
		t.Run(b.name, func(t *testing.T) {
			ctx := context.Background()
			db, reopen := b.prepare(t)
			fsys, err := fs.Sub(migrations, "migrations")
			if err != nil {
				t.Fatal(err)
			}
			p, err := goose.NewProvider(b.dialect, db, fsys, goose.WithDisableGlobalRegistry(true))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := p.UpTo(ctx, 7); err != nil {
				t.Fatal(err)
			}
			if _, err := db.ExecContext(ctx, `INSERT INTO mcp_servers (server_id, server_name, url, allowed_tools,
				timeout_ms, rpm, allow_all_keys, created_at, updated_at, created_by) VALUES
				('old-id', 'old', 'https://old/mcp', '["search"]', 2500, 7, TRUE, 1700000000000, 1700000000000, 'admin')`); err != nil {
				t.Fatal(err)
			}
			_ = db.Close()
			s := reopen(t)
			got, err := s.GetServer(ctx, "old-id")
			if err != nil {
				t.Fatal(err)
			}
			if got.ServerName != "old" || got.URL != "https://old/mcp" || !reflect.DeepEqual(got.AllowedTools, []string{"search"}) ||
				got.Timeout == nil || got.Timeout.Milliseconds() != 2500 || got.RPM == nil || *got.RPM != 7 || !got.AllowAllKeys ||
				got.CreatedBy != "admin" || got.CreatedAt.UnixMilli() != 1700000000000 || !reflect.DeepEqual(got.Settings, ServerSettings{}) {
				t.Fatalf("after the migration %+v", got)
			}
			up, err := s.UpdateServer(ctx, "old-id", func(sv *MCPServer) error { sv.Settings = fullSettings(); return nil })
			if err != nil || !reflect.DeepEqual(up.Settings, fullSettings()) || up.URL != "https://old/mcp" {
				t.Fatalf("update after the migration = %+v, %v", up, err)
			}
		})
	}
}

// openSQLiteAt opens the store in dir, closed at the test's cleanup.
func openSQLiteAt(t *testing.T, dir string) *Store {
	t.Helper()
	s, err := OpenSQLite(context.Background(), dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}
