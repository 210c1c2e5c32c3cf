package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpgw/mcpgw/internal/app"
	"github.com/mcpgw/mcpgw/internal/config"
	"github.com/mcpgw/mcpgw/internal/mcp"
	"github.com/mcpgw/mcpgw/internal/seal"
	"github.com/mcpgw/mcpgw/internal/testpeers"
	"github.com/mcpgw/mcpgw/internal/upstream"
)

// BenchmarkStdioToolsCall: one tools/call at a time to the go-sdk fixture as
// a stdio child, through the upstream client, with the child's era pinned to
// each revision and left to auto (what `protocol_version` chooses by
// default) for a modern caller and for a legacy one (auto-legacy-caller:
// Options.LegacyCaller). child-cpu-µs/op is the child's own CPU per call,
// cpu-µs/op this process's (the client's side).
func BenchmarkStdioToolsCall(b *testing.B) {
	fixture := testpeers.GoFixture(b)
	for _, name := range []string{mcp.V20251125, mcp.V20260728, upstream.VersionAuto, "auto-legacy-caller"} {
		b.Run(name, func(b *testing.B) {
			v, opts := name, upstream.Options{}
			if name == "auto-legacy-caller" {
				v, opts = upstream.VersionAuto, upstream.Options{LegacyCaller: true}
			}
			c, err := upstream.New(upstream.Config{Name: "fx", Transport: upstream.TransportStdio, Command: fixture, ProtocolVersion: v})
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close(context.Background())
			ctx := context.Background()
			params := json.RawMessage(`{"name":"test_simple_text","arguments":{}}`)
			call := func() {
				res, err := c.Call(ctx, mcp.MethodToolsCall, params, opts)
				if err != nil || !strings.Contains(string(res.Raw), "simple text") {
					b.Fatalf("%s %v", res.Raw, err)
				}
			}
			call()
			b.ReportAllocs()
			child0, self0, n := childrenCPU(), processCPU(), 0
			for b.Loop() {
				call()
				n++
			}
			if child1, self1 := childrenCPU(), processCPU(); child0 >= 0 && child1 >= 0 {
				b.ReportMetric(float64(child1-child0)/float64(time.Microsecond)/float64(n), "child-cpu-µs/op")
				b.ReportMetric(float64(self1-self0)/float64(time.Microsecond)/float64(n), "cpu-µs/op")
			}
		})
	}
}

