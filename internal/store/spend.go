package store

import (
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"time"
)

// SpendRow is one spend_logs row: a tool call or a listing, as LiteLLM's LiteLLM_SpendLogs
// records it. It names who called and what, never arguments or results.
type SpendRow struct {
	RequestID string
	CallType  string // CallTypeTool or CallTypeList
	// Model is the namespaced tool name the caller called (LiteLLM's model column for MCP
	// calls); "" for a listing.
	Model          string
	Server         string // the server that served it; "" when it spans several
	APIKey         string // the caller's key hash; "" for none
	KeyAlias       string
	TeamID         string
	UserID         string
	EndUser        string
	OrganizationID string
	Status         string // SpendSuccess or SpendFailure
	Fault          string // the failure's class; "" on success
	Spend          float64
	StartTime      time.Time
	EndTime        time.Time
	// Calls, when not 0, makes the row an aggregate of that many calls (Failed of them
	// failed, Spend their total) that were not logged one by one: RecordSpend adds it to
	// the spend of its key and team and to the daily rollup of its StartTime's day, and
	// inserts no spend_logs row for it. The spend writer folds rows into aggregates when
	// its queue is full.
	Calls, Failed int64
}

// logged reports whether r is one call's spend_logs row (not an aggregate).
func (r *SpendRow) logged() bool { return r.Calls == 0 }

// The call types and statuses of spend rows, LiteLLM's words.
const (
	CallTypeTool  = "call_mcp_tool"
	CallTypeList  = "list_mcp_tools"
	SpendSuccess  = "success"
	SpendFailure  = "failure"
	spendColumns  = `request_id, call_type, model, mcp_server, api_key, key_alias, team_id, user_id, end_user, organization_id, status, fault, spend, start_time, end_time`
	spendNumCols  = 15
	spendNumText  = 12 // the text columns, first in spendColumns
	dailyColumns  = `date, api_key, team_id, mcp_server, spend, api_requests, failed_requests`
	spendDayStamp = "2006-01-02"
)

// NewTimeID returns a time-ordered (version 7, RFC 9562) UUID: 48 bits of unix
// milliseconds, then random bits. It is a spend row's request_id: rows inserted in time
// order append to the primary key's index instead of touching a random page of it per row,
// so a batch's commit writes a few pages, not one per row. The random bits come from
// math/rand/v2's global generator (ChaCha8 per thread, seeded by the OS): one is made per
// tools/call, and crypto/rand costs a getrandom system call each (~1 % of a call's CPU);
// the id names a row, it guards nothing, so it needs uniqueness (74 random bits within a
// millisecond), not secrecy.
func NewTimeID(now time.Time) string {
	var b [16]byte
	binary.LittleEndian.PutUint64(b[6:14], rand.Uint64())
	binary.LittleEndian.PutUint16(b[14:], uint16(rand.Uint32()))
	var ms [8]byte
	binary.BigEndian.PutUint64(ms[:], uint64(now.UnixMilli()))
	copy(b[:6], ms[2:])
	b[6] = b[6]&0x0f | 0x70
	b[8] = b[8]&0x3f | 0x80
	return formatUUID(&b)
}

