package e2e

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/mcpgw/mcpgw/internal/testpeers"
)

// TestLegacySessionSurvivesApply: a caller's legacy session opened before a
// new config is applied goes on working after it, and sees the new config.
func TestLegacySessionSurvivesApply(t *testing.T) {
	fixture := testpeers.StartGoFixtureHTTP(t, false)
	cfg := func(extra string) string {
		return fmt.Sprintf("general_settings:\n  master_key: %s\nmcp_servers:\n  fx:\n    url: %s\n%s", testKey, fixture, extra)
	}
	gw := startGateway(t, cfg(""), nil)
	sid := initLegacy(t, gw.url+"/mcp", testKey)
	list := `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`
	status, _, body := rpc(t, gw.url+"/mcp", legacyHeaders(testKey, sid), list)
	before := toolsOf(body)
	if status != 200 || !slices.Contains(before, "fx-test_simple_text") || len(before) < 2 {
		t.Fatalf("tools/list before = %d %v", status, body)
	}
	next := loadConfig(t, cfg("    allowed_tools: [test_simple_text]\n"), func(string) (string, bool) { return "", false })
	if err := gw.app.Apply(context.Background(), next); err != nil {
		t.Fatal(err)
	}
	status, _, body = rpc(t, gw.url+"/mcp", legacyHeaders(testKey, sid), list)
	if after := toolsOf(body); status != 200 || !slices.Equal(after, []string{"fx-test_simple_text"}) {
		t.Fatalf("tools/list after = %d %v", status, body)
	}
}
