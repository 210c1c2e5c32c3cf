package store

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/pressly/goose/v3"
	_ "modernc.org/sqlite" // the "sqlite" database/sql driver
)

// FileName is the SQLite database's name inside the data dir.
const FileName = "mcpgw.db"

// uriPathEscaper escapes what ends or changes a file: URI's path.
var uriPathEscaper = strings.NewReplacer("%", "%25", "#", "%23", "?", "%3F")

// busyTimeout is how long a statement waits for SQLite's write lock before failing.
const busyTimeout = 5 * time.Second

//go:embed migrations/*.sql
var migrations embed.FS

// Errors the store returns; callers match them with errors.Is.
var (
	// ErrNotFound: no key has that token.
	ErrNotFound = errors.New("key not found")
	// ErrDuplicateAlias: another key already has that key_alias.
	ErrDuplicateAlias = errors.New("key_alias already in use")
)

// Store is the gateway's persistent state (keys); it is safe for concurrent use.
type Store struct {
	db *sql.DB
	// spendDB is the connection RecordSpend writes through on SQLite (synchronous=NORMAL);
	// nil on Postgres, which writes spend through db.
	spendDB *sql.DB
	// spendInserts are spendDB's prepared INSERTs of spend rows (SQLite).
	spendInserts spendInserts
	cache        *keyCache
	now          func() time.Time
	// pg is set on Postgres: writes take the write lock and notify the other replicas, and
	// its listener forgets what they changed.
	pg *pgState
	// onServers is the OnServersChanged hook.
	onServers atomic.Pointer[func()]
	// readStmts are db's prepared reads by id on SQLite (nil on Postgres): see reads.
	readStmts *readStmts
}

// Options tunes a Store; the zero value is the documented defaults.
type Options struct {
	// CacheTTL is how long a key lookup is reused on this replica (default DefaultCacheTTL;
	// negative disables the cache).
	CacheTTL time.Duration
	// CacheSize bounds the cached lookups (default DefaultCacheSize).
	CacheSize int
	// Now is the store's clock (nil: time.Now): row timestamps and the lookup cache's ages.
	Now func() time.Time
	// Logger receives the migration log and, on Postgres, the invalidation listener's
	// connection changes; nil discards them.
	Logger *slog.Logger
	// MaxOpenConns bounds the Postgres connection pool (default DefaultMaxOpenConns; the
	// invalidation listener's one connection is not counted). SQLite ignores it.
	MaxOpenConns int
}

func (o Options) clock() func() time.Time {
	if o.Now == nil {
		return time.Now
	}
	return o.Now
}

func (o Options) logger() *slog.Logger {
	if o.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return o.Logger
}

// OpenSQLite opens (creating when missing) the SQLite database FileName in dir, in WAL mode
// with a busy timeout, and applies every pending migration.
func OpenSQLite(ctx context.Context, dir string, opts Options) (*Store, error) {
	path := filepath.Join(dir, FileName)
	// The path is escaped: in a file: URI a '#' or '?' in a directory name would otherwise
	// end the path, and the store would open another file.
	dsn := fmt.Sprintf("file:%s?_pragma=busy_timeout(%d)&_pragma=journal_mode(WAL)&_pragma=foreign_keys(1)&_txlock=immediate",
		uriPathEscaper.Replace(path), busyTimeout.Milliseconds())
	db, err := openSQLite(ctx, path, dsn)
	if err != nil {
		return nil, err
	}
	if err := migrate(ctx, db, goose.DialectSQLite3, opts.logger()); err != nil {
		_ = db.Close()
		return nil, err
	}
	// The spend log's own connection: synchronous is a per-connection setting (see the
	// package doc for the trade-off); one connection, so its writes queue in the writer.
	spendDB, err := openSQLite(ctx, path, dsn+"&_pragma=synchronous(NORMAL)")
	if err != nil {
		_ = db.Close()
		return nil, err
	}
	spendDB.SetMaxOpenConns(1)
	return &Store{db: db, spendDB: spendDB, readStmts: &readStmts{db: db}, cache: newKeyCache(opts.CacheSize, opts.CacheTTL), now: opts.clock()}, nil
}

// openSQLite opens the database at path through dsn and checks that it answers.
func openSQLite(ctx context.Context, path, dsn string) (*sql.DB, error) {
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}
	if err := db.PingContext(ctx); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}
	return db, nil
}

