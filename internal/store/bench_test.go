package store

import (
	"context"
	"testing"
)

// BenchmarkLookup: a key lookup served by the per-replica cache (every request within the TTL)
// and one that reads SQLite (the first request after the TTL).
func BenchmarkLookup(b *testing.B) {
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		opts Options
	}{{"cached", Options{}}, {"sqlite", Options{CacheTTL: -1}}} {
		b.Run(tc.name, func(b *testing.B) {
			s, err := OpenSQLite(ctx, b.TempDir(), tc.opts)
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			_, k, err := s.Generate(ctx, NewKey{Permission: Permission{MCPServers: []string{"fx"}}})
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, found, err := s.Lookup(ctx, k.Token); err != nil || !found {
					b.Fatal(found, err)
				}
			}
		})
	}
}
