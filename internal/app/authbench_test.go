package app

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/mcpgw/mcpgw/internal/identity"
	"github.com/mcpgw/mcpgw/internal/store"
)

// BenchmarkAuthenticate: what authenticating one request costs with the master key, with a
// store key whose lookups the store's cache serves (every request within its TTL after the
// first), and with one of a team, a user and an organisation (four cached lookups), the
// authenticator wired to the store as the gateway wires it (keyLookup).
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
	fx := store.Permission{MCPServers: []string{"fx"}}
	if _, err := st.CreateOrganization(ctx, store.Organization{OrganizationID: "o", Alias: "o", Permission: fx}); err != nil {
		b.Fatal(err)
	}
	if _, err := st.CreateTeam(ctx, store.Team{TeamID: "t", OrganizationID: "o", Permission: fx}); err != nil {
		b.Fatal(err)
	}
	if _, err := st.CreateUser(ctx, store.User{UserID: "u", Role: "internal_user", Permission: fx}); err != nil {
		b.Fatal(err)
	}
	leveled, _, err := st.Generate(ctx, store.NewKey{TeamID: "t", UserID: "u", Permission: fx})
	if err != nil {
		b.Fatal(err)
	}
	authn, err := identity.New(identity.Config{MasterKey: master, Keys: keyLookup(st)})
	if err != nil {
		b.Fatal(err)
	}
	for _, tc := range []struct{ name, key string }{{"master", master}, {"store-key-cached", secret},
		{"store-key-team-user-org-cached", leveled}} {
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
