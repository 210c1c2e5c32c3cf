package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcpgw/mcpgw/internal/testpeers"
)

// manage calls a management route with key and returns the status and the decoded body (a
// JSON array as {"list": [...]}).
func manage(t *testing.T, method, url, key, body string) (int, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest(method, url, bytes.NewReader([]byte(body)))
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("%s %s: body %q: %v", method, url, raw, err)
	}
	if m, ok := v.(map[string]any); ok {
		return resp.StatusCode, m
	}
	return resp.StatusCode, map[string]any{"list": v} // a list route's answer
}

// generateKey mints a key with the master key and returns the secret.
func generateKey(t *testing.T, gw, body string) string {
	t.Helper()
	status, m := manage(t, http.MethodPost, gw+"/key/generate", testKey, body)
	key, _ := m["key"].(string)
	if status != 200 || !strings.HasPrefix(key, "sk-") {
		t.Fatalf("/key/generate = %d %v", status, m)
	}
	return key
}

func modernAs(key, method, name string) map[string]string {
	h := modernHeaders(method, name)
	h["Authorization"] = "Bearer " + key
	return h
}

func listAs(t *testing.T, gw, key string) (int, map[string]any) {
	t.Helper()
	status, _, body := rpc(t, gw+"/mcp", modernAs(key, "tools/list", ""),
		`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{`+modernMeta+`}}`)
	return status, body
}

