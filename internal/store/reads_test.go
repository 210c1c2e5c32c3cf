package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
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
	if n := len(s.readStmts.snapshot()); n != 0 {
		t.Fatalf("%d statements kept after Close", n)
	}
}

// TestReadsRaceClose: reads of every prepared kind running while the store closes neither
// panic nor race, and Close leaves no statement behind, whenever it lands among them.
func TestReadsRaceClose(t *testing.T) {
	for round := range 12 {
		ctx := context.Background()
		s, err := OpenSQLite(ctx, t.TempDir(), Options{CacheTTL: -1})
		if err != nil {
			t.Fatal(err)
		}
		team, err := s.CreateTeam(ctx, Team{Alias: "t"})
		if err != nil {
			t.Fatal(err)
		}
		_, k, err := s.Generate(ctx, NewKey{TeamID: team.TeamID})
		if err != nil {
			t.Fatal(err)
		}
		start := make(chan struct{})
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				<-start
				for range 30 {
					_, _, _ = s.Lookup(ctx, k.Token)
					_, _, _ = s.LookupTeam(ctx, team.TeamID)
					_, _ = s.ListToolPins(ctx, "fx")
				}
			})
		}
		close(start)
		time.Sleep(time.Duration(round) * 200 * time.Microsecond)
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		wg.Wait()
		if n := len(s.readStmts.snapshot()); n != 0 {
			t.Fatalf("round %d: %d statements kept after Close", round, n)
		}
	}
}

// TestStmtPreparesOutsideTheLock: a first use whose prepare waits on the database holds up
// no read of a statement already prepared; two first uses of one query keep one statement.
func TestStmtPreparesOutsideTheLock(t *testing.T) {
	release := make(chan struct{})
	db := sql.OpenDB(prepConnector{slow: release})
	defer db.Close()
	r := &readStmts{db: db}
	ctx := context.Background()
	if r.stmt(ctx, "FAST") == nil {
		t.Fatal("FAST was not prepared")
	}
	slow := make(chan *sql.Stmt, 2)
	for range 2 {
		go func() { slow <- r.stmt(ctx, "SLOW") }()
	}
	time.Sleep(20 * time.Millisecond) // both are in the driver's Prepare
	got := make(chan *sql.Stmt, 1)
	go func() { got <- r.stmt(ctx, "FAST") }()
	select {
	case st := <-got:
		if st == nil {
			t.Fatal("FAST lost its statement")
		}
	case <-time.After(2 * time.Second):
		close(release)
		t.Fatal("a prepared read waited for another query's prepare")
	}
	close(release)
	a, b := <-slow, <-slow
	if a == nil || a != b {
		t.Fatalf("two first uses of SLOW kept %p and %p", a, b)
	}
	if n := len(r.snapshot()); n != 2 {
		t.Fatalf("%d statements kept, want FAST and SLOW", n)
	}
	r.close()
}

// prepConnector is a database/sql driver whose Prepare of "SLOW" waits for slow to close:
// a prepare held up by the database, which SQLite will not do on demand.
type prepConnector struct{ slow chan struct{} }

func (c prepConnector) Connect(context.Context) (driver.Conn, error) { return prepConn(c), nil }
func (c prepConnector) Driver() driver.Driver                        { return nil }

type prepConn struct{ slow chan struct{} }

func (c prepConn) Prepare(query string) (driver.Stmt, error) {
	if query == "SLOW" {
		<-c.slow
	}
	return prepStmt{}, nil
}
func (c prepConn) Close() error              { return nil }
func (c prepConn) Begin() (driver.Tx, error) { return nil, errors.New("no transactions") }

type prepStmt struct{}

func (prepStmt) Close() error                               { return nil }
func (prepStmt) NumInput() int                              { return -1 }
func (prepStmt) Exec([]driver.Value) (driver.Result, error) { return nil, errors.New("not run") }
func (prepStmt) Query([]driver.Value) (driver.Rows, error)  { return nil, errors.New("not run") }

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
