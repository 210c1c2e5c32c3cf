package app

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/mcpgw/mcpgw/internal/identity"
	"github.com/mcpgw/mcpgw/internal/store"
)

// BenchmarkAuthenticate: what authenticating one request costs with the master key and with a
// store key whose lookup the store's cache serves (every request within its TTL after the
// first), the authenticator wired to the store as the gateway wires it (keyLookup).
func BenchmarkAuthenticate(b *testing.B) {
	const master = "sk-bench-master-key-0123456789"
	ctx := context.Background()
	st, err := store.OpenSQLite(ctx, b.TempDir(), store.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	secret, _, err := st.Generate(ctx, store.NewKey{Permission: store.Permission{MCPServers: []string{"fx"}}})
	if err != nil {
		b.Fatal(err)
	}
	authn, err := identity.New(identity.Config{MasterKey: master, Keys: keyLookup(st)})
	if err != nil {
		b.Fatal(err)
	}
	for _, tc := range []struct{ name, key string }{{"master", master}, {"store-key-cached", secret}} {
		b.Run(tc.name, func(b *testing.B) {
			r := httptest.NewRequest(http.MethodPost, "/mcp", nil)
			r.Header.Set("Authorization", "Bearer "+tc.key)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := authn.Authenticate(ctx, r, "tools/call"); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
