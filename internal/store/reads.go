package store

import (
	"context"
	"database/sql"
	"sync"
)

// maxReadStmts bounds readStmts: the reads routed through it are a handful of constant
// statements (a key, team, user, organisation or end user by id, their memberships, a
// server's tool pins), so the bound is never reached; past it a read is simply not prepared.
const maxReadStmts = 32

// readStmts runs the SQLite store's reads by id (what the lookup cache and the pin refresh
// read once a TTL, on the request path) as statements prepared once, instead of letting
// database/sql hand the driver the SQL text each time, which modernc parses and plans anew:
// parsing a key's SELECT was most of a cache miss's CPU (profile of the store-key gateway).
// A statement is prepared on first use and kept until Close; database/sql prepares it again
// on each pooled connection it runs on and drops it with that connection. Only constant SQL
// texts may be passed (the map is keyed by them; maxReadStmts bounds it regardless). SQLite
// re-prepares a statement itself when the schema changes (sqlite3_prepare_v2), and a
// prepared statement reads the database as it is when it runs: results are those of the
// unprepared read. Postgres reads go to the pool unchanged (pgx caches its statements per
// connection).
type readStmts struct {
	db     *sql.DB
	mu     sync.Mutex
	stmts  map[string]*sql.Stmt
	closed bool
}

// stmt is query prepared on r.db, or nil when it cannot be (closed, full, or preparing
// failed: the caller then runs query unprepared, which reports any error of its own). The
// statement is prepared outside r.mu, so a first use that waits on the database (a new
// connection, a busy lock) holds up no other read; of two first uses racing, one statement
// is kept and the other closed.
func (r *readStmts) stmt(ctx context.Context, query string) *sql.Stmt {
	r.mu.Lock()
	st, ok := r.stmts[query]
	done := ok || r.closed || len(r.stmts) >= maxReadStmts
	r.mu.Unlock()
	if done {
		return st
	}
	st, err := r.db.PrepareContext(ctx, query)
	if err != nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if kept, ok := r.stmts[query]; ok || r.closed || len(r.stmts) >= maxReadStmts {
		_ = st.Close()
		return kept
	}
	if r.stmts == nil {
		r.stmts = make(map[string]*sql.Stmt)
	}
	r.stmts[query] = st
	return st
}

// QueryRowContext runs query's prepared statement with args (querier).
func (r *readStmts) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	if st := r.stmt(ctx, query); st != nil {
		return st.QueryRowContext(ctx, args...)
	}
	return r.db.QueryRowContext(ctx, query, args...)
}

// QueryContext runs query's prepared statement with args (querier).
func (r *readStmts) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	if st := r.stmt(ctx, query); st != nil {
		return st.QueryContext(ctx, args...)
	}
	return r.db.QueryContext(ctx, query, args...)
}

// close closes the prepared statements; later reads run unprepared.
func (r *readStmts) close() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.closed = true
	for _, st := range r.stmts {
		_ = st.Close()
	}
	r.stmts = nil
}

// reads is what the store's reads by id run on: readStmts on SQLite, the pool on Postgres.
func (s *Store) reads() querier {
	if s.readStmts != nil {
		return s.readStmts
	}
	return s.db
}
