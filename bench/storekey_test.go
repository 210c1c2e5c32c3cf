package bench

import (
	"bytes"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpgw/mcpgw/internal/testpeers"
)

// BenchmarkStoreKeyCPU: the gateway's CPU time per tools/call with a store key (its lookup
// served by the store's cache) against the master key, measured finely interleaved so that
// the machine's other load weighs on all alike. Each iteration makes four calls one at a time,
// direct to the fixture, through the gateway with the master key, with a store key and with a
// store key of a team, a user and an organisation (four levels to resolve and intersect), in an
// order that rotates every iteration, and reads this process's CPU time (the client's
// and the gateway's; the fixture runs in its own process) around each. The gateway's own CPU
// per call is a call's CPU minus a direct call's (the client's part).
func BenchmarkStoreKeyCPU(b *testing.B) {
	if processCPU() < 0 {
		b.Skip("process CPU time cannot be read here")
	}
	fixture := testpeers.StartGoFixtureHTTP(b, true)
	var upDials, clientDials atomic.Int64
	gwURL := startGateway(b, fixture, 1, &upDials)
	client := countingClient(&clientDials)
	type kind struct {
		url  string
		body []byte
		h    map[string][]string
		cpu  time.Duration
	}
	mk := func(url, tool, key string) *kind {
		body, h := modernCall(tool)
		if key != "" {
			h.Set("Authorization", "Bearer "+key)
		}
		return &kind{url: url, body: body, h: h}
	}
	kinds := []*kind{mk(fixture, "test_simple_text", ""), mk(gwURL, "fx-test_simple_text", benchKey),
		mk(gwURL, "fx-test_simple_text", storeKey(b, gwURL)), mk(gwURL, "fx-test_simple_text", leveledStoreKey(b, gwURL))}
	var buf bytes.Buffer
	for _, k := range kinds { // warm every path (connections, caches) before timing
		if err := post(client, k.url, k.body, k.h, &buf); err != nil {
			b.Fatal(err)
		}
	}
	n := 0
	for b.Loop() {
		for j := range kinds {
			k := kinds[(n+j)%len(kinds)]
			c0 := processCPU()
			if err := post(client, k.url, k.body, k.h, &buf); err != nil {
				b.Fatal(err)
			}
			k.cpu += processCPU() - c0
		}
		n++
	}
	per := func(k *kind) float64 { return float64(k.cpu) / float64(time.Microsecond) / float64(n) }
	direct, master, store, leveled := per(kinds[0]), per(kinds[1]), per(kinds[2]), per(kinds[3])
	b.ReportMetric(master-direct, "master-gw-cpu-µs/call")
	b.ReportMetric(store-direct, "store-gw-cpu-µs/call")
	b.ReportMetric(leveled-direct, "leveled-gw-cpu-µs/call")
	b.ReportMetric((store-direct)/(master-direct), "store/master")
	b.ReportMetric((leveled-direct)/(master-direct), "leveled/master")
}