// RecordSpend writes rows in one transaction: the spend_logs rows (aggregates, see
// SpendRow.Calls, insert none), the spend of their keys and teams, and their daily_spend
// rollup. A key or team whose spend changed is forgotten from the lookup cache (on every
// replica, on Postgres), so its budget is checked against the new spend; rows that cost
// nothing change no spend and forget nothing. rows' aggregates come last, if any.
func (s *Store) RecordSpend(ctx context.Context, rows []SpendRow) error {
	if len(rows) == 0 {
		return nil
	}
	logged := len(rows)
	for logged > 0 && !rows[logged-1].logged() {
		logged--
	}
	for _, r := range rows[:logged] {
		if !r.logged() {
			return errors.New("store: recording spend: an aggregate row before a logged one")
		}
	}
	db := s.db
	if s.spendDB != nil {
		db = s.spendDB
		if err := s.spendInserts.prepare(ctx, db, logged); err != nil {
			return err
		}
	}
	return s.inTxOn(ctx, db, func(tx *tx) error {
		insert := func() error { return insertSpendRows(ctx, tx, rows[:logged], s.pg != nil) }
		exec := func(i spendStmt, args ...any) error {
			_, err := tx.ExecContext(ctx, i.sql(), args...)
			return err
		}
		if s.spendDB != nil {
			insert = func() error { return s.spendInserts.insert(ctx, tx, rows[:logged]) }
			exec = func(i spendStmt, args ...any) error { return s.spendInserts.exec(ctx, tx, i, args...) }
		}
		if err := insert(); err != nil {
			return err
		}
		keys, teams, days := spendTotals(rows)
		now := s.now().UnixMilli()
		for token, v := range keys {
			tx.touch(keyCacheKey(token))
			if err := exec(spendAddKey, v, token, now); err != nil {
				return fmt.Errorf("store: adding a key's spend: %w", err)
			}
		}
		for id, v := range teams {
			tx.touch(teamCacheKey(id))
			if err := exec(spendAddTeam, v, id, now); err != nil {
				return fmt.Errorf("store: adding a team's spend: %w", err)
			}
		}
		for k, d := range days {
			if err := exec(spendAddDaily, k.date, k.key, k.team, k.server, d.spend, d.calls, d.fails); err != nil {
				return fmt.Errorf("store: adding to the daily spend: %w", err)
			}
		}
		return nil
	})
}

// The statements RecordSpend runs besides its INSERTs: a key's and a team's spend ($1 added,
// $2 the key or team, $3 now, addSpendSQL), and a daily_spend rollup row's upsert.
const (
	addKeySpendSQL   = `UPDATE keys` + addSpendSQL + ` WHERE token = $2`
	addTeamSpendSQL  = `UPDATE teams` + addSpendSQL + ` WHERE team_id = $2`
	addDailySpendSQL = `INSERT INTO daily_spend (` + dailyColumns + `)
		VALUES ($1, $2, $3, $4, $5, $6, $7)
		ON CONFLICT (date, api_key, team_id, mcp_server) DO UPDATE SET
		spend = daily_spend.spend + excluded.spend,
		api_requests = daily_spend.api_requests + excluded.api_requests,
		failed_requests = daily_spend.failed_requests + excluded.failed_requests`
)

// spendDay is one daily_spend row's key, and spendDayTotal what a batch adds to it.
type spendDay struct{ date, key, team, server string }

type spendDayTotal struct {
	spend        float64
	calls, fails int64
}

// spendTotals sums rows' spend per key and per team, and their spend, calls and failures per
// daily_spend row (an aggregate row counts its Calls and Failed).
func spendTotals(rows []SpendRow) (keys, teams map[string]float64, days map[spendDay]*spendDayTotal) {
	keys, teams, days = map[string]float64{}, map[string]float64{}, map[spendDay]*spendDayTotal{}
	for _, r := range rows {
		if r.Spend != 0 && r.APIKey != "" {
			keys[r.APIKey] += r.Spend
		}
		if r.Spend != 0 && r.TeamID != "" {
			teams[r.TeamID] += r.Spend
		}
		k := spendDay{r.StartTime.UTC().Format(spendDayStamp), r.APIKey, r.TeamID, r.Server}
		d := days[k]
		if d == nil {
			d = &spendDayTotal{}
			days[k] = d
		}
		d.spend += r.Spend
		switch {
		case !r.logged():
			d.calls += r.Calls
			d.fails += r.Failed
		case r.Status != SpendSuccess:
			d.calls++
			d.fails++
		default:
			d.calls++
		}
	}
	return keys, teams, days
}

// insertSpendRows inserts rows as multi-row INSERTs of at most 500 rows each (7 500
// parameters, under both backends' limits). Postgres takes numbered parameters ($n); SQLite
// takes anonymous ones (?), because it resolves each $n by a linear search of the names seen
// so far, which makes parsing a 500-row INSERT quadratic (hundreds of ms per batch).
func insertSpendRows(ctx context.Context, tx *tx, rows []SpendRow, pg bool) error {
	const per = 500
	for len(rows) > 0 {
		n := min(per, len(rows))
		if _, err := tx.ExecContext(ctx, spendInsertSQL(n, pg), spendArgs(nil, rows[:n])...); err != nil {
			return fmt.Errorf("store: inserting spend logs: %w", err)
		}
		rows = rows[n:]
	}
	return nil
}

