package bench

import (
	"bytes"
	"io"
	"net/http"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpgw/mcpgw/internal/testpeers"
)

// BenchmarkToolsCallEras: tools/call through the in-process gateway without a store (the bare
// path of bench/peers.sh's mcpgw-bare), BENCH_C-like 10 callers at once, on both upstream
// eras as bench/loadgen sends them, with no access log: modern (2026-07-28 _meta, stateless fixture) and legacy
// (a 2025-11-25 session per caller, sessionful fixture). cpu-µs/op is this process's CPU per
// call (the client's and the gateway's; the fixture runs in its own process).
//
//	go test -run '^$' -bench BenchmarkToolsCallEras -benchmem -cpuprofile /tmp/eras.cpu ./bench/
func BenchmarkToolsCallEras(b *testing.B) {
	modernURL := testpeers.StartGoFixtureHTTP(b, true)
	legacyURL := testpeers.StartGoFixtureHTTP(b, false)
	var upDials, clientDials atomic.Int64
	for _, era := range []string{"modern", "legacy"} {
		b.Run(era, func(b *testing.B) {
			up := modernURL
			if era == "legacy" {
				up = legacyURL
			}
			gwURL := startGatewayStore(b, up, 1, &upDials, "  mcp_access_log: false\n", false)
			client := countingClient(&clientDials)
			const callers = 10
			calls := make([]func(*bytes.Buffer) error, callers)
			for i := range calls {
				calls[i] = eraCaller(b, client, gwURL, era, "fx-test_simple_text")
			}
			b.ReportAllocs()
			cpu0 := processCPU()
			n := runCallers(b, calls)
			if cpu1 := processCPU(); cpu0 >= 0 && cpu1 >= 0 && n > 0 {
				b.ReportMetric(float64(cpu1-cpu0)/float64(time.Microsecond)/float64(n), "cpu-µs/op")
			}
		})
	}
}

// runCallers runs b's iterations on calls at once, about one goroutine per
// caller whatever GOMAXPROCS is (RunParallel starts parallelism × GOMAXPROCS),
// each goroutine on one caller, and returns how many calls were made.
func runCallers(b *testing.B, calls []func(*bytes.Buffer) error) int64 {
	var next, n atomic.Int64
	procs := runtime.GOMAXPROCS(0)
	b.SetParallelism(max(1, (len(calls)+procs-1)/procs))
	b.RunParallel(func(pb *testing.PB) {
		call := calls[int(next.Add(1)-1)%len(calls)]
		var buf bytes.Buffer
		for pb.Next() {
			if err := call(&buf); err != nil {
				b.Error(err)
				return
			}
			n.Add(1)
		}
	})
	return n.Load()
}

// eraCaller returns one caller's tools/call of tool on gwURL in era, as bench/loadgen sends it
// (a legacy caller opens its session first).
func eraCaller(tb testing.TB, client *http.Client, gwURL, era, tool string) func(*bytes.Buffer) error {
	tb.Helper()
	if era == "modern" {
		body, h := modernCall(tool)
		h.Set("Authorization", "Bearer "+benchKey)
		return func(buf *bytes.Buffer) error { return post(client, gwURL, body, h, buf) }
	}
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set("Accept", "application/json, text/event-stream")
	h.Set("Authorization", "Bearer "+benchKey)
	var buf bytes.Buffer
	init := []byte(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25",` +
		`"capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}`)
	req, _ := http.NewRequest(http.MethodPost, gwURL, bytes.NewReader(init))
	req.Header = h.Clone()
	resp, err := client.Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body) // read to its end, so the connection is reused
	resp.Body.Close()
	sid := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != http.StatusOK || sid == "" {
		tb.Fatalf("initialize: %d, session %q", resp.StatusCode, sid)
	}
	h.Set("Mcp-Session-Id", sid)
	h.Set("MCP-Protocol-Version", "2025-11-25")
	if err := postExpect(client, gwURL, []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`), h, &buf, ""); err != nil &&
		!isAccepted(err) {
		tb.Fatal(err)
	}
	id := 0
	return func(buf *bytes.Buffer) error {
		id++
		body := []byte(`{"jsonrpc":"2.0","id":` + strconv.Itoa(id) + `,"method":"tools/call","params":{"name":"` + tool + `","arguments":{}}}`)
		return post(client, gwURL, body, h, buf)
	}
}

// isAccepted reports the error postExpect returns for a 202 (a notification's answer).
func isAccepted(err error) bool {
	ae, ok := err.(*answerError)
	return ok && ae.status == http.StatusAccepted
}
