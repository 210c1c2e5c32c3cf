package store

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpgw/mcpgw/internal/store/pgtest"
)

func sampleServer() MCPServer {
	d := 1500 * time.Millisecond
	n := int64(3)
	return MCPServer{
		ServerName: "github", Alias: "gh", Description: "GitHub tools", URL: "https://example.com/mcp",
		Transport: "http", AuthType: "bearer_token",
		Credentials:   ServerCredentials{AuthValue: "sealed-a", ClientID: "cid", Scopes: []string{"read"}},
		AccessGroups:  []string{"dev"},
		AllowedTools:  []string{"search"},
		ExtraHeaders:  []string{"X-Trace"},
		StaticHeaders: map[string]string{"X-Static": "sealed-h"},
		Env:           map[string]string{"TOKEN": "sealed-e"},
		Args:          []string{"-v"},
		MCPInfo:       []byte(`{"server_name":"GitHub"}`),
		Timeout:       &d, MaxConcurrentRequests: &n, CreatedBy: "admin",
	}
}

func TestServersCreateGetListUpdateDelete(t *testing.T) {
	forEachBackend(t, func(t *testing.T, open opener) {
		ctx := context.Background()
		s := open(t, Options{})
		created, err := s.CreateServer(ctx, sampleServer())
		if err != nil {
			t.Fatal(err)
		}
		if created.ServerID == "" || created.CreatedAt.IsZero() || created.UpdatedBy != "admin" {
			t.Fatalf("created = %+v", created)
		}
		got, err := s.GetServer(ctx, created.ServerID)
		if err != nil {
			t.Fatal(err)
		}
		if got.ServerName != "github" || got.Credentials.AuthValue != "sealed-a" || got.StaticHeaders["X-Static"] != "sealed-h" ||
			got.Env["TOKEN"] != "sealed-e" || *got.Timeout != 1500*time.Millisecond || *got.MaxConcurrentRequests != 3 ||
			got.RPM != nil || string(got.MCPInfo) != `{"server_name":"GitHub"}` || got.AccessGroups[0] != "dev" ||
			got.Credentials.Scopes[0] != "read" || got.Args[0] != "-v" || !got.CreatedAt.Equal(created.CreatedAt) {
			t.Fatalf("read back %+v", got)
		}
		if _, err := s.CreateServer(ctx, MCPServer{ServerName: "github"}); !errors.Is(err, ErrServerExists) {
			t.Fatalf("duplicate server_name: %v", err)
		}
		if _, err := s.CreateServer(ctx, MCPServer{ServerID: created.ServerID, ServerName: "other"}); !errors.Is(err, ErrServerExists) {
			t.Fatalf("duplicate server_id: %v", err)
		}
		second, err := s.CreateServer(ctx, MCPServer{ServerID: "second", ServerName: "second", URL: "https://b/mcp"})
		if err != nil {
			t.Fatal(err)
		}
		list, err := s.ListServers(ctx)
		if err != nil || len(list) != 2 {
			t.Fatalf("list = %v, %v", list, err)
		}
		up, err := s.UpdateServer(ctx, created.ServerID, func(sv *MCPServer) error {
			sv.Description, sv.UpdatedBy, sv.Timeout = "changed", "other-admin", nil
			return nil
		})
		if err != nil || up.Description != "changed" || up.UpdatedBy != "other-admin" || up.CreatedBy != "admin" {
			t.Fatalf("update = %+v, %v", up, err)
		}
		got, _ = s.GetServer(ctx, created.ServerID)
		if got.Description != "changed" || got.Timeout != nil || got.CreatedBy != "admin" || got.Credentials.AuthValue != "sealed-a" {
			t.Fatalf("after update %+v", got)
		}
		if _, err := s.UpdateServer(ctx, created.ServerID, func(sv *MCPServer) error { sv.ServerName = "second"; return nil }); !errors.Is(err, ErrServerExists) {
			t.Fatalf("rename onto another server: %v", err)
		}
		refused := errors.New("refused")
		if _, err := s.UpdateServer(ctx, created.ServerID, func(sv *MCPServer) error { sv.Description = "x"; return refused }); !errors.Is(err, refused) {
			t.Fatalf("change error: %v", err)
		}
		if got, _ := s.GetServer(ctx, created.ServerID); got.Description != "changed" {
			t.Fatal("a refused change was written")
		}
		if _, err := s.UpdateServer(ctx, "nope", func(*MCPServer) error { return nil }); !errors.Is(err, ErrNotFound) {
			t.Fatalf("update of a missing server: %v", err)
		}
		if err := s.DeleteServer(ctx, second.ServerID); err != nil {
			t.Fatal(err)
		}
		if err := s.DeleteServer(ctx, second.ServerID); !errors.Is(err, ErrNotFound) {
			t.Fatalf("second delete: %v", err)
		}
		if _, err := s.GetServer(ctx, second.ServerID); !errors.Is(err, ErrNotFound) {
			t.Fatalf("get deleted: %v", err)
		}
	})
}

// TestServersChangedReachesOtherReplicas: a write of the stored servers on one Postgres
// replica runs the other replica's OnServersChanged hook, and not the writer's own.
func TestServersChangedReachesOtherReplicas(t *testing.T) {
	url := pgtest.NewDatabase(t)
	a, b := openPostgresAt(t, url, Options{}), openPostgresAt(t, url, Options{})
	var onA, onB atomic.Int32
	a.OnServersChanged(func() { onA.Add(1) })
	b.OnServersChanged(func() { onB.Add(1) })
	ctx := context.Background()
	sv, err := a.CreateServer(ctx, MCPServer{ServerName: "one", URL: "https://a/mcp"})
	if err != nil {
		t.Fatal(err)
	}
	waitCount(t, &onB, 1)
	if _, err := a.UpdateServer(ctx, sv.ServerID, func(s *MCPServer) error { s.Description = "d"; return nil }); err != nil {
		t.Fatal(err)
	}
	waitCount(t, &onB, 2)
	if err := a.DeleteServer(ctx, sv.ServerID); err != nil {
		t.Fatal(err)
	}
	waitCount(t, &onB, 3)
	// A key write does not name the servers.
	if _, _, err := a.Generate(ctx, NewKey{}); err != nil {
		t.Fatal(err)
	}
	settle(t, b)
	settle(t, a)
	if n := onB.Load(); n != 3 {
		t.Fatalf("B's hook ran %d times, want 3", n)
	}
	if n := onA.Load(); n != 0 {
		t.Fatalf("the writer's own hook ran %d times", n)
	}
}

func waitCount(t *testing.T, n *atomic.Int32, want int32) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); n.Load() < want; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("hook ran %d times, want %d", n.Load(), want)
		}
	}
}

// TestServersChangedAfterAReconnect: notifications sent while the listener is down are lost,
// so a reconnect runs the OnServersChanged hook (the stored servers must be read again).
func TestServersChangedAfterAReconnect(t *testing.T) {
	s := openPostgresAt(t, pgtest.NewDatabase(t), Options{})
	var n atomic.Int32
	s.OnServersChanged(func() { n.Add(1) })
	if _, err := s.db.Exec(`SELECT pg_terminate_backend($1)`, int64(s.pg.listener.pid.Load())); err != nil {
		t.Fatal(err)
	}
	waitCount(t, &n, 1)
}