// spendInsertSQL is the INSERT of n spend rows, with numbered ($n, Postgres) or anonymous
// (?, SQLite) parameters; SQLite's text parameters take NULL for the empty text
// (sqliteSpendArgs).
func spendInsertSQL(n int, pg bool) string {
	var b strings.Builder
	if pg {
		b.WriteString(`INSERT INTO spend_logs (` + spendColumns + `) VALUES `)
	} else {
		// OR FAIL: a failing row ends the statement without undoing its earlier rows, so
		// SQLite keeps no statement journal of the pages it writes (ABORT's undo log, a
		// copy of every page the statement touches after the transaction's first); the
		// error still rolls back the whole transaction (inTxOn), as ABORT's would.
		b.WriteString(`INSERT OR FAIL INTO spend_logs (` + spendColumns + `) VALUES `)
	}
	for i := range n {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("(")
		for c := range spendNumCols {
			if c > 0 {
				b.WriteString(", ")
			}
			switch {
			case pg:
				b.WriteString("$" + strconv.Itoa(i*spendNumCols+c+1))
			case c < spendNumText:
				b.WriteString("coalesce(?,'')")
			default:
				b.WriteString("?")
			}
		}
		b.WriteString(")")
	}
	return b.String()
}

// spendArgs appends rows' column values, in spendColumns' order, to args.
func spendArgs(args []any, rows []SpendRow) []any {
	for _, r := range rows {
		args = append(args, r.RequestID, r.CallType, r.Model, r.Server, r.APIKey, r.KeyAlias, r.TeamID,
			r.UserID, r.EndUser, r.OrganizationID, r.Status, r.Fault, r.Spend,
			r.StartTime.UnixMilli(), r.EndTime.UnixMilli())
	}
	return args
}

// sqliteSpendArgs is spendArgs with NULL for an empty text, which the prepared INSERTs store
// as the empty text (coalesce): binding a text copies it into SQLite's allocator (a malloc and
// a free per text per row), binding NULL copies nothing.
func sqliteSpendArgs(args []any, rows []SpendRow) []any {
	for _, r := range rows {
		for _, v := range [spendNumText]string{r.RequestID, r.CallType, r.Model, r.Server, r.APIKey, r.KeyAlias,
			r.TeamID, r.UserID, r.EndUser, r.OrganizationID, r.Status, r.Fault} {
			if v == "" {
				args = append(args, nil)
			} else {
				args = append(args, v)
			}
		}
		args = append(args, r.Spend, r.StartTime.UnixMilli(), r.EndTime.UnixMilli())
	}
	return args
}

// spendChunkBits: the largest prepared spend INSERT takes 1<<spendChunkBits rows.
const spendChunkBits = 8

// spendInserts are the prepared INSERTs of 1, 2, 4, … 1<<spendChunkBits spend rows on the
// SQLite spend connection: a batch is inserted as the fewest of them its size adds up to
// (500 rows: 256 + 128 + 64 + 32 + 16 + 4), so no batch parses its INSERT, which was a
// third of a batch's cost; at most spendChunkBits+1 statements are kept. With them are
// RecordSpend's other statements (spendStmt), prepared once too: parsing the daily_spend
// upsert each batch cost ~175 of a one-row batch's ~730 cpu-µs (after a pause).
type spendInserts struct {
	mu     sync.Mutex
	stmts  [spendChunkBits + 1]*sql.Stmt // stmts[k] inserts 1<<k rows; nil until needed
	others [spendStmts]*sql.Stmt         // others[i] runs i.sql(); nil until prepared
	closed bool                          // close ran: nothing is prepared any more
}

// spendStmt names one of RecordSpend's statements besides its INSERTs.
type spendStmt int

