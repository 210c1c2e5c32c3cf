package e2e

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/mcpgw/mcpgw/internal/fakemcp"
	"github.com/mcpgw/mcpgw/internal/jsonrpc"
	"github.com/mcpgw/mcpgw/internal/redistest"
	"github.com/mcpgw/mcpgw/internal/testpeers"
)

// TestReplicaFailureKeepsSealedState: a legacy session, a list cursor and a continuation minted
// by replica A keep working on replica B after A is stopped for good (they are sealed with the
// shared LITELLM_SALT_KEY, not held by A).
func TestReplicaFailureKeepsSealedState(t *testing.T) {
	names := make([]string, 600)
	for i := range names {
		names[i] = fmt.Sprintf("t%03d", i)
	}
	many := fakemcp.New(t, fakemcp.Opts{
		Lists: map[string][]json.RawMessage{"tools/list": fakemcp.Tools(names...)},
		Handlers: map[string]fakemcp.Handler{"tools/call": func(json.RawMessage) (json.RawMessage, *jsonrpc.Error) {
			return json.RawMessage(`{"content":[{"type":"text","text":"ok"}]}`), nil
		}},
	})
	yaml := fmt.Sprintf("general_settings:\n  master_key: %s\nmcp_servers:\n  mod:\n    url: %s\n    allow_elicitation: true\n  many:\n    url: %s\n    rpm: 1000\n",
		testKey, testpeers.StartGoFixtureHTTP(t, true), many.URL())
	gws := startRedisReplicas(t, 2, yaml, redistest.URL(t), redistest.Prefix(t), "")
	a, b := gws[0], gws[1]

	sid := initLegacy(t, a.url+"/mcp", testKey)
	listPage := func(gw, cursor string) (int, map[string]any) {
		params := modernMeta
		if cursor != "" {
			params = `"cursor":"` + cursor + `",` + params
		}
		status, _, body := rpc(t, gw+"/mcp", modernHeaders("tools/list", ""), `{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{`+params+`}}`)
		return status, body
	}
	status, page1 := listPage(a.url, "")
	cursor, _ := resultOf(page1)["nextCursor"].(string)
	if status != 200 || cursor == "" {
		t.Fatalf("first page on A: %d %v", status, page1)
	}
	const tool = "mod-test_input_required_result_elicitation"
	_, _, body := rpc(t, a.url+"/mcp", modernHeaders("tools/call", tool), callBody(tool, `{}`, elicitMeta, ""))
	tok, _ := resultOf(body)["requestState"].(string)
	if tok == "" {
		t.Fatalf("no continuation from A: %v", body)
	}

	a.stop() // A is gone: its sessions, snapshots and upstream connections with it

	status, _, body = rpc(t, b.url+"/mcp", legacyHeaders(testKey, sid), `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"many-t001","arguments":{}}}`)
	if status != 200 || body["result"] == nil {
		t.Fatalf("A's legacy session on B: %d %v", status, body)
	}
	status, page2 := listPage(b.url, cursor)
	seen := map[string]bool{}
	for _, n := range append(toolsOf(page1), toolsOf(page2)...) {
		if seen[n] {
			t.Fatalf("%s listed twice across A's page and B's next page", n)
		}
		seen[n] = true
	}
	if status != 200 || !seen["many-t000"] || !seen["many-t599"] {
		t.Fatalf("A's cursor on B: %d, %d tools over both pages", status, len(seen))
	}
	extra := `,"requestState":"` + tok + `","inputResponses":{"user_name":{"action":"accept","content":{"name":"Bo"}}}`
	status, _, body = rpc(t, b.url+"/mcp", modernHeaders("tools/call", tool), callBody(tool, `{}`, elicitMeta, extra))
	if status != 200 || !strings.Contains(fmt.Sprint(resultOf(body)["content"]), "Hello, Bo!") {
		t.Fatalf("A's continuation resumed on B: %d %v", status, body)
	}
}
