package store

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// KeyPrefix starts every generated key, as LiteLLM's do.
const KeyPrefix = "sk-"

// Permission is a key's object_permission, with LiteLLM's field names.
type Permission struct {
	MCPServers         []string            `json:"mcp_servers,omitempty"`
	MCPAccessGroups    []string            `json:"mcp_access_groups,omitempty"`
	MCPToolPermissions map[string][]string `json:"mcp_tool_permissions,omitempty"`
	MCPToolsets        []string            `json:"mcp_toolsets,omitempty"`
	BlockedTools       []string            `json:"blocked_tools,omitempty"`
}

// Key is one stored key: everything but its secret.
type Key struct {
	// Token is the hex SHA-256 of the secret: the key's id.
	Token string
	// KeyName is "sk-...<last 4>", for display.
	KeyName             string
	Alias               string
	UserID              string
	TeamID              string
	OrganizationID      string
	Metadata            json.RawMessage // a JSON object
	Permission          Permission
	Expires             *time.Time // nil: never
	Blocked             bool
	RPMLimit            *int64
	MaxParallelRequests *int64
	MCPRPMLimit         map[string]int64
	CreatedAt           time.Time
	UpdatedAt           time.Time
	// Spend is what the key's calls have cost so far (kept by RecordSpend); MaxBudget, when
	// set, is the spend past which its tool calls are refused.
	Spend     float64
	MaxBudget *float64
	// Budget is the period after which Spend returns to 0 (budget_duration); Update sets
	// a new period (and its first reset) when Budget.Duration changes.
	Budget Budget
}

// NewKey is what Generate stores; the zero value is a key without limits, expiry or permissions.
type NewKey struct {
	Alias               string
	UserID              string
	TeamID              string
	OrganizationID      string
	Metadata            json.RawMessage // nil or a JSON object
	Permission          Permission
	Expires             *time.Time
	RPMLimit            *int64
	MaxParallelRequests *int64
	MCPRPMLimit         map[string]int64
	MaxBudget           *float64
	// BudgetDuration (LiteLLM's budget_duration, e.g. "30d") resets the key's spend every
	// period, the first one after creation; "" never.
	BudgetDuration string
}

// Hash returns the token of secret: its hex SHA-256.
func Hash(secret string) string {
	d := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(d[:])
}

// newSecret returns KeyPrefix and 256 random bits, base64url.
func newSecret() string {
	raw := make([]byte, 32)
	_, _ = rand.Read(raw) // never fails (crypto/rand)
	return KeyPrefix + base64.RawURLEncoding.EncodeToString(raw)
}

const keyColumns = `token, key_name, key_alias, user_id, team_id, organization_id, metadata,
	object_permission, expires, blocked, rpm_limit, max_parallel_requests, mcp_rpm_limit, created_at, updated_at`

// keyReadColumns are what reads of a key select: keyColumns, then what RecordSpend keeps.
const keyReadColumns = keyColumns + `, spend, max_budget, budget_duration, budget_reset_at`

// Generate stores a new key and returns its secret (shown once; only its hash is kept) and the
// stored key. A key_alias already in use is ErrDuplicateAlias and nothing is written.
func (s *Store) Generate(ctx context.Context, nk NewKey) (string, Key, error) {
	secret := newSecret()
	now := s.now().UTC().Truncate(time.Millisecond)
	k := Key{
		Token: Hash(secret), KeyName: KeyPrefix + "..." + secret[len(secret)-4:],
		Alias: nk.Alias, UserID: nk.UserID, TeamID: nk.TeamID, OrganizationID: nk.OrganizationID,
		Metadata: nk.Metadata, Permission: nk.Permission, Expires: nk.Expires,
		RPMLimit: nk.RPMLimit, MaxParallelRequests: nk.MaxParallelRequests, MCPRPMLimit: nk.MCPRPMLimit,
		MaxBudget: nk.MaxBudget, CreatedAt: now, UpdatedAt: now,
	}
	if len(k.Metadata) == 0 {
		k.Metadata = json.RawMessage("{}")
	}
	if k.Expires != nil {
		e := k.Expires.UTC().Truncate(time.Millisecond)
		k.Expires = &e
	}
	perm, err := json.Marshal(k.Permission)
	if err != nil {
		return "", Key{}, fmt.Errorf("store: object_permission: %w", err)
	}
	limits, err := json.Marshal(k.MCPRPMLimit)
	if err != nil {
		return "", Key{}, fmt.Errorf("store: mcp_rpm_limit: %w", err)
	}
	if k.MCPRPMLimit == nil {
		limits = []byte("{}")
	}
	err = s.inTx(ctx, func(tx *tx) error {
		if k.Alias != "" {
			if taken, err := aliasTaken(ctx, tx, k.Alias); err != nil || taken {
				return errors.Join(err, boolErr(taken, ErrDuplicateAlias))
			}
		}
		if err := checkRefs(ctx, tx, k.TeamID, k.OrganizationID); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO keys (`+keyColumns+`, max_budget)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)`,
			k.Token, k.KeyName, nullString(k.Alias), k.UserID, k.TeamID, k.OrganizationID, string(k.Metadata),
			string(perm), millis(k.Expires), false, k.RPMLimit, k.MaxParallelRequests, string(limits),
			now.UnixMilli(), now.UnixMilli(), k.MaxBudget)
		tx.touch(keyCacheKey(k.Token)) // a refusal remembered for this secret no longer holds
		if err != nil || nk.BudgetDuration == "" {
			return err
		}
		k.Budget.Duration = nk.BudgetDuration
		return setBudget(ctx, tx, "keys", "token", k.Token, &k.Budget, now)
	})
	if err != nil {
		return "", Key{}, err
	}
	return secret, k, nil
}

func boolErr(b bool, err error) error {
	if b {
		return err
	}
	return nil
}

func aliasTaken(ctx context.Context, tx *tx, alias string) (bool, error) {
	var n int
	if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM keys WHERE key_alias = $1`, alias).Scan(&n); err != nil {
		return false, fmt.Errorf("store: checking key_alias: %w", err)
	}
	return n > 0, nil
}

