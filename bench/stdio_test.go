package bench

import (
	"context"
	"encoding/json"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcpgw/mcpgw/internal/mcp"
	"github.com/mcpgw/mcpgw/internal/testpeers"
	"github.com/mcpgw/mcpgw/internal/upstream"
)

// BenchmarkStdioToolsCall: one tools/call at a time to the go-sdk fixture as
// a stdio child, through the upstream client, with the child's era pinned to
// each revision and left to auto (what `protocol_version` chooses by
// default). child-cpu-µs/op is the child's own CPU per call, cpu-µs/op this
// process's (the client's side).
func BenchmarkStdioToolsCall(b *testing.B) {
	fixture := testpeers.GoFixture(b)
	for _, v := range []string{mcp.V20251125, mcp.V20260728, upstream.VersionAuto} {
		b.Run(v, func(b *testing.B) {
			c, err := upstream.New(upstream.Config{Name: "fx", Transport: upstream.TransportStdio, Command: fixture, ProtocolVersion: v})
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close(context.Background())
			ctx := context.Background()
			params := json.RawMessage(`{"name":"test_simple_text","arguments":{}}`)
			call := func() {
				res, err := c.Call(ctx, mcp.MethodToolsCall, params, upstream.Options{})
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
