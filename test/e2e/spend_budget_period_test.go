package e2e

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcpgw/mcpgw/internal/testpeers"
)

// TestBudgetDurationResetsSpend: a key with budget_duration and max_budget is refused once
// its spend reaches the budget, with Retry-After until budget_reset_at (both returned by
// /key/info), and is admitted again once that time passes; its next call's cost is the new
// period's spend. A team takes budget_duration too; a duration LiteLLM would not read is a
// 400 naming the field.
func TestBudgetDurationResetsSpend(t *testing.T) {
	forEachStore(t, func(t *testing.T, st storeBackend) {
		fixture := testpeers.StartGoFixtureHTTP(t, false)
		gw := startGatewayWithStore(t, st, fmt.Sprintf("general_settings:\n  master_key: %s\nmcp_servers:\n  fx:\n    url: %s\n"+
			"    mcp_info:\n      mcp_server_cost_info:\n        default_cost_per_query: 1\n", testKey, fixture))
		if status, m := manage(t, http.MethodPost, gw+"/team/new", testKey, `{"team_id":"eng","budget_duration":"30d"}`); status != 200 ||
			m["budget_duration"] != "30d" || m["budget_reset_at"] == nil {
			t.Fatalf("/team/new with budget_duration = %d %v", status, m)
		}
		if status, m := manage(t, http.MethodPost, gw+"/key/generate", testKey, `{"budget_duration":"soon"}`); status != 400 ||
			!strings.Contains(fmt.Sprint(m), "budget_duration") {
			t.Fatalf("an unreadable budget_duration = %d %v, want 400 naming it", status, m)
		}
		key := generateKey(t, gw, `{"max_budget":1,"budget_duration":"3s"}`)
		info := func() map[string]any {
			_, m := manage(t, http.MethodGet, gw+"/key/info?key="+key, testKey, "")
			in, _ := m["info"].(map[string]any)
			return in
		}
		in := info()
		resetAt, err := time.Parse(time.RFC3339Nano, fmt.Sprint(in["budget_reset_at"]))
		if in["budget_duration"] != "3s" || err != nil {
			t.Fatalf("/key/info budget_duration %v budget_reset_at %v", in["budget_duration"], in["budget_reset_at"])
		}
		if status, body := callAs(t, gw, key, "fx-test_simple_text"); status != 200 || body["result"] == nil {
			t.Fatalf("first call = %d %v", status, body)
		}
		deadline := time.Now().Add(2 * time.Second)
		for sp, _ := info()["spend"].(float64); sp != 1; sp, _ = info()["spend"].(float64) {
			if time.Now().After(deadline) {
				t.Fatalf("spend after one call = %v", sp)
			}
			time.Sleep(20 * time.Millisecond)
		}
		status, hdr, body := rpc(t, gw+"/mcp", modernAs(key, "tools/call", "fx-test_simple_text"),
			`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"fx-test_simple_text","arguments":{},`+modernMeta+`}}`)
		retry, _ := strconv.Atoi(hdr.Get("Retry-After"))
		if time.Now().Before(resetAt) && (status != 429 || !strings.Contains(errMessage(body), "Budget has been exceeded") || retry < 1 || retry > 3) {
			t.Fatalf("over budget within the period: %d %v (Retry-After %q), want 429 until the reset", status, body, hdr.Get("Retry-After"))
		}
		time.Sleep(time.Until(resetAt) + 50*time.Millisecond)
		if status, body := callAs(t, gw, key, "fx-test_simple_text"); status != 200 || body["result"] == nil {
			t.Fatalf("call after budget_reset_at = %d %v, want it admitted", status, body)
		}
		deadline = time.Now().Add(2 * time.Second)
		for {
			in = info()
			next, _ := time.Parse(time.RFC3339Nano, fmt.Sprint(in["budget_reset_at"]))
			if in["spend"] == 1.0 && next.After(resetAt) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("after the reset and one call: spend %v budget_reset_at %v, want 1 and a later reset", in["spend"], in["budget_reset_at"])
			}
			time.Sleep(20 * time.Millisecond)
		}
	})
}
