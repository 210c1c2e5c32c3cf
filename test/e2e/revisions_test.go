package e2e

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpgw/mcpgw/internal/testpeers"
)

// initializeAs sends a raw initialize asking for revision and returns the
// revision the gateway answered and the session id.
func initializeAs(t *testing.T, url, revision string) (answered, sid string) {
	t.Helper()
	status, hdr, body := rpc(t, url, map[string]string{"Authorization": "Bearer " + testKey},
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"`+revision+`","capabilities":{},"clientInfo":{"name":"old-client","version":"1"}}}`)
	res := resultOf(body)
	if status != 200 || res == nil {
		t.Fatalf("initialize %s: %d %v", revision, status, body)
	}
	answered, _ = res["protocolVersion"].(string)
	return answered, hdr.Get("Mcp-Session-Id")
}

// With the default config every revision the gateway speaks is served: an
// older client asking for 2024-11-05, 2025-03-26 or 2025-06-18 gets its own
// revision back (an older SDK disconnects when answered a revision it does
// not know), and the session works with and without MCP-Protocol-Version
// (which only exists from 2025-06-18). A narrowed mcp_advertised_versions
// answers the newest served legacy revision instead.
func TestInitializeNegotiatesEveryRevision(t *testing.T) {
	upstream := testpeers.StartGoFixtureHTTP(t, true)
	cfg := func(extra string) string {
		return fmt.Sprintf("general_settings:\n  master_key: %s\n%smcp_servers:\n  fx:\n    url: %s\n", testKey, extra, upstream)
	}
	def := startGateway(t, cfg(""), nil)
	narrowed := startGateway(t, cfg("  mcp_advertised_versions: [\"2025-03-26\", \"2025-06-18\", \"2026-07-28\"]\n"), nil)
	tests := []struct {
		gw        *gatewayUnderTest
		asked     string
		want      string
		sendsHead bool
	}{
		{def, "2024-11-05", "2024-11-05", false},
		{def, "2025-03-26", "2025-03-26", false},
		{def, "2025-06-18", "2025-06-18", true},
		{def, "2025-11-25", "2025-11-25", true},
		{def, "2026-07-28", "2025-11-25", true}, // initialize is legacy: the newest legacy revision
		{def, "1999-01-01", "2025-11-25", true},
		{narrowed, "2024-11-05", "2025-06-18", true},
		{narrowed, "2025-03-26", "2025-03-26", false},
		{narrowed, "2025-11-25", "2025-06-18", true},
	}
	for _, tt := range tests {
		name := "default"
		if tt.gw == narrowed {
			name = "narrowed"
		}
		t.Run(name+" asks "+tt.asked, func(t *testing.T) {
			got, sid := initializeAs(t, tt.gw.url+"/mcp", tt.asked)
			if got != tt.want {
				t.Fatalf("initialize %s answered %s, want %s", tt.asked, got, tt.want)
			}
			hdr := map[string]string{"Authorization": "Bearer " + testKey, "Mcp-Session-Id": sid}
			if tt.sendsHead {
				hdr["MCP-Protocol-Version"] = got
			}
			status, _, body := rpc(t, tt.gw.url+"/mcp", hdr, `{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{}}`)
			if status != 200 || len(toolsOf(body)) == 0 {
				t.Fatalf("tools/list in a %s session: %d %v", got, status, body)
			}
		})
	}
	// The discover answer and -32022 data list every served revision.
	status, _, body := rpc(t, def.url+"/mcp", modernHeaders("server/discover", ""), `{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{`+modernMeta+`}}`)
	if got := fmt.Sprint(resultOf(body)["supportedVersions"]); status != 200 || got != "[2024-11-05 2025-03-26 2025-06-18 2025-11-25 2026-07-28]" {
		t.Fatalf("discover: %d supportedVersions %s", status, got)
	}
}

// A real client (the Go SDK) pinned to each legacy revision lists and calls
// tools through the gateway, over streamable HTTP and over HTTP+SSE.
func TestSDKClientAtEveryLegacyRevision(t *testing.T) {
	gw := startGateway(t, fmt.Sprintf("general_settings:\n  master_key: %s\nmcp_servers:\n  fx:\n    url: %s\n", testKey, testpeers.StartGoFixtureHTTP(t, true)), nil)
	for _, rev := range []string{"2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"} {
		for _, sse := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s sse=%v", rev, sse), func(t *testing.T) {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				hc := &http.Client{Transport: authTransport{testKey}}
				var tr sdk.Transport = &sdk.StreamableClientTransport{Endpoint: gw.url + "/mcp", HTTPClient: hc, DisableStandaloneSSE: true}
				if sse {
					tr = &sdk.SSEClientTransport{Endpoint: gw.url + "/mcp/sse", HTTPClient: hc}
				}
				cs, err := sdk.NewClient(&sdk.Implementation{Name: "old", Version: "1"}, nil).Connect(ctx, tr, &sdk.ClientSessionOptions{ProtocolVersion: rev})
				if err != nil {
					t.Fatalf("connect: %v", err)
				}
				defer cs.Close()
				if got := cs.InitializeResult().ProtocolVersion; got != rev {
					t.Fatalf("negotiated %s, want %s", got, rev)
				}
				res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "fx-test_simple_text", Arguments: map[string]any{}})
				if err != nil || !strings.Contains(textOf(res), "simple text") {
					t.Fatalf("call: %v %v", res, err)
				}
			})
		}
	}
}
