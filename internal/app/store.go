package app

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/mcpgw/mcpgw/internal/config"
	"github.com/mcpgw/mcpgw/internal/store"
)

// databaseURLEnv names the environment variable that selects an external database.
const databaseURLEnv = "DATABASE_URL"

// storeOpenTimeout bounds opening the store and applying its migrations at start.
const storeOpenTimeout = 30 * time.Second

// openStore opens the key store in dataDir (nil without a data dir). A database URL
// (general_settings.database_url or DATABASE_URL) is refused: only the embedded SQLite store
// is built, and silently using it instead of the database the operator named would split
// replicas' keys.
func openStore(cfg *config.Config, o options) (*store.Store, error) {
	url := cfg.General.DatabaseURL.Reveal()
	if url == "" {
		url, _ = o.lookupEnv(databaseURLEnv)
	}
	if strings.TrimSpace(url) != "" {
		return nil, errors.New("store: general_settings.database_url / DATABASE_URL is set, but Postgres support is not built yet; " +
			"unset it to use the embedded SQLite store under --data-dir")
	}
	if o.dataDir == "" {
		return nil, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), storeOpenTimeout)
	defer cancel()
	return store.OpenSQLite(ctx, o.dataDir, store.Options{Logger: o.log})
}