func callAs(t *testing.T, gw, key, tool string) (int, map[string]any) {
	t.Helper()
	status, _, body := rpc(t, gw+"/mcp", modernAs(key, "tools/call", tool),
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"`+tool+`","arguments":{},`+modernMeta+`}}`)
	return status, body
}

// TestStoreKeyLifecycle: a key minted with the master key lists and calls only what its
// object_permission grants; blocked, it is refused at once; unblocked it works again; deleted,
// it is refused.
func TestStoreKeyLifecycle(t *testing.T) {
	forEachStore(t, func(t *testing.T, st storeBackend) {
		fixture := testpeers.StartGoFixtureHTTP(t, false)
		gw := startGatewayWithStore(t, st, fmt.Sprintf("general_settings:\n  master_key: %s\nmcp_servers:\n  fx:\n    url: %s\n  other:\n    url: %s\n",
			testKey, fixture, fixture))
		key := generateKey(t, gw, `{"key_alias":"alice-app","user_id":"alice","metadata":{"env":"test"},
			"object_permission":{"mcp_servers":["fx"],"mcp_tool_permissions":{"fx":["test_simple_text"]}}}`)

		status, body := listAs(t, gw, key)
		if tools := toolsOf(body); status != 200 || !slices.Equal(tools, []string{"fx-test_simple_text"}) {
			t.Fatalf("tools/list with the key = %d %v, want only fx-test_simple_text", status, tools)
		}
		if _, body := listAs(t, gw, testKey); !slices.Contains(toolsOf(body), "other-test_simple_text") {
			t.Fatalf("the master key's listing lacks the other server: %v", toolsOf(body))
		}
		status, body = callAs(t, gw, key, "fx-test_simple_text")
		if res, _ := body["result"].(map[string]any); status != 200 || res == nil || res["isError"] == true {
			t.Fatalf("tools/call granted = %d %v", status, body)
		}
		for _, tool := range []string{"other-test_simple_text", "fx-test_error_tool"} {
			_, body := callAs(t, gw, key, tool)
			if res, _ := body["result"].(map[string]any); body["error"] == nil && (res == nil || res["isError"] != true) {
				t.Fatalf("tools/call %s outside the key's permission succeeded: %v", tool, body)
			}
		}

		ref := `{"key":"` + key + `"}`
		if status, m := manage(t, http.MethodPost, gw+"/key/block", testKey, ref); status != 200 || m["blocked"] != true {
			t.Fatalf("/key/block = %d %v", status, m)
		}
		status, body = listAs(t, gw, key)
		if status != 401 || !strings.Contains(errMessage(body), "blocked") {
			t.Fatalf("blocked key: %d %v, want 401 saying blocked", status, body)
		}
		if status, m := manage(t, http.MethodPost, gw+"/key/unblock", testKey, ref); status != 200 || m["blocked"] != false {
			t.Fatalf("/key/unblock = %d %v", status, m)
		}
		if status, _ := callAs(t, gw, key, "fx-test_simple_text"); status != 200 {
			t.Fatalf("unblocked key: %d", status)
		}

		status, info := manage(t, http.MethodGet, gw+"/key/info?key="+key, testKey, "")
		in, _ := info["info"].(map[string]any)
		if status != 200 || in["key_alias"] != "alice-app" || in["user_id"] != "alice" || in["token"] != info["key"] ||
			strings.Contains(fmt.Sprint(info), key) {
			t.Fatalf("/key/info = %d %v", status, info)
		}

		if status, m := manage(t, http.MethodPost, gw+"/key/delete", testKey, `{"keys":["`+key+`"]}`); status != 200 || len(m["deleted_keys"].([]any)) != 1 {
			t.Fatalf("/key/delete = %d %v", status, m)
		}
		status, body = listAs(t, gw, key)
		if status != 401 || !strings.Contains(errMessage(body), "no such key") {
			t.Fatalf("deleted key: %d %v, want 401", status, body)
		}
		if status, _ := manage(t, http.MethodGet, gw+"/key/info?key="+key, testKey, ""); status != 404 {
			t.Fatalf("/key/info of a deleted key = %d, want 404", status)
		}
	})
}

// TestStoreKeyExpires: a key generated with duration "1s" works, then is refused with 401.
func TestStoreKeyExpires(t *testing.T) {
	forEachStore(t, func(t *testing.T, st storeBackend) {
		fixture := testpeers.StartGoFixtureHTTP(t, false)
		gw := startGatewayWithStore(t, st, fmt.Sprintf("general_settings:\n  master_key: %s\nmcp_servers:\n  fx:\n    url: %s\n", testKey, fixture))
		key := generateKey(t, gw, `{"duration":"1s"}`)
		if status, _ := listAs(t, gw, key); status != 200 {
			t.Fatalf("fresh key: %d", status)
		}
		time.Sleep(1100 * time.Millisecond)
		status, body := listAs(t, gw, key)
		if status != 401 || !strings.Contains(errMessage(body), "expired") {
			t.Fatalf("expired key: %d %v, want 401 saying expired", status, body)
		}
	})
}

// TestKeyManagementRefusesBadInput: only the master key manages keys (LiteLLM's
// {"error": {...}} shape), and malformed bodies, unknown fields, bad values and duplicate
// aliases are 4xx with a message naming the problem, writing nothing.
func TestKeyManagementRefusesBadInput(t *testing.T) {
	forEachStore(t, func(t *testing.T, st storeBackend) {
		gw := startGatewayWithStore(t, st, "general_settings:\n  master_key: "+testKey+"\n")
		first := generateKey(t, gw, `{"key_alias":"taken"}`)
		tests := []struct {
			name, key, path, body string
			status                int
			want                  string
		}{
			{"no credential", "", "/key/generate", `{}`, 401, "missing credential"},
			{"store key is not admin", first, "/key/generate", `{}`, 403, "your role does not allow"},
			{"malformed", testKey, "/key/generate", `{"key_alias":`, 400, "malformed JSON"},
			{"not an object", testKey, "/key/generate", `[]`, 400, "want a JSON object"},
			{"trailing data", testKey, "/key/generate", `{} {}`, 400, "unexpected data"},
			{"unknown field", testKey, "/key/generate", `{"models":["gpt-4"]}`, 400, `unknown field "models"`},
			{"field case", testKey, "/key/generate", `{"KEY_ALIAS":"x"}`, 400, `unknown field "KEY_ALIAS"`},
			{"unknown permission field", testKey, "/key/generate", `{"object_permission":{"mcp_server":["a"]}}`, 400, `unknown field "mcp_server"`},
			{"bad duration", testKey, "/key/generate", `{"duration":"30 days"}`, 400, "duration"},
			{"negative rpm", testKey, "/key/generate", `{"rpm_limit":-1}`, 400, "rpm_limit"},
			{"bad metadata", testKey, "/key/generate", `{"metadata":"x"}`, 400, "metadata"},
			{"duplicate alias", testKey, "/key/generate", `{"key_alias":"taken"}`, 400, "key_alias already in use"},
			{"block unknown", testKey, "/key/block", `{"key":"sk-nope"}`, 404, "not found"},
			{"block without key", testKey, "/key/block", `{}`, 400, "key: required"},
			{"delete partly unknown", testKey, "/key/delete", `{"keys":["` + first + `","sk-nope"]}`, 404, "1 of 2 keys do not exist"},
			{"delete nothing", testKey, "/key/delete", `{"keys":[]}`, 400, "non-empty"},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				status, m := manage(t, http.MethodPost, gw+tt.path, tt.key, tt.body)
				e, _ := m["error"].(map[string]any)
				if status != tt.status || e["code"] != fmt.Sprint(tt.status) || !strings.Contains(fmt.Sprint(e["message"]), tt.want) {
					t.Fatalf("= %d %v, want %d with %q", status, m, tt.status, tt.want)
				}
			})
		}
		// Nothing above wrote: the first key is the only one with its alias, and still works.
		if status, _ := manage(t, http.MethodGet, gw+"/key/info?key="+first, testKey, ""); status != 200 {
			t.Fatalf("the first key is gone after a failed delete: %d", status)
		}
	})
}

// TestKeyUpdateAndList: /key/update changes a key's permissions for its next request, keeps
// the fields it was not given, refuses another key's alias without writing; /key/list pages
// and filters.
func TestKeyUpdateAndList(t *testing.T) {
	forEachStore(t, func(t *testing.T, st storeBackend) {
		fixture := testpeers.StartGoFixtureHTTP(t, false)
		gw := startGatewayWithStore(t, st, fmt.Sprintf("general_settings:\n  master_key: %s\nmcp_servers:\n  fx:\n    url: %s\n  other:\n    url: %s\n",
			testKey, fixture, fixture))
		key := generateKey(t, gw, `{"key_alias":"k1","user_id":"alice","object_permission":{"mcp_servers":["fx"]}}`)
		generateKey(t, gw, `{"key_alias":"k2","user_id":"alice"}`)
		generateKey(t, gw, `{"key_alias":"k3","user_id":"bob"}`)
		if _, body := listAs(t, gw, key); !slices.Contains(toolsOf(body), "fx-test_simple_text") || slices.Contains(toolsOf(body), "other-test_simple_text") {
			t.Fatalf("before update: %v", toolsOf(body))
		}
		status, m := manage(t, http.MethodPost, gw+"/key/update", testKey,
			`{"key":"`+key+`","object_permission":{"mcp_servers":["other"]},"metadata":{"v":2},"duration":"1h"}`)
		if status != 200 || m["key_alias"] != "k1" || m["user_id"] != "alice" || m["expires"] == nil || m["key"] != nil {
			t.Fatalf("/key/update = %d %v", status, m)
		}
		if _, body := listAs(t, gw, key); slices.Contains(toolsOf(body), "fx-test_simple_text") || !slices.Contains(toolsOf(body), "other-test_simple_text") {
			t.Fatalf("after update: %v, want only the other server's tools", toolsOf(body))
		}
		if status, m := manage(t, http.MethodPost, gw+"/key/update", testKey, `{"key":"`+key+`","key_alias":"k2","user_id":"mallory"}`); status != 400 {
			t.Fatalf("update to another key's alias = %d %v", status, m)
		}
		if status, m := manage(t, http.MethodPost, gw+"/key/update", testKey, `{"key":"`+key+`","models":[]}`); status != 400 {
			t.Fatalf("update with an unknown field = %d %v", status, m)
		}
		if status, m := manage(t, http.MethodPost, gw+"/key/update", testKey, `{"key":"sk-nope","user_id":"x"}`); status != 404 {
			t.Fatalf("update of an unknown key = %d %v", status, m)
		}
		_, info := manage(t, http.MethodGet, gw+"/key/info?key="+key, testKey, "")
		if in, _ := info["info"].(map[string]any); in["user_id"] != "alice" || in["key_alias"] != "k1" {
			t.Fatalf("a refused update wrote: %v", in)
		}

		status, m = manage(t, http.MethodGet, gw+"/key/list?user_id=alice&size=1&page=2", testKey, "")
		if keys, _ := m["keys"].([]any); status != 200 || len(keys) != 1 || m["total_count"] != 2.0 || m["total_pages"] != 2.0 || m["current_page"] != 2.0 {
			t.Fatalf("/key/list page 2 of alice's = %d %v", status, m)
		}
		status, m = manage(t, http.MethodGet, gw+"/key/list?key_alias=k3&return_full_object=true", testKey, "")
		keys, _ := m["keys"].([]any)
		if status != 200 || len(keys) != 1 || keys[0].(map[string]any)["user_id"] != "bob" || keys[0].(map[string]any)["key"] != nil {
			t.Fatalf("/key/list full objects = %d %v", status, m)
		}
		for _, q := range []string{"size=0", "size=101", "page=0", "sort_by=x", "return_full_object=yes"} {
			if status, m := manage(t, http.MethodGet, gw+"/key/list?"+q, testKey, ""); status != 400 {
				t.Errorf("/key/list?%s = %d %v, want 400", q, status, m)
			}
		}
		if status, _ := manage(t, http.MethodGet, gw+"/key/list", key, ""); status != 403 {
			t.Fatalf("/key/list with a store key = %d, want 403", status)
		}
	})
}

// TestSubscriptionEndsWhenStoreKeyIsBlocked: a subscriptions/listen opened with a store key
// ends when the key is blocked (the stream re-authenticates its caller), and its upstream
// listener closes.
func TestSubscriptionEndsWhenStoreKeyIsBlocked(t *testing.T) {
	forEachStore(t, func(t *testing.T, st storeBackend) {
		t.Parallel()
		peer := startListenPeer(t, true)
		gw := startGatewayWithStore(t, st, fmt.Sprintf(`mcp_servers:
  peer:
    url: %s
    protocol_version: "2026-07-28"
general_settings:
  master_key: %s
`, peer.url, testKey))
		key := generateKey(t, gw, `{"object_permission":{"mcp_servers":["peer"]}}`)
		_, events := listenWith(t, gw+"/mcp/", modernAs(key, "subscriptions/listen", ""), `{"toolsListChanged":true}`)
		if first := nextEvent(events, 15*time.Second); !strings.Contains(first, "notifications/subscriptions/acknowledged") {
			t.Fatalf("first event = %q", first)
		}
		waitOpen(t, &peer.open, 1, time.Second, "the acknowledged subscription")
		if status, m := manage(t, http.MethodPost, gw+"/key/block", testKey, `{"key":"`+key+`"}`); status != 200 {
			t.Fatalf("/key/block = %d %v", status, m)
		}
		deadline := time.After(20 * time.Second)
		for ended := false; !ended; {
			select {
			case ev, ok := <-events:
				if !ok {
					ended = true
					break
				}
				if strings.Contains(ev, `"method":`) {
					t.Fatalf("a blocked key received %s", ev)
				}
			case <-deadline:
				t.Fatal("a subscription outlived its key's block by 20 s")
			}
		}
		waitOpen(t, &peer.open, 0, 3*time.Second, "after the subscription ended")
	})
}
