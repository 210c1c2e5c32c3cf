package store

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"
)

// Postgres connection pool defaults (database/sql's pool over pgx).
const (
	// DefaultMaxOpenConns bounds the pool's connections per Store (per replica).
	DefaultMaxOpenConns = 10
	// connMaxLifetime retires a pooled connection after this long, so a failover or a
	// rebalanced proxy is followed without a restart.
	connMaxLifetime = 30 * time.Minute
	// connMaxIdleTime closes a pooled connection unused for this long.
	connMaxIdleTime = 5 * time.Minute
)

const (
	// notifyChannel is the channel a write's changed cache keys are sent on.
	notifyChannel = "mcpgw_store"
	// maxNotifyPayload is the payload size one pg_notify carries here (Postgres refuses 8000
	// bytes or more).
	maxNotifyPayload = 7900
	// clearPayload asks every replica to forget its whole cache (a cache key too long to send).
	clearPayload = "*"
	// writeLockKey is the pg_advisory_xact_lock every write transaction takes ("mcpgw" in ASCII).
	writeLockKey = 0x6d63706777
	// pgUniqueViolation is the SQLSTATE of a UNIQUE constraint failure.
	pgUniqueViolation = "23505"
)

// pgState is what a Store on Postgres has beyond the shared queries.
type pgState struct {
	listener *listener
	// origin names this store in its notifications, so its own listener skips them: its
	// writes are forgotten locally on commit already.
	origin string
}

// OpenPostgres opens the Postgres database at url (a postgres:// URL or a key=value
// connection string), applies every pending migration (under goose's advisory lock, so
// replicas starting together apply each once), and starts the listener that forgets what
// other replicas change. Errors never contain the URL's password.
func OpenPostgres(ctx context.Context, url string, opts Options) (*Store, error) {
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		// pgx redacts the password from its parse errors only on a best-effort basis.
		return nil, errors.New("store: the database URL does not parse; want postgres://USER:PASSWORD@HOST:PORT/DATABASE")
	}
	redact := func(err error) error { return redactPassword(err, cfg.Password) }
	db := stdlib.OpenDB(*cfg)
	maxOpen := opts.MaxOpenConns
	if maxOpen <= 0 {
		maxOpen = DefaultMaxOpenConns
	}
	db.SetMaxOpenConns(maxOpen)
	db.SetMaxIdleConns(maxOpen)
	db.SetConnMaxLifetime(connMaxLifetime)
	db.SetConnMaxIdleTime(connMaxIdleTime)
	if err := db.PingContext(ctx); err != nil {
		_ = db.Close()
		return nil, redact(fmt.Errorf("store: connecting to Postgres: %w", err))
	}
	locker, err := lock.NewPostgresSessionLocker()
	if err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("store: migrations: %w", err)
	}
	if err := migrate(ctx, db, goose.DialectPostgres, opts.logger(), goose.WithSessionLocker(locker)); err != nil {
		_ = db.Close()
		return nil, redact(err)
	}
	s := &Store{db: db, cache: newKeyCache(opts.CacheSize, opts.CacheTTL), now: opts.clock()}
	origin := newOrigin()
	l, err := startListener(ctx, cfg, s.cache, opts.logger(), origin, s.serversChanged)
	if err != nil {
		_ = db.Close()
		return nil, redact(err)
	}
	s.pg = &pgState{listener: l, origin: origin}
	return s, nil
}

// redactPassword replaces password in err's message (a server or driver may quote its input).
func redactPassword(err error, password string) error {
	if err == nil || password == "" || !strings.Contains(err.Error(), password) {
		return err
	}
	return errors.New(strings.ReplaceAll(err.Error(), password, "xxxxx"))
}

// lockWrites makes t wait for every other write transaction on the database to end, as
// SQLite's BEGIN IMMEDIATE does: a read-then-write in one transaction sees every earlier
// write and no concurrent one, on every replica. The lock ends with the transaction.
func lockWrites(ctx context.Context, t *tx) error {
	if _, err := t.ExecContext(ctx, `SELECT pg_advisory_xact_lock($1)`, int64(writeLockKey)); err != nil {
		return fmt.Errorf("store: taking the write lock: %w", err)
	}
	return nil
}

// newOrigin returns a random name for one store's notifications.
func newOrigin() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return hex.EncodeToString(b)
}

// notifyChanged sends the cache keys t touched on notifyChannel, from origin; Postgres
// delivers them to every listening replica when (and only if) t commits.
func notifyChanged(ctx context.Context, t *tx, origin string) error {
	for _, payload := range notifyPayloads(origin, t.changed) {
		if _, err := t.ExecContext(ctx, `SELECT pg_notify($1, $2)`, notifyChannel, payload); err != nil {
			return fmt.Errorf("store: notifying other replicas: %w", err)
		}
	}
	return nil
}

// notifyPayloads packs keys (deduplicated) into payloads "<origin>|<JSON array>" of at most
// maxNotifyPayload bytes; a key too long for one payload turns the whole lot into one
// "<origin>|" + clearPayload.
func notifyPayloads(origin string, keys []string) []string {
	var out []string
	seen := make(map[string]bool, len(keys))
	var batch []string
	prefix := origin + "|"
	empty := len(prefix) + 2 // the origin and the brackets
	size := empty
	flush := func() {
		if len(batch) > 0 {
			b, _ := json.Marshal(batch)
			out = append(out, prefix+string(b))
		}
		batch, size = nil, empty
	}
	for _, k := range keys {
		if seen[k] {
			continue
		}
		seen[k] = true
		enc, _ := json.Marshal(k)
		if empty+len(enc) > maxNotifyPayload {
			return []string{prefix + clearPayload}
		}
		if size+len(enc)+1 > maxNotifyPayload {
			flush()
		}
		batch = append(batch, k)
		size += len(enc) + 1
	}
	flush()
	return out
}

// applyPayload forgets the cache keys in one notification, unless it is from self (the
// store's own writes, forgotten on commit); anything but a JSON array of strings after the
// origin (clearPayload included) forgets the whole cache. It reports whether the stored
// servers may have changed: the keys name serversCacheKey, or the whole cache was forgotten.
func applyPayload(c *keyCache, self, payload string) (servers bool) {
	if origin, rest, ok := strings.Cut(payload, "|"); ok {
		if origin == self {
			return false
		}
		payload = rest
	}
	var keys []string
	if err := json.Unmarshal([]byte(payload), &keys); err != nil {
		c.reset(false)
		return true
	}
	for _, k := range keys {
		c.forget(k)
		servers = servers || k == serversCacheKey
	}
	return servers
}
