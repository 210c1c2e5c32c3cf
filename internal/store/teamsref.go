package store

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Errors about a referenced row, carried by a RefError; callers match them with errors.Is.
var (
	// ErrForeign: a team_id, organization_id or user_id a write refers to does not exist.
	ErrForeign = errors.New("referenced row does not exist")
	// ErrInUse: the row to delete is still referred to (an organisation with teams, users or keys).
	ErrInUse = errors.New("row still in use")
	// ErrExists: a row with that id (or that membership) already exists.
	ErrExists = errors.New("row already exists")
)

// RefError is a write refused because of one row: the row to change is missing (ErrNotFound),
// a row it refers to is missing (ErrForeign), its alias or id is taken (ErrDuplicateAlias,
// ErrExists), or it is still referred to (ErrInUse). Field names the request field at fault.
type RefError struct {
	Err   error
	Field string
	Msg   string
}

func (e *RefError) Error() string { return e.Msg }
func (e *RefError) Unwrap() error { return e.Err }

func refErr(base error, field, format string, args ...any) error {
	return &RefError{Err: base, Field: field, Msg: fmt.Sprintf(format, args...)}
}

// Cache keys of the non-key rows (see keyCacheKey).
func teamCacheKey(id string) string    { return "team:" + id }
func orgCacheKey(id string) string     { return "org:" + id }
func userCacheKey(id string) string    { return "user:" + id }
func endUserCacheKey(id string) string { return "enduser:" + id }

// lockRow reports whether the row of table with col = id exists and, on Postgres, locks it
// until the transaction ends (a no-op UPDATE takes the row lock; SQLite's write transaction
// already excludes every other writer). A writer that refers to a row locks it first, and a
// delete removes the parent row before looking for its children, so a reference written
// concurrently with the delete is either seen by the delete or refused.
func lockRow(ctx context.Context, tx *tx, table, col, id string) (bool, error) {
	res, err := tx.ExecContext(ctx, `UPDATE `+table+` SET updated_at = updated_at WHERE `+col+` = $1`, id)
	if err != nil {
		return false, fmt.Errorf("store: reading %s: %w", table, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("store: reading %s: %w", table, err)
	}
	return n > 0, nil
}

// checkRefs refuses (ErrForeign) a team_id or organization_id that is set and does not exist.
func checkRefs(ctx context.Context, tx *tx, teamID, orgID string) error {
	for _, r := range [...]struct{ table, col, id, what string }{
		{"teams", "team_id", teamID, "team_id"}, {"organizations", "organization_id", orgID, "organization_id"},
	} {
		if r.id == "" {
			continue
		}
		ok, err := lockRow(ctx, tx, r.table, r.col, r.id)
		if err != nil {
			return err
		}
		if !ok {
			return refErr(ErrForeign, r.what, "%s '%s' does not exist", r.what, r.id)
		}
	}
	return nil
}

// exists reports whether query (a SELECT COUNT(*)) counts a row.
func exists(ctx context.Context, tx *tx, query string, args ...any) (bool, error) {
	var n int
	if err := tx.QueryRowContext(ctx, query, args...).Scan(&n); err != nil {
		return false, fmt.Errorf("store: checking: %w", err)
	}
	return n > 0, nil
}

// uniqueRefused turns the schema's own uniqueness failure on col (a race the check before
// the write did not see) into a RefError naming field; other errors are returned as they are.
func uniqueRefused(err error, col, field, msg string) error {
	if err == nil {
		return nil
	}
	s := strings.ToLower(err.Error())
	if strings.Contains(s, "unique") && strings.Contains(s, col) {
		return refErr(ErrDuplicateAlias, field, "%s", msg)
	}
	return err
}

// rowJSON is the JSON kept in TEXT columns: metadata ({} when unset), object_permission and
// mcp_rpm_limit ({} when unset).
func metadataText(m json.RawMessage) string {
	if len(m) == 0 {
		return "{}"
	}
	return string(m)
}

func permissionText(p Permission) string {
	b, _ := json.Marshal(p) // a struct of strings: never fails
	return string(b)
}

func limitsText(l map[string]int64) string {
	if len(l) == 0 {
		return "{}"
	}
	b, _ := json.Marshal(l) // never fails
	return string(b)
}

func parsePermission(s string) (Permission, error) {
	var p Permission
	if err := json.Unmarshal([]byte(s), &p); err != nil {
		return p, fmt.Errorf("object_permission: %w", err)
	}
	return p, nil
}

func parseLimits(s string) (map[string]int64, error) {
	var l map[string]int64
	if err := json.Unmarshal([]byte(s), &l); err != nil {
		return nil, fmt.Errorf("mcp_rpm_limit: %w", err)
	}
	if len(l) == 0 {
		return nil, nil
	}
	return l, nil
}

func fromMillis(ms int64) time.Time { return time.UnixMilli(ms).UTC() }

func nullInt(n sql.NullInt64) *int64 {
	if !n.Valid {
		return nil
	}
	return &n.Int64
}

// nowMillis is the store's clock, truncated to the stored precision.
func (s *Store) nowMillis() time.Time { return s.now().UTC().Truncate(time.Millisecond) }

// deleteKeysWhere deletes the keys matching col = id, forgetting each one's cached lookup.
func deleteKeysWhere(ctx context.Context, tx *tx, col, id string) error {
	tokens, err := queryRows(ctx, tx, "finding keys", scanString, `SELECT token FROM keys WHERE `+col+` = $1`, id)
	if err != nil {
		return err
	}
	for _, t := range tokens {
		tx.touch(keyCacheKey(t))
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM keys WHERE `+col+` = $1`, id); err != nil {
		return fmt.Errorf("store: deleting keys: %w", err)
	}
	return nil
}

// NewID returns a random (version 4) UUID: the id of a row created without
// one (teams, users, organisations, servers). Spend rows take NewTimeID.
func NewID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return formatUUID(&b)
}

// formatUUID writes b in the canonical 8-4-4-4-12 hex form.
func formatUUID(b *[16]byte) string {
	var out [36]byte
	hex.Encode(out[0:8], b[0:4])
	out[8] = '-'
	hex.Encode(out[9:13], b[4:6])
	out[13] = '-'
	hex.Encode(out[14:18], b[6:8])
	out[18] = '-'
	hex.Encode(out[19:23], b[8:10])
	out[23] = '-'
	hex.Encode(out[24:], b[10:16])
	return string(out[:])
}
