package app

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/mcpgw/mcpgw/internal/config"
	"github.com/mcpgw/mcpgw/internal/store"
)

// databaseURLEnv names the environment variable that selects an external database.
const databaseURLEnv = "DATABASE_URL"

// storeOpenTimeout bounds opening the store and applying its migrations at start.
const storeOpenTimeout = 30 * time.Second

// openStore opens the key store: Postgres when a database URL is set
// (general_settings.database_url, else DATABASE_URL), otherwise SQLite in dataDir (nil
// without a data dir). A URL that does not parse or a database that does not answer fails the
// start: silently using SQLite instead of the database the operator named would split
// replicas' keys. The error never contains the URL's password.
func openStore(cfg *config.Config, o options) (*store.Store, error) {
	url := cfg.General.DatabaseURL.Reveal()
	if strings.TrimSpace(url) == "" {
		url, _ = o.lookupEnv(databaseURLEnv)
	}
	ctx, cancel := context.WithTimeout(context.Background(), storeOpenTimeout)
	defer cancel()
	if url = strings.TrimSpace(url); url != "" {
		st, err := store.OpenPostgres(ctx, url, store.Options{Logger: o.log, CacheTTL: o.cacheTTL})
		if err != nil {
			return nil, fmt.Errorf("opening the Postgres store (general_settings.database_url / DATABASE_URL): %w", err)
		}
		return st, nil
	}
	if o.dataDir == "" {
		return nil, nil
	}
	return store.OpenSQLite(ctx, o.dataDir, store.Options{Logger: o.log, CacheTTL: o.cacheTTL})
}

// WithStoreCacheTTL reuses a key lookup for ttl on this replica instead of
// store.DefaultCacheTTL (negative: no cache).
func WithStoreCacheTTL(ttl time.Duration) Option { return func(o *options) { o.cacheTTL = ttl } }
