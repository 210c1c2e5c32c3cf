package store

import (
	"context"
	"os"
	"testing"
	"time"
)

// BenchmarkReadPaused: the CPU (getrusage) of one read the gateway makes on its request path
// once a TTL, each after a pause (MCPGW_READ_PAUSE, default 20 ms) as in the gateway, where
// it comes once a second: a key lookup missing the cache (key), the pin refresh's list of a
// server's pins (pins, 20 rows), and a team lookup with its members (team).
func BenchmarkReadPaused(b *testing.B) {
	pause := 20 * time.Millisecond
	if v, err := time.ParseDuration(os.Getenv("MCPGW_READ_PAUSE")); err == nil {
		pause = v
	}
	ctx := context.Background()
	s, err := OpenSQLite(ctx, b.TempDir(), Options{CacheTTL: -1})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	team, err := s.CreateTeam(ctx, Team{Alias: "t"})
	if err != nil {
		b.Fatal(err)
	}
	_, k, err := s.Generate(ctx, NewKey{TeamID: team.TeamID, Permission: Permission{MCPServers: []string{"fx"}}})
	if err != nil {
		b.Fatal(err)
	}
	var pins []ToolPin
	for i := range 20 {
		pins = append(pins, ToolPin{Server: "fx", Tool: "tool" + string(rune('a'+i)), Digest: "d",
			Parts: map[string]string{"description": "x"}, UpdatedBy: "bench"})
	}
	if err := s.PutToolPins(ctx, pins, nil, true); err != nil {
		b.Fatal(err)
	}
	reads := map[string]func() error{
		"key":  func() error { _, _, err := s.Lookup(ctx, k.Token); return err },
		"pins": func() error { _, err := s.ListToolPins(ctx, "fx"); return err },
		"team": func() error { _, _, err := s.LookupTeam(ctx, team.TeamID); return err },
	}
	for _, name := range []string{"key", "pins", "team"} {
		b.Run(name, func(b *testing.B) {
			read := reads[name]
			var cpu time.Duration
			b.ReportAllocs()
			for b.Loop() {
				time.Sleep(pause)
				before := processCPU()
				if err := read(); err != nil {
					b.Fatal(err)
				}
				cpu += processCPU() - before
			}
			b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-µs/read")
		})
	}
}
