package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// querier is what a read runs on: the database, or a transaction (*tx) so that it sees the
// transaction's own writes.
type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// scanner is one row to scan: a *sql.Row or the current row of *sql.Rows.
type scanner interface{ Scan(dest ...any) error }

// queryRows runs query on q and returns every row it selects, scanned by scan; doing names the
// read in its errors ("listing teams"). The rows are closed when it returns, so the caller may
// run its next statement on the same transaction.
func queryRows[T any](ctx context.Context, q querier, doing string, scan func(scanner) (T, error),
	query string, args ...any) ([]T, error) {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("store: %s: %w", doing, err)
	}
	defer rows.Close()
	var out []T
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, fmt.Errorf("store: %s: %w", doing, err)
		}
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: %s: %w", doing, err)
	}
	return out, nil
}

// queryRow returns the one row query selects on q, scanned by scan. No row is missing()'s
// error (a RefError, or ErrNotFound for a key); what names the row in other errors ("a team").
func queryRow[T any](ctx context.Context, q querier, what string, scan func(scanner) (T, error),
	missing func() error, query string, args ...any) (T, error) {
	v, err := scan(q.QueryRowContext(ctx, query, args...))
	if errors.Is(err, sql.ErrNoRows) {
		var zero T
		return zero, missing()
	}
	if err != nil {
		var zero T
		return zero, fmt.Errorf("store: reading %s: %w", what, err)
	}
	return v, nil
}

// execOne runs query in tx, a write of one row; doing names it in errors ("deleting a team").
// A write that changed no row is missing()'s error, which rolls the transaction back.
func execOne(ctx context.Context, tx *tx, doing string, missing func() error, query string, args ...any) error {
	res, err := tx.ExecContext(ctx, query, args...)
	if err != nil {
		return fmt.Errorf("store: %s: %w", doing, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return missing()
	}
	return nil
}

// scanString scans a row of one text column.
func scanString(r scanner) (string, error) {
	var s string
	err := r.Scan(&s)
	return s, err
}

// notFound is the missing() of queryRow and execOne for a row that does not exist: a RefError
// matching ErrNotFound, naming field, its message built only when it is needed.
func notFound(field, format string, args ...any) func() error {
	return func() error { return refErr(ErrNotFound, field, format, args...) }
}
