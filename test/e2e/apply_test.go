package e2e

import (
	"context"
	"fmt"
	"net/http"
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

// TestDeletedSessionStaysDeletedAcrossApply: a legacy session its caller
// ended before a new config was applied is still refused after it (the
// record of ended sessions outlives the graph).
func TestDeletedSessionStaysDeletedAcrossApply(t *testing.T) {
	fixture := testpeers.StartGoFixtureHTTP(t, false)
	cfg := func(desc string) string {
		return fmt.Sprintf("general_settings:\n  master_key: %s\nmcp_servers:\n  fx:\n    url: %s\n    description: %s\n", testKey, fixture, desc)
	}
	gw := startGateway(t, cfg("before"), nil)
	sid := initLegacy(t, gw.url+"/mcp", testKey)
	req, _ := http.NewRequest(http.MethodDelete, gw.url+"/mcp", nil)
	for k, v := range legacyHeaders(testKey, sid) {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		t.Fatalf("DELETE = %d", resp.StatusCode)
	}
	if err := gw.app.Apply(context.Background(), loadConfig(t, cfg("after"), func(string) (string, bool) { return "", false })); err != nil {
		t.Fatal(err)
	}
	if status, _, body := rpc(t, gw.url+"/mcp", legacyHeaders(testKey, sid), `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`); status != http.StatusNotFound {
		t.Fatalf("tools/list on the deleted session after Apply = %d %v, want 404", status, body)
	}
}

// TestStatefulSessionKeptAcrossApply: a legacy session that holds state
// its sealed id cannot carry (a resource subscription, a log level) goes on
// with that state when a new config keeps its server's connection (a
// description change): the session lives on this replica, and the next
// front serves it.
func TestStatefulSessionKeptAcrossApply(t *testing.T) {
	fixture := testpeers.StartGoFixtureHTTP(t, false)
	cfg := func(desc string) string {
		return fmt.Sprintf("general_settings:\n  master_key: %s\nmcp_servers:\n  fx:\n    url: %s\n    description: %s\n", testKey, fixture, desc)
	}
	gw := startGateway(t, cfg("v0"), nil)
	tests := []struct {
		name, setup string
		want        int
	}{
		{"subscribed", `{"jsonrpc":"2.0","id":1,"method":"resources/subscribe","params":{"uri":"test://watched-resource"}}`, http.StatusOK},
		{"log level set", `{"jsonrpc":"2.0","id":1,"method":"logging/setLevel","params":{"level":"error"}}`, http.StatusOK},
		{"listed only", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, http.StatusOK},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sid := initLegacy(t, gw.url+"/mcp", testKey)
			if status, _, body := rpc(t, gw.url+"/mcp", legacyHeaders(testKey, sid), tt.setup); status != http.StatusOK || body["error"] != nil {
				t.Fatalf("setup = %d %v", status, body)
			}
			next := loadConfig(t, cfg(fmt.Sprintf("v%d", i+1)), func(string) (string, bool) { return "", false })
			if err := gw.app.Apply(context.Background(), next); err != nil {
				t.Fatal(err)
			}
			if status, _, body := rpc(t, gw.url+"/mcp", legacyHeaders(testKey, sid), `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`); status != tt.want {
				t.Fatalf("tools/list after Apply = %d %v, want %d", status, body, tt.want)
			}
		})
	}
}
