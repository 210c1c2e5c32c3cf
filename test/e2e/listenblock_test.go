package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpgw/mcpgw/internal/testpeers"
)

// Attack: a caller opens subscriptions/listen on a stdio server, then the
// custom_auth webhook turns slow (or the caller stops reading). Delivering
// a list change must not hold the goroutine that reads the stdio server's
// output, or every other call to that server waits behind it.
func TestListenEventDoesNotStallStdioReader(t *testing.T) {
	const hookDelay = 3 * time.Second
	var slow atomic.Bool
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var in struct {
			Method string `json:"method"`
		}
		_ = json.NewDecoder(r.Body).Decode(&in)
		if slow.Load() && in.Method == "subscriptions/listen" {
			select { // a re-check of the listen's caller
			case <-time.After(hookDelay):
			case <-r.Context().Done():
				return
			}
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = fmt.Fprint(w, `{"user_id":"alice","object_permission":{"mcp_servers":["peer"]}}`)
	}))
	t.Cleanup(hook.Close)
	gw := startGateway(t, fmt.Sprintf(`model_list: []
mcp_servers:
  peer:
    transport: stdio
    command: %s
    protocol_version: "2026-07-28"
general_settings:
  master_key: %s
  custom_auth: %s
  store_model_in_db: false
`, testpeers.GoFixture(t), subscriptionKey, hook.URL), map[string]string{"LITELLM_SALT_KEY": "listen-block-salt-key", "LITELLM_DANGEROUSLY_PERMIT_WEAK_OR_UNSET_MASTER_KEY": "true"})
	hdr := func(method, name string) map[string]string {
		h := modernHeaders(method, name)
		h["Authorization"] = "Bearer " + subscriptionKey
		return h
	}
	events := openListen(t, gw.url+"/mcp/", hdr("subscriptions/listen", ""))
	select {
	case first := <-events:
		if !strings.Contains(first, "notifications/subscriptions/acknowledged") {
			t.Fatalf("first event = %s", first)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("no acknowledgement")
	}
	slow.Store(true)
	start := time.Now()
	status, _, out := rpc(t, gw.url+"/mcp/", hdr("tools/call", "peer-test_trigger_tool_change"),
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"peer-test_trigger_tool_change","arguments":{},`+modernMeta+`}}`)
	if status != 200 || out["error"] != nil {
		t.Fatalf("trigger: %d %v", status, out)
	}
	time.Sleep(200 * time.Millisecond) // the change notification follows the answer
	for i := range 2 {
		status, _, out = rpc(t, gw.url+"/mcp/", hdr("tools/call", "peer-test_simple_text"),
			fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"peer-test_simple_text","arguments":{},`+modernMeta+`}}`, 3+i))
		if status != 200 || out["error"] != nil {
			t.Fatalf("tools/call: %d %v", status, out)
		}
	}
	if d := time.Since(start); d > hookDelay/2 {
		t.Fatalf("three tools/calls on the stdio server took %v: its reader waited on a listen's delivery", d)
	}
	select {
	case ev := <-events:
		if !strings.Contains(ev, "list_changed") {
			t.Fatalf("listen event = %s", ev)
		}
	case <-time.After(hookDelay + 10*time.Second):
		t.Fatal("the list change never reached the listen")
	}
}
