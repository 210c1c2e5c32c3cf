package e2e

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mcpgw/mcpgw/internal/store"
	"github.com/mcpgw/mcpgw/internal/testpeers"
)

// spendLogs reads /spend/logs?query as key, waiting (up to 10 s) for want rows.
func spendLogs(t *testing.T, gw, key, query string, want int) []map[string]any {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		status, m := manage(t, http.MethodGet, gw+"/spend/logs?"+query, key, "")
		list, _ := m["list"].([]any)
		if status != 200 {
			t.Fatalf("/spend/logs?%s = %d %v", query, status, m)
		}
		if len(list) >= want || time.Now().After(deadline) {
			out := make([]map[string]any, 0, len(list))
			for _, v := range list {
				out = append(out, v.(map[string]any))
			}
			return out
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestSpendLogsAndBudget: every tool call and listing through the gateway is one spend row
// with the caller's ids and the configured cost; the key's and team's spend add up; a key
// whose spend reached its max_budget is refused its next tool call with LiteLLM's message,
// while listings still work; a key reads only its own rows.
func TestSpendLogsAndBudget(t *testing.T) {
	forEachStore(t, func(t *testing.T, st storeBackend) {
		fixture := testpeers.StartGoFixtureHTTP(t, false)
		gw := startGatewayWithStore(t, st, fmt.Sprintf(`general_settings:
  master_key: %s
mcp_servers:
  fx:
    url: %s
    mcp_info:
      mcp_server_cost_info:
        default_cost_per_query: 0.1
        tool_name_to_cost_per_query:
          test_simple_text: 0.25
`, testKey, fixture))
		if status, m := manage(t, http.MethodPost, gw+"/team/new", testKey, `{"team_id":"eng","max_budget":100}`); status != 200 {
			t.Fatalf("/team/new = %d %v", status, m)
		}
		key := generateKey(t, gw, `{"key_alias":"budgeted","user_id":"alice","team_id":"eng","max_budget":0.6}`)
		other := generateKey(t, gw, `{"user_id":"bob"}`)
		hash := store.Hash(key)

		if status, _ := listAs(t, gw, key); status != 200 {
			t.Fatalf("tools/list = %d", status)
		}
		for i := range 2 {
			if status, body := callAs(t, gw, key, "fx-test_simple_text"); status != 200 || body["result"] == nil {
				t.Fatalf("call %d = %d %v", i, status, body)
			}
		}
		if status, body := callAs(t, gw, key, "fx-test_image_content"); status != 200 || body["result"] == nil {
			t.Fatalf("image tool = %d %v", status, body) // the server's default_cost_per_query
		}
		rows := spendLogs(t, gw, testKey, "api_key="+hash, 4)
		if len(rows) != 4 {
			t.Fatalf("%d rows for 4 requests: %v", len(rows), rows)
		}
		var total float64
		calls := 0
		for _, r := range rows {
			meta, _ := r["metadata"].(map[string]any)
			if r["api_key"] != hash || r["user"] != "alice" || r["team_id"] != "eng" || meta["user_api_key_alias"] != "budgeted" {
				t.Fatalf("row caller ids: %v", r)
			}
			total += r["spend"].(float64)
			switch r["call_type"] {
			case "call_mcp_tool":
				calls++
				if meta["mcp_server_name"] != "fx" || !strings.HasPrefix(r["mcp_namespaced_tool_name"].(string), "fx-") {
					t.Fatalf("tool row: %v", r)
				}
			case "list_mcp_tools":
				if r["spend"].(float64) != 0 {
					t.Fatalf("a listing cost: %v", r)
				}
			default:
				t.Fatalf("call_type %v", r["call_type"])
			}
		}
		if calls != 3 || total < 0.5999 || total > 0.6001 {
			t.Fatalf("%d tool rows costing %v, want 3 costing 0.25+0.25+0.1", calls, total)
		}
		_, info := manage(t, http.MethodGet, gw+"/key/info?key="+key, testKey, "")
		in, _ := info["info"].(map[string]any)
		if sp, _ := in["spend"].(float64); sp < 0.5999 || in["max_budget"] != 0.6 {
			t.Fatalf("/key/info spend %v max_budget %v", in["spend"], in["max_budget"])
		}
		_, team := manage(t, http.MethodGet, gw+"/team/info?team_id=eng", testKey, "")
		if !strings.Contains(fmt.Sprint(team), "spend:0.6") {
			t.Fatalf("/team/info: %v", team)
		}

		status, hdr, body := rpc(t, gw+"/mcp", modernAs(key, "tools/call", "fx-test_simple_text"),
			`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"fx-test_simple_text","arguments":{},`+modernMeta+`}}`)
		if status != 429 || !strings.Contains(errMessage(body), "Budget has been exceeded") ||
			!strings.Contains(errMessage(body), "Max Budget for Token: 0.6") || hdr.Get("Retry-After") != "86400" {
			t.Fatalf("over budget: %d %v (Retry-After %q), want 429 with LiteLLM's budget message", status, body, hdr.Get("Retry-After"))
		}
		if status, _ := listAs(t, gw, key); status != 200 {
			t.Fatalf("listing over budget = %d, want 200 (budgets hold tool calls)", status)
		}
		if status, _ := callAs(t, gw, other, "fx-test_simple_text"); status != 200 {
			t.Fatalf("another key = %d", status)
		}
		// the refused call is a row too, costing nothing
		rows = spendLogs(t, gw, testKey, "api_key="+hash, 6)
		if len(rows) != 6 || rows[0]["status"] != "failure" && rows[1]["status"] != "failure" {
			t.Fatalf("rows after the refusal: %v", rows)
		}

		// a key reads its own rows only
		if got := spendLogs(t, gw, other, "", 1); len(got) != 1 || got[0]["user"] != "bob" {
			t.Fatalf("bob's own rows: %v", got)
		}
		if status, _ := manage(t, http.MethodGet, gw+"/spend/logs?api_key="+hash, other, ""); status != 403 {
			t.Fatalf("bob reading alice's rows = %d, want 403", status)
		}
		today := time.Now().UTC().Format(time.DateOnly)
		if got := spendLogs(t, gw, testKey, "user_id=alice&start_date="+today+"&end_date="+today, 6); len(got) != 6 {
			t.Fatalf("alice today: %d rows", len(got))
		}
		status, daily := manage(t, http.MethodGet, gw+"/spend/daily?mcp_server_name=fx&api_key="+key, testKey, "")
		list, _ := daily["list"].([]any)
		if status != 200 || len(list) != 1 {
			t.Fatalf("/spend/daily = %d %v", status, daily)
		}
		if d := list[0].(map[string]any); d["api_requests"] != 4.0 || d["failed_requests"] != 1.0 || d["team_id"] != "eng" {
			t.Fatalf("daily row %v, want 4 calls to fx, 1 failed (the refusal)", d)
		}
	})
}
