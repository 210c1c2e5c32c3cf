package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Update changes the key with token by change, in one transaction: the key is read, changed
// and written back whole, so concurrent updates never mix. A key_alias another key has is
// ErrDuplicateAlias; a missing key is ErrNotFound; either way nothing is written. The token,
// key_name, blocked and created_at are not changed.
func (s *Store) Update(ctx context.Context, token string, change func(*Key)) (Key, error) {
	var k Key
	err := s.inTx(ctx, func(tx *tx) error {
		var err error
		k, err = s.updateTx(ctx, tx, token, change)
		return err
	})
	if err != nil {
		return Key{}, err
	}
	return k, nil
}

// updateTx is Update inside tx: it reads the key with token, applies change and writes it back.
func (s *Store) updateTx(ctx context.Context, tx *tx, token string, change func(*Key)) (Key, error) {
	tx.touch(keyCacheKey(token))
	k, err := readKey(ctx, tx, token)
	if err != nil {
		return Key{}, err
	}
	oldAlias, oldTeam, oldOrg, oldBudget := k.Alias, k.TeamID, k.OrganizationID, k.Budget
	change(&k)
	k.Token = token
	if k.Alias != "" && k.Alias != oldAlias {
		if taken, err := aliasTaken(ctx, tx, k.Alias); err != nil || taken {
			return Key{}, errors.Join(err, boolErr(taken, ErrDuplicateAlias))
		}
	}
	if err := checkRefs(ctx, tx, changed(k.TeamID, oldTeam), changed(k.OrganizationID, oldOrg)); err != nil {
		return Key{}, err
	}
	if len(k.Metadata) == 0 {
		k.Metadata = json.RawMessage("{}")
	}
	if k.Expires != nil {
		e := k.Expires.UTC().Truncate(time.Millisecond)
		k.Expires = &e
	}
	k.UpdatedAt = s.now().UTC().Truncate(time.Millisecond)
	perm, _ := json.Marshal(k.Permission)
	limits := []byte("{}")
	if k.MCPRPMLimit != nil {
		limits, _ = json.Marshal(k.MCPRPMLimit)
	}
	_, err = tx.ExecContext(ctx, `UPDATE keys SET key_alias = $1, user_id = $2, team_id = $3,
		organization_id = $4, metadata = $5, object_permission = $6, expires = $7, rpm_limit = $8,
		max_parallel_requests = $9, mcp_rpm_limit = $10, updated_at = $11, max_budget = $13 WHERE token = $12`,
		nullString(k.Alias), k.UserID, k.TeamID, k.OrganizationID, string(k.Metadata), string(perm),
		millis(k.Expires), k.RPMLimit, k.MaxParallelRequests, string(limits), k.UpdatedAt.UnixMilli(), token, k.MaxBudget)
	if err != nil {
		return Key{}, fmt.Errorf("store: updating a key: %w", err)
	}
	if k.Budget.Duration == oldBudget.Duration {
		k.Budget = oldBudget
	} else if err := setBudget(ctx, tx, "keys", "token", token, &k.Budget, k.UpdatedAt); err != nil {
		return Key{}, err
	}
	return k, nil
}

// ListQuery selects keys for List; empty filters match every key.
type ListQuery struct {
	UserID, TeamID, OrganizationID, Alias string
	// Offset and Limit page the keys, oldest first (then by token).
	Offset, Limit int
}

// List returns one page of the keys matching q and how many match in all.
func (s *Store) List(ctx context.Context, q ListQuery) ([]Key, int, error) {
	var where []string
	var args []any
	for _, f := range [...]struct{ col, val string }{
		{"user_id", q.UserID}, {"team_id", q.TeamID}, {"organization_id", q.OrganizationID}, {"key_alias", q.Alias},
	} {
		if f.val != "" {
			args = append(args, f.val)
			where = append(where, fmt.Sprintf("%s = $%d", f.col, len(args)))
		}
	}
	cond := ""
	if len(where) > 0 {
		cond = " WHERE " + strings.Join(where, " AND ")
	}
	var total int
	if err := s.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM keys`+cond, args...).Scan(&total); err != nil {
		return nil, 0, fmt.Errorf("store: counting keys: %w", err)
	}
	args = append(args, q.Limit, q.Offset)
	out, err := queryRows(ctx, s.db, "listing keys", scanKey, fmt.Sprintf(`SELECT %s FROM keys%s
		ORDER BY created_at, token LIMIT $%d OFFSET $%d`, keyReadColumns, cond, len(args)-1, len(args)), args...)
	if err != nil {
		return nil, 0, err
	}
	return out, total, nil
}

// changed is id when it differs from old, else "" (a reference kept as it was is not checked
// again: a key may predate the teams table).
func changed(id, old string) string {
	if id == old {
		return ""
	}
	return id
}
