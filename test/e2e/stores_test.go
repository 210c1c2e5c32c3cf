package e2e

import (
	"maps"
	"testing"

	"github.com/mcpgw/mcpgw/internal/app"
	"github.com/mcpgw/mcpgw/internal/store/pgtest"
)

// storeBackend is a database the gateway's store runs on in a test.
type storeBackend struct {
	name string
	// fresh returns the environment and options of a gateway whose store is new and empty.
	fresh func(t *testing.T) (map[string]string, []app.Option)
}

// storeBackends are the embedded SQLite store (a fresh --data-dir) and Postgres (a fresh
// database on MCPGW_TEST_DATABASE_URL's cluster, as DATABASE_URL; skipped without one unless
// MCPGW_REQUIRE_PEERS=1, when it fails).
func storeBackends() []storeBackend {
	return []storeBackend{
		{name: "sqlite", fresh: func(t *testing.T) (map[string]string, []app.Option) {
			return nil, []app.Option{app.WithDataDir(t.TempDir())}
		}},
		{name: "postgres", fresh: func(t *testing.T) (map[string]string, []app.Option) {
			return map[string]string{"DATABASE_URL": pgtest.NewDatabase(t)}, []app.Option{app.WithDataDir(t.TempDir())}
		}},
	}
}

// forEachStore runs f as a subtest on every store backend: the management API and everything
// that reads the store behave the same on both.
func forEachStore(t *testing.T, f func(t *testing.T, st storeBackend)) {
	t.Helper()
	for _, b := range storeBackends() {
		t.Run(b.name, func(t *testing.T) { f(t, b) })
	}
}

// startGatewayWithStore serves the gateway for yaml as startGateway does, with a fresh, empty
// store on st.
func startGatewayWithStore(t *testing.T, st storeBackend, yaml string) string {
	t.Helper()
	return startGatewayWithStoreEnv(t, st, yaml, nil).url
}

// startGatewayWithStoreEnv is startGatewayWithStore with environment variables as well.
func startGatewayWithStoreEnv(t *testing.T, st storeBackend, yaml string, env map[string]string) *gatewayUnderTest {
	t.Helper()
	storeEnv, opts := st.fresh(t)
	all := maps.Clone(env)
	if all == nil {
		all = map[string]string{}
	}
	maps.Copy(all, storeEnv)
	return startGatewayWith(t, yaml, all, opts...)
}
