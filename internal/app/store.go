package app

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/mcpgw/mcpgw/internal/config"
	"github.com/mcpgw/mcpgw/internal/identity"
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

// keyLookup is the authenticator's view of the store (nil without one).
func keyLookup(st *store.Store) identity.KeyLookup {
	if st == nil {
		return nil
	}
	return func(ctx context.Context, hash, _ string) (identity.StoredKey, bool, error) {
		k, found, err := st.Lookup(ctx, hash)
		if err != nil || !found {
			return identity.StoredKey{}, found, err
		}
		out := identity.StoredKey{UserID: k.UserID, TeamID: k.TeamID, OrgID: k.OrganizationID,
			Servers: k.Permission.MCPServers, AccessGroups: k.Permission.MCPAccessGroups,
			ToolPermissions: k.Permission.MCPToolPermissions, BlockedTools: k.Permission.BlockedTools, Blocked: k.Blocked}
		if k.Expires != nil {
			out.Expires = *k.Expires
		}
		return out, true, nil
	}
}
