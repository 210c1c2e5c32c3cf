package bench

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpgw/mcpgw/internal/testpeers"
)

// listUpstreams is how many upstreams BenchmarkToolsList50 configures.
const listUpstreams = 50

// BenchmarkToolsList50: one modern tools/list (first page) through the
// in-process gateway with 50 configured upstreams, all on one stateless
// fixture process (its own process, real HTTP; it answers ttlMs 0, so
// every listing fans out to all 50). Sub-benchmarks, interleaved by -count:
//
//   - gateway: this process's CPU (the benchmark's client and the gateway)
//     per upstream page;
//   - client-only: the same client reading the gateway's own answer (the
//     same bytes, captured once) from a plain handler that writes it: the
//     client's share and a bare net/http hop.
//
// gateway minus client-only (both per upstream page) is what the gateway
// spends on a listing beyond writing its answer: the fan-out, the 50
// upstream round trips and the merge. Nothing else runs in this process.
func BenchmarkToolsList50(b *testing.B) {
	fixture := testpeers.StartGoFixtureHTTP(b, true)
	var upDials, clientDials atomic.Int64
	gwURL := startGateway(b, fixture, listUpstreams, &upDials)
	client := countingClient(&clientDials)
	body, h := modernList()
	var buf bytes.Buffer
	if err := postExpect(client, gwURL, body, h, &buf, `"s1-test_simple_text"`); err != nil {
		b.Fatal(err)
	}
	answer := bytes.Clone(buf.Bytes())
	static := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = buf.ReadFrom(r.Body)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(answer)
	}))
	b.Cleanup(static.Close)
	for _, tc := range []struct{ name, url string }{{"gateway", gwURL}, {"client-only", static.URL}} {
		b.Run(tc.name, func(b *testing.B) {
			var out bytes.Buffer
			list := func() {
				if err := postExpect(client, tc.url, body, h, &out, `"s1-test_simple_text"`); err != nil {
					b.Fatal(err)
				}
			}
			list()
			runtime.GC()
			b.ReportAllocs()
			cpu0, n := processCPU(), 0
			for b.Loop() {
				list()
				n++
			}
			if cpu1 := processCPU(); cpu0 >= 0 && cpu1 >= 0 {
				b.ReportMetric(float64(cpu1-cpu0)/float64(time.Microsecond)/float64(n*listUpstreams), "cpu-µs/upstream-page")
			}
			b.ReportMetric(float64(len(answer)), "answer-bytes")
		})
	}
}

// modernList is one 2026-07-28 tools/list (first page) with the master key.
func modernList() ([]byte, http.Header) {
	body := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{` +
		`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},` +
		`"io.modelcontextprotocol/clientInfo":{"name":"bench","version":"1"}}}}`)
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set("Accept", "application/json, text/event-stream")
	h.Set("MCP-Protocol-Version", "2026-07-28")
	h.Set("Mcp-Method", "tools/list")
	h.Set("Authorization", "Bearer "+benchKey)
	return body, h
}