// BenchmarkStdioDirect is BenchmarkStdioToolsCall's baseline: the same
// tools/call, one at a time, written straight to the fixture's stdin and its
// answer read as one line, with nothing between (the least any stdio proxy
// can spend), in each era.
func BenchmarkStdioDirect(b *testing.B) {
	fixture := testpeers.GoFixture(b)
	const meta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"mcpgw","version":"dev"}},`
	for _, v := range []string{mcp.V20251125, mcp.V20260728} {
		b.Run(v, func(b *testing.B) {
			cmd := exec.Command(fixture)
			stdin, err := cmd.StdinPipe()
			if err != nil {
				b.Fatal(err)
			}
			stdout, err := cmd.StdoutPipe()
			if err != nil {
				b.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				b.Fatal(err)
			}
			defer func() { _ = stdin.Close(); _ = cmd.Wait() }()
			r := bufio.NewReader(stdout)
			roundTrip := func(msg string) string {
				if _, err := io.WriteString(stdin, msg+"\n"); err != nil {
					b.Fatal(err)
				}
				line, err := r.ReadString('\n')
				if err != nil {
					b.Fatal(err)
				}
				return line
			}
			prefix := ""
			if v == mcp.V20251125 {
				roundTrip(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"mcpgw","version":"dev"}}}`)
				if _, err := io.WriteString(stdin, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n"); err != nil {
					b.Fatal(err)
				}
			} else {
				prefix = meta
			}
			id := 0
			call := func() {
				id++
				if line := roundTrip(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{%s"name":"test_simple_text","arguments":{}}}`, id, prefix)); !strings.Contains(line, "simple text") {
					b.Fatalf("answer %s", line)
				}
			}
			call()
			b.ReportAllocs()
			child0, self0, n := childrenCPU(), processCPU(), 0
			for b.Loop() {
				call()
				n++
			}
			if child1, self1 := childrenCPU(), processCPU(); child0 >= 0 && child1 >= 0 {
				b.ReportMetric(float64(child1-child0)/float64(time.Microsecond)/float64(n), "child-cpu-µs/op")
				b.ReportMetric(float64(self1-self0)/float64(time.Microsecond)/float64(n), "cpu-µs/op")
			}
		})
	}
}

// childrenCPU is the CPU time (user + system) of this process's live
// children, from /proc, or -1 when it cannot be read.
func childrenCPU() time.Duration {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return -1
	}
	self := strconv.Itoa(os.Getpid())
	var ticks int64
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		raw, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		s := string(raw)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:]) // fields from the state on
		if len(f) < 13 || f[1] != self {
			continue
		}
		ut, _ := strconv.ParseInt(f[11], 10, 64)
		st, _ := strconv.ParseInt(f[12], 10, 64)
		ticks += ut + st
	}
	return time.Duration(ticks) * (time.Second / 100) // USER_HZ is 100 on Linux
}

// BenchmarkStdioToolsCallC10 is BenchmarkStdioToolsCall for a legacy caller
// in auto mode with ten calls in flight at once (as bench/peers.sh's C=10),
// where the stdio client's handoffs between goroutines (writer, reader,
// callers) contend. cpu-µs/op is this process's CPU per call.
func BenchmarkStdioToolsCallC10(b *testing.B) {
	fixture := testpeers.GoFixture(b)
	c, err := upstream.New(upstream.Config{Name: "fx", Transport: upstream.TransportStdio, Command: fixture})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close(context.Background())
	ctx := context.Background()
	params := json.RawMessage(`{"name":"test_simple_text","arguments":{}}`)
	opts := upstream.Options{LegacyCaller: true}
	if _, err := c.Call(ctx, mcp.MethodToolsCall, params, opts); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.SetParallelism(5) // × GOMAXPROCS (2 here): 10 callers
	child0, self0 := childrenCPU(), processCPU()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			res, err := c.Call(ctx, mcp.MethodToolsCall, params, opts)
			if err != nil || !strings.Contains(string(res.Raw), "simple text") {
				b.Errorf("%s %v", res.Raw, err)
				return
			}
		}
	})
	b.StopTimer()
	if child1, self1 := childrenCPU(), processCPU(); child0 >= 0 && child1 >= 0 {
		b.ReportMetric(float64(child1-child0)/float64(time.Microsecond)/float64(b.N), "child-cpu-µs/op")
		b.ReportMetric(float64(self1-self0)/float64(time.Microsecond)/float64(b.N), "cpu-µs/op")
	}
}

// BenchmarkStdioGateway: tools/call through the in-process gateway to the
// go-sdk fixture as a stdio child, ten legacy callers at once (bench/peers.sh's
// stdio leg with the load generator in this process), in the default
// configuration (protocol_version auto, a store with its spend rows, the access
// log) and bare (neither). cpu-µs/op is this process's CPU per call (callers and
// gateway), child-cpu-µs/op the child's.
//
//	go test -run '^$' -bench BenchmarkStdioGateway -benchmem -cpuprofile /tmp/stdiogw.cpu ./bench/
func BenchmarkStdioGateway(b *testing.B) {
	fixture := testpeers.GoFixture(b)
	for _, mode := range []string{"default", "bare"} {
		b.Run(mode, func(b *testing.B) {
			general, store := "", true
			if mode == "bare" {
				general, store = "  mcp_access_log: false\n", false
			}
			gwURL := startStdioGateway(b, fixture, general, store)
			var dials atomic.Int64
			client := countingClient(&dials)
			const callers = 10
			calls := make([]func(*bytes.Buffer) error, callers)
			for i := range calls {
				calls[i] = eraCaller(b, client, gwURL, "legacy", "sx-test_simple_text")
			}
			var buf bytes.Buffer
			if err := calls[0](&buf); err != nil { // starts the child
				b.Fatal(err)
			}
			b.ReportAllocs()
			child0, self0 := childrenCPU(), processCPU()
			b.ResetTimer()
			n := runCallers(b, calls)
			b.StopTimer()
			if child1, self1 := childrenCPU(), processCPU(); child0 >= 0 && child1 >= 0 && n > 0 {
				b.ReportMetric(float64(child1-child0)/float64(time.Microsecond)/float64(n), "child-cpu-µs/op")
				b.ReportMetric(float64(self1-self0)/float64(time.Microsecond)/float64(n), "cpu-µs/op")
			}
			if n > 0 { // more than one dial per caller means keep-alive failed
				b.ReportMetric(float64(dials.Load())/float64(callers), "dials/caller")
			}
		})
	}
}

// startStdioGateway serves a gateway with one stdio upstream, sx, running
// command, with more general_settings lines and with or without a store.
func startStdioGateway(tb testing.TB, command, general string, withStore bool) string {
	tb.Helper()
	yaml := "general_settings:\n  master_key: " + benchKey + "\n" + general +
		"mcp_servers:\n  sx:\n    transport: stdio\n    command: " + command + "\n"
	env := map[string]string{seal.SaltKeyEnv: benchSalt}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	cfg, problems, err := config.Parse([]byte(yaml), app.ConfigOptions(lookup))
	if err != nil {
		tb.Fatalf("config: %v %v", err, problems)
	}
	opts := []app.Option{app.WithLookupEnv(lookup), app.WithVersion("bench")}
	if withStore {
		opts = append(opts, app.WithDataDir(tb.TempDir()))
	}
	return serveApp(tb, cfg, opts...)
}
