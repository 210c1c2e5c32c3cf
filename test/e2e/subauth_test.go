package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// The subscription tests' keys: the master key is also the caller's key,
// and the custom_auth webhook admits it and sk-subscriptions-other.
const subscriptionKey = "sk-subscriptions-test"

// subscriptionAuth is a custom_auth webhook: 401 for unknown keys, else the
// identity in its state (bob, with change_tools only, for
// sk-subscriptions-other).
func subscriptionAuth(t *testing.T, identity map[string]any) (url string, write func(map[string]any)) {
	var mu sync.Mutex
	state := identity
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var in struct {
			APIKey string `json:"api_key"`
		}
		_ = json.NewDecoder(r.Body).Decode(&in)
		w.Header().Set("Content-Type", "application/json")
		if in.APIKey != subscriptionKey && in.APIKey != "sk-subscriptions-other" {
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = io.WriteString(w, `{"detail":"Unknown caller"}`)
			return
		}
		mu.Lock()
		data := map[string]any{}
		for k, v := range state {
			data[k] = v
		}
		mu.Unlock()
		if in.APIKey == "sk-subscriptions-other" {
			perm, _ := data["object_permission"].(map[string]any)
			other := map[string]any{"mcp_tool_permissions": map[string]any{"subscription-server": []string{"change_tools"}}}
			for k, v := range perm {
				other[k] = v
			}
			data["api_key"], data["user_id"], data["object_permission"] = in.APIKey, "bob", other
		}
		_ = json.NewEncoder(w).Encode(data)
	}))
	t.Cleanup(srv.Close)
	return srv.URL, func(id map[string]any) { mu.Lock(); state = id; mu.Unlock() }
}

// TestSubscriptionEndsWhenWebhookIdentityChanges covers the custom_auth
// cases ("revoked", "identity", "team", "org", "end-user"): the caller
// presents the master key, the webhook's alice governs, and a listen opened as alice ends
// once the webhook names someone else or revokes subscription-server.
func TestSubscriptionEndsWhenWebhookIdentityChanges(t *testing.T) {
	identity := func() map[string]any {
		return map[string]any{"api_key": subscriptionKey, "user_id": "alice", "user_role": "internal_user",
			"object_permission": map[string]any{"object_permission_id": "subscription-permission", "mcp_servers": []string{"subscription-server"}}}
	}
	for _, access := range []string{"revoked", "identity", "team", "org", "end-user"} {
		t.Run(access, func(t *testing.T) {
			t.Parallel()
			peer := startListenPeer(t, true) // served in-process: no proxy between it and the gateway
			listens := &peer.open
			hook, write := subscriptionAuth(t, identity())
			gw := startGateway(t, fmt.Sprintf(`model_list: []
mcp_servers:
  peer:
    server_id: subscription-server
    url: %s
    transport: http
    protocol_version: "2026-07-28"
general_settings:
  master_key: %s
  custom_auth: %s
  store_model_in_db: false
  mcp_advertised_versions: ["2025-11-25", "2026-07-28"]
`, peer.url, subscriptionKey, hook), map[string]string{"LITELLM_SALT_KEY": "subscription-pagination-key", "LITELLM_DANGEROUSLY_PERMIT_WEAK_OR_UNSET_MASTER_KEY": "true"})
			hdr := func(method, name string) map[string]string {
				h := modernHeaders(method, name)
				h["Authorization"] = "Bearer " + subscriptionKey
				return h
			}
			status, _, body := rpc(t, gw.url+"/mcp/", hdr("tools/list", ""), `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{`+modernMeta+`}}`)
			if status != 200 || !strings.Contains(fmt.Sprint(toolsOf(body)), "peer-test_trigger_tool_change") {
				t.Fatalf("alice's tools/list: %d %v", status, body)
			}
			events := openListen(t, gw.url+"/mcp/", hdr("subscriptions/listen", ""))
			if first := <-events; !strings.Contains(first, "notifications/subscriptions/acknowledged") {
				t.Fatalf("first event = %s", first)
			}
			for deadline := time.Now().Add(3 * time.Second); listens.Load() == 0; time.Sleep(20 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatal("the acknowledged subscription holds no upstream listener")
				}
			}
			changed := identity()
			if access == "revoked" {
				changed["object_permission"] = map[string]any{"object_permission_id": "subscription-permission", "mcp_servers": []string{"denied"}}
			} else {
				changed[map[string]string{"identity": "user_id", "team": "team_id", "org": "org_id", "end-user": "end_user_id"}[access]] = "bob"
			}
			write(changed)
			// The upstream's tools change (called directly, not through the gateway).
			trigger := modernHeaders("tools/call", "test_trigger_tool_change")
			delete(trigger, "Authorization")
			if status, _, out := rpc(t, peer.url, trigger, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"test_trigger_tool_change","arguments":{},`+modernMeta+`}}`); status != 200 {
				t.Fatalf("trigger upstream: %d %v", status, out)
			}
			// The subscription ends within 5 s with no event delivered,
			// and the upstream listener closes within 3 s after.
			// (The listen's final response, which ends it, is no event.)
			deadline := time.After(5 * time.Second)
		wait:
			for {
				select {
				case ev, ok := <-events:
					if !ok {
						break wait
					}
					if strings.Contains(ev, `"method":`) {
						t.Fatalf("a %s caller still received %s", access, ev)
					}
				case <-deadline:
					t.Fatal("the listen outlived the caller's identity")
				}
			}
			for deadline := time.Now().Add(3 * time.Second); listens.Load() != 0; time.Sleep(20 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("%d upstream listeners survived the ended subscription", listens.Load())
				}
			}
		})
	}
}

// openListen opens subscriptions/listen for tool changes and returns its SSE
// data lines; the channel closes when the stream ends.
func openListen(t *testing.T, url string, hdr map[string]string) <-chan string {
	ctx, cancel := context.WithCancel(context.Background())
	body := `{"jsonrpc":"2.0","id":"L1","method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true},` + modernMeta + `}}`
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	events := make(chan string, 16)
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); resp.Body.Close(); <-done })
	go func() {
		defer close(done)
		defer close(events)
		var buf []byte
		tmp := make([]byte, 4096)
		for {
			n, err := resp.Body.Read(tmp)
			buf = append(buf, tmp[:n]...)
			for {
				i := bytes.Index(buf, []byte("\n\n"))
				if i < 0 {
					break
				}
				for _, line := range strings.Split(string(buf[:i]), "\n") {
					if d, ok := strings.CutPrefix(line, "data: "); ok {
						select {
						case events <- d:
						case <-ctx.Done():
							return
						}
					}
				}
				buf = buf[i+2:]
			}
			if err != nil {
				return
			}
		}
	}()
	return events
}
