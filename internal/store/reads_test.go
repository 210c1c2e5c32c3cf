package store

import (
	"context"
	"sync"
	"testing"
	"time"
)

// TestReadsArePreparedOnceAndSeeOtherWriters: on SQLite the lookups' reads run statements
// prepared once (the same *sql.Stmt serves every later read), and a prepared read still sees
// what another process committed since (a second Store on the same file stands in for it:
// this one's cache is never told), once the lookup cache's TTL has passed: a key blocked,
// its budget changed, its team blocked, a pin added, the key deleted.
func TestReadsArePreparedOnceAndSeeOtherWriters(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	now := time.Now()
	s, err := OpenSQLite(ctx, dir, Options{Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	other, err := OpenSQLite(ctx, dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	team, err := other.CreateTeam(ctx, Team{Alias: "t"})
	if err != nil {
		t.Fatal(err)
	}
	_, k, err := other.Generate(ctx, NewKey{TeamID: team.TeamID})
	if err != nil {
		t.Fatal(err)
	}
	got, found, err := s.Lookup(ctx, k.Token)
	if err != nil || !found || got.Blocked || got.MaxBudget != nil {
		t.Fatalf("first lookup: %+v %v %v", got, found, err)
	}
	if _, _, err := s.LookupTeam(ctx, team.TeamID); err != nil {
		t.Fatal(err)
	}
	if pins, err := s.ListToolPins(ctx, "fx"); err != nil || len(pins) != 0 {
		t.Fatalf("pins %v %v", pins, err)
	}
	prepared := s.readStmts.snapshot()
	if len(prepared) < 4 { // key, team, team members, pins
		t.Fatalf("%d reads prepared, want the key's, the team's, its members' and the pins'", len(prepared))
	}

	if _, err := other.SetBlocked(ctx, k.Token, true); err != nil {
		t.Fatal(err)
	}
	budget := 5.0
	if _, err := other.Update(ctx, k.Token, func(k *Key) { k.MaxBudget = &budget }); err != nil {
		t.Fatal(err)
	}
	if _, err := other.UpdateTeam(ctx, team.TeamID, func(t *Team) { t.Blocked = true }); err != nil {
		t.Fatal(err)
	}
	if err := other.PutToolPins(ctx, []ToolPin{{Server: "fx", Tool: "echo", Digest: "d"}}, nil, true); err != nil {
		t.Fatal(err)
	}
	if got, _, _ := s.Lookup(ctx, k.Token); got.Blocked {
		t.Fatal("within the TTL the cached lookup is served (the test's premise)")
	}
	now = now.Add(DefaultCacheTTL)
	got, found, err = s.Lookup(ctx, k.Token)
	if err != nil || !found || !got.Blocked || got.MaxBudget == nil || *got.MaxBudget != budget {
		t.Fatalf("after the TTL the other process's block and budget are not seen: %+v %v %v", got, found, err)
	}
	if tm, _, err := s.LookupTeam(ctx, team.TeamID); err != nil || !tm.Blocked {
		t.Fatalf("team block not seen: %+v %v", tm, err)
	}
	if pins, err := s.ListToolPins(ctx, "fx"); err != nil || len(pins) != 1 {
		t.Fatalf("pin not seen: %v %v", pins, err)
	}
	if err := other.Delete(ctx, []string{k.Token}); err != nil {
		t.Fatal(err)
	}
	now = now.Add(DefaultCacheTTL)
	if _, found, err := s.Lookup(ctx, k.Token); err != nil || found {
		t.Fatalf("deleted key still found: %v %v", found, err)
	}
	after := s.readStmts.snapshot()
	for q, st := range prepared {
		if after[q] != st {
			t.Fatalf("read prepared again: %q", q)
		}
	}
}

// TestReadsConcurrentAndAfterClose: prepared reads from many goroutines at once (run with
// -race), and a store closed while reads are prepared lets later reads fail cleanly.
func TestReadsConcurrentAndAfterClose(t *testing.T) {
	ctx := context.Background()
	s, err := OpenSQLite(ctx, t.TempDir(), Options{CacheTTL: -1})
	if err != nil {
		t.Fatal(err)
	}
	_, k, err := s.Generate(ctx, NewKey{})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 20 {
				if _, found, err := s.Lookup(ctx, k.Token); err != nil || !found {
					t.Error(found, err)
					return
				}
			}
		})
	}
	wg.Wait()
	if n := len(s.readStmts.snapshot()); n != 1 {
		t.Fatalf("%d statements prepared for one read", n)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Lookup(ctx, k.Token); err == nil {
		t.Fatal("a read after Close succeeded")
	}
	if n := len(s.readStmts.snapshot()); n != 0 {
		t.Fatalf("%d statements kept after Close", n)
	}
}

// snapshot is a copy of r's prepared statements by SQL text.
func (r *readStmts) snapshot() map[string]any {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string]any, len(r.stmts))
	for q, st := range r.stmts {
		out[q] = st
	}
	return out
}