const (
	spendAddKey   spendStmt = iota // addKeySpendSQL
	spendAddTeam                   // addTeamSpendSQL
	spendAddDaily                  // addDailySpendSQL
	spendStmts                     // how many
)

// sql is the statement's text.
func (i spendStmt) sql() string {
	return [spendStmts]string{addKeySpendSQL, addTeamSpendSQL, addDailySpendSQL}[i]
}

// prepare prepares on db the statements a batch of n rows needs. It runs before the batch's
// transaction begins: the spend connection is the only one, and the transaction holds it.
func (p *spendInserts) prepare(ctx context.Context, db *sql.DB, n int) error {
	for i := range spendStmts {
		if err := p.ensure(ctx, db, &p.others[i], i.sql()); err != nil {
			return fmt.Errorf("store: preparing the spend statements: %w", err)
		}
	}
	for ; n > 0; n -= 1 << spendChunk(n) {
		k := spendChunk(n)
		if err := p.ensure(ctx, db, &p.stmts[k], spendInsertSQL(1<<k, false)); err != nil {
			return fmt.Errorf("store: preparing the spend insert: %w", err)
		}
	}
	return nil
}

// ensure makes *slot (one of p's) a statement of text prepared on db. It prepares without
// p.mu held: PrepareContext waits for the one spend connection, which another batch's
// transaction may hold while it takes p.mu to find its statements. A statement another
// batch prepared meanwhile is kept and this one closed.
func (p *spendInserts) ensure(ctx context.Context, db *sql.DB, slot **sql.Stmt, text string) error {
	p.mu.Lock()
	have, closed := *slot != nil, p.closed
	p.mu.Unlock()
	switch {
	case closed:
		return errors.New("the store is closed")
	case have:
		return nil
	}
	st, err := db.PrepareContext(ctx, text)
	if err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if *slot != nil || p.closed {
		return st.Close()
	}
	*slot = st
	return nil
}

// insert inserts rows in tx through the prepared statements (prepare made them).
func (p *spendInserts) insert(ctx context.Context, t *tx, rows []SpendRow) error {
	args := make([]any, 0, min(len(rows), 1<<spendChunkBits)*spendNumCols)
	for len(rows) > 0 {
		k := spendChunk(len(rows))
		p.mu.Lock()
		st := p.stmts[k]
		p.mu.Unlock()
		if st == nil { // closed meanwhile
			return errors.New("store: inserting spend logs: the store is closed")
		}
		args = sqliteSpendArgs(args[:0], rows[:1<<k])
		if _, err := t.StmtContext(ctx, st).ExecContext(ctx, args...); err != nil {
			return fmt.Errorf("store: inserting spend logs: %w", err)
		}
		rows = rows[1<<k:]
	}
	return nil
}

// exec runs statement i in t through its prepared statement (prepare made it).
func (p *spendInserts) exec(ctx context.Context, t *tx, i spendStmt, args ...any) error {
	p.mu.Lock()
	st := p.others[i]
	p.mu.Unlock()
	if st == nil { // closed meanwhile
		return errors.New("store: the store is closed")
	}
	_, err := t.StmtContext(ctx, st).ExecContext(ctx, args...)
	return err
}

// close closes the prepared statements.
func (p *spendInserts) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	for _, sts := range [][]*sql.Stmt{p.stmts[:], p.others[:]} {
		for k, st := range sts {
			if st != nil {
				_ = st.Close()
				sts[k] = nil
			}
		}
	}
}

// spendChunk is k of the largest prepared INSERT (1<<k rows) that n rows fill.
func spendChunk(n int) int {
	return min(bits.Len(uint(n))-1, spendChunkBits)
}

// SpendFilter selects spend rows; a zero field selects all. Start and End bound start_time
// (Start inclusive, End exclusive).
type SpendFilter struct {
	APIKey    string
	UserID    string
	RequestID string
	Start     time.Time
	End       time.Time
	Limit     int // at most this many rows, the newest first; 0 means 1000
}

