package e2e

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mcpgw/mcpgw/internal/app"
	"github.com/mcpgw/mcpgw/internal/store/pgtest"
	"github.com/mcpgw/mcpgw/internal/testpeers"
)

// startGatewayWithPostgres serves the gateway for yaml as startGatewayWithStore does, with its
// key store in the Postgres database at dbURL (DATABASE_URL) and its key lookups cached for
// cacheTTL; two calls on one dbURL are two replicas.
func startGatewayWithPostgres(t *testing.T, yaml, dbURL string, cacheTTL time.Duration) string {
	t.Helper()
	return startGatewayWith(t, yaml, map[string]string{"DATABASE_URL": dbURL},
		app.WithDataDir(t.TempDir()), app.WithStoreCacheTTL(cacheTTL)).url
}

// TestReplicasShareKeysAndRevocations: two gateways on one Postgres database, each caching key
// lookups for an hour: a key generated on A works on B at once; blocked on A, B refuses it
// within 1 s; unblocked, B accepts it again; deleted on A, B refuses it within 1 s.
func TestReplicasShareKeysAndRevocations(t *testing.T) {
	fixture := testpeers.StartGoFixtureHTTP(t, false)
	db := pgtest.NewDatabase(t)
	yaml := fmt.Sprintf("general_settings:\n  master_key: %s\nmcp_servers:\n  fx:\n    url: %s\n", testKey, fixture)
	gwA := startGatewayWithPostgres(t, yaml, db, time.Hour)
	gwB := startGatewayWithPostgres(t, yaml, db, time.Hour)

	key := generateKey(t, gwA, `{"object_permission":{"mcp_servers":["fx"]}}`)
	if status, body := listAs(t, gwB, key); status != 200 || len(toolsOf(body)) == 0 {
		t.Fatalf("B's tools/list with A's new key = %d %v", status, body)
	}
	refusedOnBWithin := func(what, reason string) {
		t.Helper()
		deadline := time.Now().Add(time.Second)
		for {
			status, body := listAs(t, gwB, key)
			if status == 401 && strings.Contains(errMessage(body), reason) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("B still answers %d %v a second after the %s on A", status, body, what)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	ref := `{"key":"` + key + `"}`
	if status, m := manage(t, http.MethodPost, gwA+"/key/block", testKey, ref); status != 200 {
		t.Fatalf("/key/block on A = %d %v", status, m)
	}
	refusedOnBWithin("block", "blocked")
	if status, m := manage(t, http.MethodPost, gwA+"/key/unblock", testKey, ref); status != 200 {
		t.Fatalf("/key/unblock on A = %d %v", status, m)
	}
	for deadline := time.Now().Add(time.Second); ; time.Sleep(10 * time.Millisecond) {
		status, _ := listAs(t, gwB, key)
		if status == 200 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("B still refuses (%d) a second after the unblock on A", status)
		}
	}
	if status, m := manage(t, http.MethodPost, gwA+"/key/delete", testKey, `{"keys":["`+key+`"]}`); status != 200 {
		t.Fatalf("/key/delete on A = %d %v", status, m)
	}
	refusedOnBWithin("delete", "no such key")
	if status, m := manage(t, http.MethodGet, gwB+"/key/info?key="+key, testKey, ""); status != 404 {
		t.Fatalf("/key/info of the deleted key on B = %d %v, want 404", status, m)
	}
}
