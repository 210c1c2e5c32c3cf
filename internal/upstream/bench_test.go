package upstream

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpgw/mcpgw/internal/mcp"
	"github.com/mcpgw/mcpgw/internal/testpeers"
)

// BenchmarkToolsCall measures one tools/call round trip to the go-sdk fixture
// server through this client and through the go-sdk's own client, against the
// same server process in the same run. docs/benchmarks.md records the ratio.
func BenchmarkToolsCall(b *testing.B) {
	for _, era := range []struct {
		name      string
		stateless bool
		version   string
	}{
		{"modern-2026-07-28", true, mcp.V20260728},
		{"legacy-2025-11-25", false, mcp.V20251125},
	} {
		url := testpeers.StartGoFixtureHTTP(b, era.stateless)
		b.Run(era.name+"/mcpgw", func(b *testing.B) {
			c, err := New(Config{Name: "bench", URL: url, ProtocolVersion: era.version})
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close(context.Background())
			ctx := context.Background()
			args := json.RawMessage(`{}`)
			if _, err := c.CallTool(ctx, "test_simple_text", args, Options{}); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				res, err := c.CallTool(ctx, "test_simple_text", args, Options{})
				if err != nil || !strings.Contains(string(res.Raw), "simple text") {
					b.Fatalf("%s %v", res.Raw, err)
				}
			}
		})
		b.Run(era.name+"/go-sdk", func(b *testing.B) {
			ctx := context.Background()
			client := sdk.NewClient(&sdk.Implementation{Name: "bench", Version: "1"}, nil)
			cs, err := client.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: url, DisableStandaloneSSE: true}, nil)
			if err != nil {
				b.Fatal(err)
			}
			defer cs.Close()
			params := &sdk.CallToolParams{Name: "test_simple_text", Arguments: map[string]any{}}
			b.ReportAllocs()
			for b.Loop() {
				res, err := cs.CallTool(ctx, params)
				if err != nil || len(res.Content) != 1 {
					b.Fatalf("%v %v", res, err)
				}
			}
		})
	}
}