// SpendLogs returns the spend rows f selects, newest first.
func (s *Store) SpendLogs(ctx context.Context, f SpendFilter) ([]SpendRow, error) {
	cond, args := spendConditions(f)
	limit := f.Limit
	if limit <= 0 {
		limit = 1000
	}
	args = append(args, limit)
	return queryRows(ctx, s.db, "listing spend logs", scanSpend,
		`SELECT `+spendColumns+` FROM spend_logs`+cond+fmt.Sprintf(` ORDER BY start_time DESC, request_id LIMIT $%d`, len(args)), args...)
}

// CountSpendLogs returns how many spend rows f selects (Limit ignored).
func (s *Store) CountSpendLogs(ctx context.Context, f SpendFilter) (int64, error) {
	cond, args := spendConditions(f)
	var n int64
	if err := s.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM spend_logs`+cond, args...).Scan(&n); err != nil {
		return 0, fmt.Errorf("store: counting spend logs: %w", err)
	}
	return n, nil
}

func spendConditions(f SpendFilter) (string, []any) {
	var conds []string
	var args []any
	add := func(expr string, v any) {
		args = append(args, v)
		conds = append(conds, fmt.Sprintf(expr, len(args)))
	}
	if f.APIKey != "" {
		add("api_key = $%d", f.APIKey)
	}
	if f.UserID != "" {
		add("user_id = $%d", f.UserID)
	}
	if f.RequestID != "" {
		add("request_id = $%d", f.RequestID)
	}
	if !f.Start.IsZero() {
		add("start_time >= $%d", f.Start.UnixMilli())
	}
	if !f.End.IsZero() {
		add("start_time < $%d", f.End.UnixMilli())
	}
	if len(conds) == 0 {
		return "", nil
	}
	return " WHERE " + strings.Join(conds, " AND "), args
}

func scanSpend(r scanner) (SpendRow, error) {
	var (
		row        SpendRow
		start, end int64
	)
	if err := r.Scan(&row.RequestID, &row.CallType, &row.Model, &row.Server, &row.APIKey, &row.KeyAlias,
		&row.TeamID, &row.UserID, &row.EndUser, &row.OrganizationID, &row.Status, &row.Fault, &row.Spend,
		&start, &end); err != nil {
		return SpendRow{}, err
	}
	row.StartTime, row.EndTime = fromMillis(start), fromMillis(end)
	return row, nil
}

// DailySpend is one daily_spend row: a day's calls and spend for one key, team and server.
type DailySpend struct {
	Date           string // YYYY-MM-DD, UTC
	APIKey         string
	TeamID         string
	Server         string
	Spend          float64
	APIRequests    int64
	FailedRequests int64
}

// DailySpendFilter selects daily rows; a zero field selects all. Start and End are dates
// (YYYY-MM-DD), both inclusive.
type DailySpendFilter struct {
	APIKey, TeamID, Server string
	Start, End             string
}

// DailySpends returns the daily rows f selects, by date, key, team and server.
func (s *Store) DailySpends(ctx context.Context, f DailySpendFilter) ([]DailySpend, error) {
	var conds []string
	var args []any
	for _, c := range []struct{ expr, v string }{
		{"api_key = $%d", f.APIKey}, {"team_id = $%d", f.TeamID}, {"mcp_server = $%d", f.Server},
		{"date >= $%d", f.Start}, {"date <= $%d", f.End},
	} {
		if c.v != "" {
			args = append(args, c.v)
			conds = append(conds, fmt.Sprintf(c.expr, len(args)))
		}
	}
	cond := ""
	if len(conds) > 0 {
		cond = " WHERE " + strings.Join(conds, " AND ")
	}
	return queryRows(ctx, s.db, "listing daily spend", func(r scanner) (DailySpend, error) {
		var d DailySpend
		err := r.Scan(&d.Date, &d.APIKey, &d.TeamID, &d.Server, &d.Spend, &d.APIRequests, &d.FailedRequests)
		return d, err
	}, `SELECT `+dailyColumns+` FROM daily_spend`+cond+` ORDER BY date, api_key, team_id, mcp_server`, args...)
}

func nullFloat(f sql.NullFloat64) *float64 {
	if !f.Valid {
		return nil
	}
	return &f.Float64
}
