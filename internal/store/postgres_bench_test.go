package store

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/mcpgw/mcpgw/internal/store/pgtest"
)

// BenchmarkLookupPostgres100k: key lookups (authentication) on a Postgres store holding
// 100 000 keys, with the cache off (every lookup reads the database: the miss path) and on
// (lookups over 1 000 hot keys, warmed before timing, so every lookup is a cache hit); p50 and
// p99 are reported per lookup.
//
//	scripts/postgres.sh go test -run '^$' -bench BenchmarkLookupPostgres100k -benchtime 20000x ./internal/store/
func BenchmarkLookupPostgres100k(b *testing.B) {
	const keys, hot = 100_000, 1_000
	url := pgtest.NewDatabase(b)
	ctx := context.Background()
	seed, err := OpenPostgres(ctx, url, Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer seed.Close()
	// Rows as Generate writes them, for the secrets "sk-bench-<i>" (token = hex SHA-256).
	if _, err := seed.db.ExecContext(ctx, `INSERT INTO keys (token, key_name, user_id, object_permission, created_at, updated_at)
		SELECT encode(sha256(('sk-bench-' || i)::bytea), 'hex'), 'sk-...' || i, 'user-' || (i % 500),
			'{"mcp_servers":["fx"]}', 0, 0 FROM generate_series(0, $1 - 1) AS i`, keys); err != nil {
		b.Fatal(err)
	}
	if _, err := seed.db.ExecContext(ctx, `ANALYZE keys`); err != nil {
		b.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		opts Options
		set  int
	}{{"miss", Options{CacheTTL: -1}, keys}, {"cached", Options{CacheTTL: time.Hour}, hot}} {
		b.Run(tc.name, func(b *testing.B) {
			s, err := OpenPostgres(ctx, url, tc.opts)
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			rng := rand.New(rand.NewPCG(1, 2))
			tokens := make([]string, tc.set)
			for i := range tokens {
				tokens[i] = Hash(fmt.Sprintf("sk-bench-%d", rng.IntN(keys)))
			}
			if tc.opts.CacheTTL > 0 {
				for _, tok := range tokens { // warm the cache: the cached case measures hits
					_, _, _ = s.Lookup(ctx, tok)
				}
			}
			lat := make([]time.Duration, 0, b.N)
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				start := time.Now()
				if _, found, err := s.Lookup(ctx, tokens[i%len(tokens)]); err != nil || !found {
					b.Fatal(found, err)
				}
				lat = append(lat, time.Since(start))
				i++
			}
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds()), "p50-ns")
			b.ReportMetric(float64(lat[len(lat)*99/100].Nanoseconds()), "p99-ns")
		})
	}
}
