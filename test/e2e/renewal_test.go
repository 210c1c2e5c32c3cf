package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// renewalPeer is a go-sdk library server speaking 2026-07-28 at /mcp, with
// an OAuth2 token endpoint at /token that grants tokens for 70 s. It counts
// the subscriptions/listen requests open on it and records every token
// form.
type renewalPeer struct {
	url     string
	srv     *sdk.Server
	listens atomic.Int32
	// renewing is set when the test starts waiting for a renewal; then the
	// endpoint answers as the case says.
	renewing atomic.Bool
	access   string // "renewal", "renewal-scopes" or "renewal-failed"

	mu     sync.Mutex
	grants []url.Values
	bad    []string
}

func newRenewalPeer(t *testing.T, access string) *renewalPeer {
	p := &renewalPeer{access: access, srv: sdk.NewServer(&sdk.Implementation{Name: "subscription-peer", Version: "1"}, nil)}
	p.srv.AddTool(&sdk.Tool{Name: "change_tools", InputSchema: map[string]any{"type": "object"}}, func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		p.change()
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "changed"}}}, nil
	})
	mcpHandler := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return p.srv }, &sdk.StreamableHTTPOptions{Stateless: true})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/token":
			p.token(w, r)
		case "/mcp":
			if r.Header.Get("Mcp-Method") == "subscriptions/listen" {
				p.listens.Add(1)
				defer p.listens.Add(-1)
			}
			mcpHandler.ServeHTTP(w, r)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		for _, b := range p.bad {
			t.Error(b)
		}
	})
	p.url = srv.URL
	return p
}

// token is the /token endpoint: it checks the client_credentials form and
// grants "read write" for 70 s; once the test waits for a renewal, it
// narrows the grant to "read" (renewal-scopes) or refuses the client
// (renewal-failed).
func (p *renewalPeer) token(w http.ResponseWriter, r *http.Request) {
	_ = r.ParseForm()
	form := r.PostForm
	p.mu.Lock()
	if form.Get("grant_type") != "client_credentials" || form.Get("client_id") != "subscription-service" || form.Get("scope") != "read write" {
		p.bad = append(p.bad, fmt.Sprintf("token form %v", form))
	}
	p.grants = append(p.grants, form)
	n := len(p.grants)
	p.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	renewing := p.renewing.Load()
	if renewing && p.access == "renewal-failed" {
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = fmt.Fprint(w, `{"error":"invalid_client"}`)
		return
	}
	scope := "read write"
	if renewing && p.access == "renewal-scopes" {
		scope = "read"
	}
	_ = json.NewEncoder(w).Encode(map[string]any{"access_token": fmt.Sprint("synthetic-renewal-", n), "token_type": "Bearer", "expires_in": 70, "scope": scope})
}

func (p *renewalPeer) grantCount() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.grants)
}

// change adds the tool "added": the server tells its listeners that its
// tools changed.
func (p *renewalPeer) change() {
	p.srv.AddTool(&sdk.Tool{Name: "added", InputSchema: map[string]any{"type": "object"}}, func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "new tool"}}}, nil
	})
}

// The seed's "renewal", "renewal-scopes" and "renewal-failed" cases: a
// server whose credential the gateway mints (oauth2 client_credentials,
// 70 s tokens). While a caller listens, the gateway renews the token before
// expiry, within 25 s, with the same form; the subscription survives and
// the change arrives. A renewal that narrows the scopes or is refused
// (401 invalid_client) ends the subscription, and the upstream listener
// closes within 3 s.
func TestSubscriptionCredentialRenewal(t *testing.T) {
	for _, access := range []string{"renewal", "renewal-scopes", "renewal-failed"} {
		t.Run(access, func(t *testing.T) {
			t.Parallel()
			p := newRenewalPeer(t, access)
			hook, _ := subscriptionAuth(t, map[string]any{"api_key": subscriptionKey, "user_id": "alice", "user_role": "internal_user",
				"object_permission": map[string]any{"object_permission_id": "subscription-permission", "mcp_servers": []string{"subscription-server"}}})
			gw := startGateway(t, fmt.Sprintf(`model_list: []
mcp_servers:
  peer:
    server_id: subscription-server
    auth_type: oauth2
    oauth2_flow: client_credentials
    client_id: subscription-service
    client_secret: synthetic-client-secret
    token_url: %s/token
    scopes: [read, write]
    url: %s/mcp
    transport: http
    protocol_version: "2026-07-28"
general_settings:
  master_key: %s
  custom_auth: %s
  store_model_in_db: false
  mcp_advertised_versions: ["2025-11-25", "2026-07-28"]
`, p.url, p.url, subscriptionKey, hook), map[string]string{"LITELLM_SALT_KEY": "subscription-pagination-key", "LITELLM_DANGEROUSLY_PERMIT_WEAK_OR_UNSET_MASTER_KEY": "true"})
			hdr := func(method string) map[string]string {
				h := modernHeaders(method, "")
				h["Authorization"] = "Bearer " + subscriptionKey
				return h
			}
			tools := func() (int, []string) {
				status, _, body := rpc(t, gw.url+"/mcp/", hdr("tools/list"), `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{`+modernMeta+`}}`)
				return status, toolsOf(body)
			}
			if status, got := tools(); status != 200 || !slices.Contains(got, "peer-change_tools") || slices.Contains(got, "peer-added") {
				t.Fatalf("tools before the change: %d %v", status, got)
			}
			events, leave := listenUntilLeft(t, gw.url+"/mcp/", hdr("subscriptions/listen"))
			if first := <-events; !strings.Contains(first, "notifications/subscriptions/acknowledged") {
				t.Fatalf("first event = %s", first)
			}
			waitUntil(t, 5*time.Second, "no upstream listener for the subscription", func() bool { return p.listens.Load() == 1 })
			admitted := p.grantCount()
			if admitted == 0 {
				t.Fatal("the gateway reached the upstream without minting a token")
			}
			p.renewing.Store(true)
			// Keep calling, as the seed does; the renewal must come before
			// expiry whether or not a call asks for the token.
			for deadline := time.Now().Add(25 * time.Second); p.grantCount() == admitted; time.Sleep(200 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatal("no renewal within 25 s of a 70 s token")
				}
				if status, _ := tools(); status != 200 && access != "renewal-failed" {
					t.Fatalf("tools/list during renewal: %d", status)
				}
			}
			p.mu.Lock()
			first, last := p.grants[0].Encode(), p.grants[len(p.grants)-1].Encode()
			p.mu.Unlock()
			if first != last {
				t.Fatalf("renewal form %s differs from the first %s", last, first)
			}
			p.change()
			if access == "renewal" {
				select {
				case ev := <-events:
					if !strings.Contains(ev, "notifications/tools/list_changed") {
						t.Fatalf("event = %s", ev)
					}
				case <-time.After(5 * time.Second):
					t.Fatal("the subscription delivered no event after the renewal")
				}
				if status, got := tools(); status != 200 || !slices.Contains(got, "peer-added") {
					t.Fatalf("tools after the change: %d %v", status, got)
				}
				leave()
			} else {
				deadline := time.After(5 * time.Second)
			wait:
				for {
					select {
					case ev, ok := <-events:
						if !ok {
							break wait
						}
						if strings.Contains(ev, "notifications/tools/list_changed") {
							t.Fatalf("the subscription delivered %s after its credential was lost", ev)
						}
					case <-deadline:
						t.Fatal("the subscription outlived its credential")
					}
				}
			}
			waitUntil(t, 3*time.Second, "the upstream listener outlived the subscription", func() bool { return p.listens.Load() == 0 })
		})
	}
}
