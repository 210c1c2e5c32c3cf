package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// budgetResetBatch bounds how many keys (or teams) one ResetBudgets statement resets.
const budgetResetBatch = 1000

// Budget is a key's or team's budget period (LiteLLM's budget_duration): every Duration
// its spend returns to 0, next at ResetAt. The zero value never resets.
type Budget struct {
	Duration string     // as given, e.g. "30d"; "" for none
	ResetAt  *time.Time // nil without a Duration
}

// SpendAt is spend as budgets see it at now: 0 once the period's reset is due, even before
// a write or ResetBudgets has stored the reset.
func (b Budget) SpendAt(spend float64, now time.Time) float64 {
	if b.ResetAt != nil && !now.Before(*b.ResetAt) {
		return 0
	}
	return spend
}

// setBudget stores b's duration for the row of table whose idCol is id, with its first reset
// one period after now; b's ResetAt is set to it. table and idCol are the store's own names.
func setBudget(ctx context.Context, tx *tx, table, idCol, id string, b *Budget, now time.Time) error {
	d, err := ParseDuration(b.Duration)
	if err != nil {
		return fmt.Errorf("budget_duration: %w", err)
	}
	var ms, reset any
	b.ResetAt = nil
	if d > 0 {
		at := now.UTC().Truncate(time.Millisecond).Add(d)
		b.ResetAt = &at
		ms, reset = d.Milliseconds(), at.UnixMilli()
	}
	_, err = tx.ExecContext(ctx, `UPDATE `+table+` SET budget_duration = $1, budget_duration_ms = $2, budget_reset_at = $3 WHERE `+idCol+` = $4`,
		nullString(b.Duration), ms, reset, id)
	if err != nil {
		return fmt.Errorf("store: setting a budget period: %w", err)
	}
	return nil
}

// scanBudget turns the read columns into a Budget.
func scanBudget(duration sql.NullString, reset sql.NullInt64) Budget {
	b := Budget{Duration: duration.String}
	if reset.Valid {
		t := time.UnixMilli(reset.Int64).UTC()
		b.ResetAt = &t
	}
	return b
}

// addSpendSQL adds $1 to a row's spend, or, when its budget reset is due at $3 (unix ms),
// makes $1 the new period's spend and moves the reset one period past $3. The table name
// and id column are appended by the caller ("... WHERE token = $2").
const addSpendSQL = ` SET spend = CASE WHEN budget_reset_at <= $3 THEN $1 ELSE spend + $1 END,
	budget_reset_at = CASE WHEN budget_reset_at <= $3 THEN $3 + budget_duration_ms ELSE budget_reset_at END`

// ResetBudgets returns to 0 the spend of every key and team whose budget reset is due at now
// and moves their resets one period past now, at most budgetResetBatch rows of each per
// statement, until none is due; it forgets them from the lookup cache and returns how many
// it reset. Admission does not wait for it (Budget.SpendAt); it keeps what the API shows
// right for keys and teams without traffic.
func (s *Store) ResetBudgets(ctx context.Context, now time.Time) (int, error) {
	total := 0
	for _, t := range []struct{ table, id string }{{"keys", "token"}, {"teams", "team_id"}} {
		for {
			n, err := s.resetBatch(ctx, t.table, t.id, now)
			total += n
			if err != nil {
				return total, err
			}
			if n < budgetResetBatch {
				break
			}
		}
	}
	return total, nil
}

// resetBatch resets at most budgetResetBatch due rows of table in one transaction.
func (s *Store) resetBatch(ctx context.Context, table, idCol string, now time.Time) (int, error) {
	n := 0
	err := s.inTx(ctx, func(tx *tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT `+idCol+` FROM `+table+` WHERE budget_reset_at <= $1 LIMIT $2`, now.UnixMilli(), budgetResetBatch)
		if err != nil {
			return fmt.Errorf("store: finding due budget resets: %w", err)
		}
		var ids []string
		for rows.Next() {
			var id string
			if err := rows.Scan(&id); err != nil {
				rows.Close()
				return fmt.Errorf("store: finding due budget resets: %w", err)
			}
			ids = append(ids, id)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return fmt.Errorf("store: finding due budget resets: %w", err)
		}
		for _, id := range ids {
			if table == "keys" {
				tx.touch(keyCacheKey(id))
			} else {
				tx.touch(teamCacheKey(id))
			}
			if _, err := tx.ExecContext(ctx, `UPDATE `+table+` SET spend = 0, budget_reset_at = $1 + budget_duration_ms
				WHERE `+idCol+` = $2 AND budget_reset_at <= $1`, now.UnixMilli(), id); err != nil {
				return fmt.Errorf("store: resetting a budget: %w", err)
			}
		}
		n = len(ids)
		return nil
	})
	return n, err
}