// Get returns the key with token (ErrNotFound when none), read from the database.
func (s *Store) Get(ctx context.Context, token string) (Key, error) {
	return readKey(ctx, s.reads(), token)
}

// readKey reads the key with token on q; none is ErrNotFound.
func readKey(ctx context.Context, q querier, token string) (Key, error) {
	return queryRow(ctx, q, "a key", scanKey, func() error { return ErrNotFound },
		`SELECT `+keyReadColumns+` FROM keys WHERE token = $1`, token)
}

// Lookup returns the key with token for authentication, through this replica's short-lived
// cache (see Options.CacheTTL); found is false for no such key.
func (s *Store) Lookup(ctx context.Context, token string) (Key, bool, error) {
	return lookupCached(ctx, s, keyCacheKey(token), func() (Key, error) { return s.Get(ctx, token) })
}

// Delete removes every key in tokens, all or none: when one does not exist the answer is
// ErrNotFound (wrapped with how many were missing) and nothing is deleted.
func (s *Store) Delete(ctx context.Context, tokens []string) error {
	err := s.inTx(ctx, func(tx *tx) error {
		missing := 0
		for _, t := range tokens {
			tx.touch(keyCacheKey(t))
			res, err := tx.ExecContext(ctx, `DELETE FROM keys WHERE token = $1`, t)
			if err != nil {
				return fmt.Errorf("store: deleting a key: %w", err)
			}
			if n, _ := res.RowsAffected(); n == 0 {
				missing++
			}
		}
		if missing > 0 {
			return fmt.Errorf("%w: %d of %d keys do not exist", ErrNotFound, missing, len(tokens))
		}
		return nil
	})
	return err
}

// SetBlocked blocks or unblocks the key with token and returns it as stored.
func (s *Store) SetBlocked(ctx context.Context, token string, blocked bool) (Key, error) {
	var k Key
	err := s.inTx(ctx, func(tx *tx) error {
		tx.touch(keyCacheKey(token))
		res, err := tx.ExecContext(ctx, `UPDATE keys SET blocked = $1, updated_at = $2 WHERE token = $3`,
			blocked, s.now().UnixMilli(), token)
		if err != nil {
			return fmt.Errorf("store: blocking a key: %w", err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return ErrNotFound
		}
		k, err = scanKey(tx.QueryRowContext(ctx, `SELECT `+keyReadColumns+` FROM keys WHERE token = $1`, token))
		return err
	})
	return k, err
}

// uniqueAlias turns the schema's own key_alias uniqueness failure (a race the check before the
// write did not see) into ErrDuplicateAlias.
func uniqueAlias(err error) error {
	if uniqueViolation(err, "keys", "key_alias") {
		return ErrDuplicateAlias
	}
	return err
}

func scanKey(r scanner) (Key, error) {
	var (
		k                    Key
		alias                sql.NullString
		meta, perm, limits   string
		expires, rpm, maxPar sql.NullInt64
		created, updated     int64
		budget               sql.NullFloat64
		period               sql.NullString
		reset                sql.NullInt64
	)
	if err := r.Scan(&k.Token, &k.KeyName, &alias, &k.UserID, &k.TeamID, &k.OrganizationID, &meta, &perm,
		&expires, &k.Blocked, &rpm, &maxPar, &limits, &created, &updated, &k.Spend, &budget, &period, &reset); err != nil {
		return Key{}, err
	}
	k.Alias = alias.String
	k.Metadata = json.RawMessage(meta)
	if err := json.Unmarshal([]byte(perm), &k.Permission); err != nil {
		return Key{}, fmt.Errorf("object_permission: %w", err)
	}
	if err := json.Unmarshal([]byte(limits), &k.MCPRPMLimit); err != nil {
		return Key{}, fmt.Errorf("mcp_rpm_limit: %w", err)
	}
	if len(k.MCPRPMLimit) == 0 {
		k.MCPRPMLimit = nil
	}
	if expires.Valid {
		t := time.UnixMilli(expires.Int64).UTC()
		k.Expires = &t
	}
	if rpm.Valid {
		k.RPMLimit = &rpm.Int64
	}
	if maxPar.Valid {
		k.MaxParallelRequests = &maxPar.Int64
	}
	k.CreatedAt, k.UpdatedAt = time.UnixMilli(created).UTC(), time.UnixMilli(updated).UTC()
	k.MaxBudget = nullFloat(budget)
	k.Budget = scanBudget(period, reset)
	return k, nil
}

func nullString(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func millis(t *time.Time) any {
	if t == nil {
		return nil
	}
	return t.UnixMilli()
}
