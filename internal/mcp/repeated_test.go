package mcp

import (
	"net/http"
	"testing"
)

// TestRepeatedHeader: a second copy of an MCP header could let the gateway
// check one value while an upstream acts on another, so every repeat is
// named.
func TestRepeatedHeader(t *testing.T) {
	cases := []struct {
		name  string
		pairs []string // name, value, name, value...
		want  string
	}{
		{"none", nil, ""},
		{"one of each", []string{"MCP-Protocol-Version", "2026-07-28", "Mcp-Method", "tools/call", "Mcp-Name", "t", "Mcp-Session-Id", "s", "Mcp-Param-Region", "eu"}, ""},
		{"protocol version twice", []string{"MCP-Protocol-Version", "2026-07-28", "mcp-protocol-version", "2025-11-25"}, HeaderProtocolVersion},
		{"protocol version same value twice", []string{"MCP-Protocol-Version", "2026-07-28", "MCP-Protocol-Version", "2026-07-28"}, HeaderProtocolVersion},
		{"method twice", []string{"Mcp-Method", "tools/list", "MCP-METHOD", "tools/call"}, HeaderMethod},
		{"name twice", []string{"Mcp-Name", "a", "mcp-name", "b"}, HeaderName},
		{"session twice", []string{"Mcp-Session-Id", "a", "Mcp-Session-Id", "b"}, HeaderSessionID},
		{"param twice", []string{"Mcp-Param-Region", "eu", "mcp-param-region", "us"}, "Mcp-Param-Region"},
		{"two different params", []string{"Mcp-Param-Region", "eu", "Mcp-Param-Tenant", "x"}, ""},
		{"other header twice", []string{"Accept", "application/json", "Accept", "text/event-stream"}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := http.Header{}
			for i := 0; i+1 < len(tc.pairs); i += 2 {
				h.Add(tc.pairs[i], tc.pairs[i+1])
			}
			if got := RepeatedHeader(h); got != tc.want {
				t.Fatalf("RepeatedHeader = %q, want %q", got, tc.want)
			}
		})
	}
}