// migrate applies the embedded migrations not yet applied, with goose's options for dialect.
func migrate(ctx context.Context, db *sql.DB, dialect goose.Dialect, log *slog.Logger, opts ...goose.ProviderOption) error {
	fsys, err := fs.Sub(migrations, "migrations")
	if err != nil {
		return fmt.Errorf("store: migrations: %w", err)
	}
	opts = append(opts, goose.WithDisableGlobalRegistry(true))
	p, err := goose.NewProvider(dialect, db, fsys, opts...)
	if err != nil {
		return fmt.Errorf("store: migrations: %w", err)
	}
	results, err := p.Up(ctx)
	if err != nil {
		return fmt.Errorf("store: applying migrations: %w", err)
	}
	for _, r := range results {
		log.Info("store migration applied", "version", r.Source.Version, "file", r.Source.Path)
	}
	return nil
}

// Ping reports whether the database answers.
func (s *Store) Ping(ctx context.Context) error {
	if err := s.db.PingContext(ctx); err != nil {
		return fmt.Errorf("store: %w", err)
	}
	return nil
}

// Close stops the invalidation listener (Postgres) and closes the database.
func (s *Store) Close() error {
	if s.pg != nil {
		s.pg.listener.stop()
	}
	if s.spendDB != nil {
		s.spendInserts.close()
		_ = s.spendDB.Close()
	}
	if s.readStmts != nil {
		s.readStmts.close()
	}
	return s.db.Close()
}

// lookupCached returns the row cached under ck ("<kind>:<id>"), or reads it with get
// (ErrNotFound: no such row) and caches the answer, found or not, unless an invalidation
// happened while it read (see keyCache). Every cached lookup of a row goes through here.
func lookupCached[T any](ctx context.Context, s *Store, ck string, get func() (T, error)) (T, bool, error) {
	now := s.now()
	var zero T
	if e, ok := s.cache.get(ck, now); ok {
		noteRead(ctx, e.at)
		v, _ := e.val.(T)
		return v, e.found, nil
	}
	noteRead(ctx, now)
	gen := s.cache.generation()
	v, err := get()
	switch {
	case errors.Is(err, ErrNotFound):
		s.cache.put(ck, cacheEntry{gen: gen}, now)
		return zero, false, nil
	case err != nil:
		return zero, false, err
	}
	s.cache.put(ck, cacheEntry{val: v, found: true, gen: gen}, now)
	return v, true, nil
}

// tx is one write transaction; the lookups it changed are forgotten once it commits.
type tx struct {
	*sql.Tx
	changed []string // cache keys (see cacheKey) of rows this transaction wrote
}

// touch records that the transaction wrote the rows cached under keys.
func (t *tx) touch(keys ...string) { t.changed = append(t.changed, keys...) }

// inTx runs f in a transaction, committed only when f succeeds; the lookups f touched are
// forgotten on this replica whether or not it commits.
func (s *Store) inTx(ctx context.Context, f func(*tx) error) error {
	return s.inTxOn(ctx, s.db, f)
}

// inTxOn is inTx on db.
func (s *Store) inTxOn(ctx context.Context, db *sql.DB, f func(*tx) error) error {
	sqlTx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("store: begin: %w", err)
	}
	t := &tx{Tx: sqlTx}
	defer func() {
		for _, k := range t.changed {
			s.cache.forget(k)
		}
	}()
	if s.pg != nil {
		if err := lockWrites(ctx, t); err != nil {
			_ = sqlTx.Rollback()
			return err
		}
	}
	if err := f(t); err != nil {
		_ = sqlTx.Rollback()
		return uniqueAlias(err)
	}
	if s.pg != nil {
		if err := notifyChanged(ctx, t, s.pg.origin); err != nil {
			_ = sqlTx.Rollback()
			return err
		}
	}
	if err := sqlTx.Commit(); err != nil {
		return uniqueAlias(fmt.Errorf("store: commit: %w", err))
	}
	return nil
}

// uniqueViolation reports whether err is the failure of the UNIQUE constraint on table.column,
// on either backend: SQLite names it in its message; Postgres reports SQLSTATE 23505 and the
// constraint's default name, <table>_<column>_key.
func uniqueViolation(err error, table, column string) bool {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.Code == pgUniqueViolation && pgErr.ConstraintName == table+"_"+column+"_key"
	}
	return strings.Contains(err.Error(), "UNIQUE constraint failed: "+table+"."+column)
}
