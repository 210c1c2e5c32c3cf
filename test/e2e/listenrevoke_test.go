package e2e

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// aliceIdentity is the custom_auth identity of the subscription tests.
func aliceIdentity() map[string]any {
	return map[string]any{"api_key": subscriptionKey, "user_id": "alice", "user_role": "internal_user",
		"object_permission": map[string]any{"object_permission_id": "subscription-permission", "mcp_servers": []string{"subscription-server"}}}
}

// revokedIdentity is alice with subscription-server no longer hers.
func revokedIdentity() map[string]any {
	id := aliceIdentity()
	id["object_permission"] = map[string]any{"object_permission_id": "subscription-permission", "mcp_servers": []string{"denied"}}
	return id
}

// subscriptionGateway serves the seed's subscription setup: server key peer
// (server_id subscription-server) at upstream, custom_auth deciding, both
// revisions advertised; extra is more of the server's YAML (indented four
// spaces) and general more general_settings (two spaces).
func subscriptionGateway(t *testing.T, upstream, hook, extra, general string) *gatewayUnderTest {
	t.Helper()
	return startGateway(t, fmt.Sprintf(`model_list: []
mcp_servers:
  peer:
    server_id: subscription-server
    url: %s
    transport: http
    protocol_version: "2026-07-28"
%sgeneral_settings:
  master_key: %s
  custom_auth: %s
  store_model_in_db: false
  mcp_advertised_versions: ["2025-11-25", "2026-07-28"]
%s`, upstream, extra, subscriptionKey, hook, general), map[string]string{"LITELLM_SALT_KEY": "subscription-pagination-key", "LITELLM_DANGEROUSLY_PERMIT_WEAK_OR_UNSET_MASTER_KEY": "true"})
}

func subscriberHeaders(key, method string) map[string]string {
	h := modernHeaders(method, "")
	h["Authorization"] = "Bearer " + key
	return h
}

// idle: the caller is revoked and nothing changes upstream; the
// subscription still ends within 20 s and its upstream listener closes
// within 3 s after.
func TestSubscriptionEndsWhenIdleCallerIsRevoked(t *testing.T) {
	t.Parallel()
	peer := startListenPeer(t, true)
	hook, write := subscriptionAuth(t, aliceIdentity())
	gw := subscriptionGateway(t, peer.url, hook, "", "")
	_, events := listenWith(t, gw.url+"/mcp/", subscriberHeaders(subscriptionKey, "subscriptions/listen"), `{"toolsListChanged":true}`)
	if first := nextEvent(events, 15*time.Second); !strings.Contains(first, "notifications/subscriptions/acknowledged") {
		t.Fatalf("first event = %q", first)
	}
	waitOpen(t, &peer.open, 1, time.Second, "the acknowledged subscription")
	write(revokedIdentity())
	deadline := time.After(20 * time.Second)
	for ended := false; !ended; {
		select {
		case ev, ok := <-events:
			if !ok {
				ended = true
				break
			}
			if strings.Contains(ev, `"method":`) {
				t.Fatalf("a revoked caller received %s", ev)
			}
		case <-deadline:
			t.Fatal("an idle subscription outlived its caller's revocation by 20 s")
		}
	}
	waitOpen(t, &peer.open, 0, 3*time.Second, "after the subscription ended")
}

// legacy-caller-revoked: a legacy caller following its upstreams (over
// streamable HTTP or /mcp/sse) is revoked; an upstream change then reaches
// it as no notification, and its upstream listener closes within 3 s.
func TestLegacyFollowEndsWhenCallerIsRevoked(t *testing.T) {
	for _, ingress := range []string{"streamable", "sse"} {
		t.Run(ingress, func(t *testing.T) {
			t.Parallel()
			peer := startListenPeer(t, true)
			hook, write := subscriptionAuth(t, aliceIdentity())
			gw := subscriptionGateway(t, peer.url, hook, "", "")
			changed := make(chan struct{}, 4)
			client := sdk.NewClient(&sdk.Implementation{Name: "legacy-subscriber", Version: "1"}, &sdk.ClientOptions{
				ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) { changed <- struct{}{} },
			})
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			httpClient := &http.Client{Transport: authTransport{subscriptionKey}}
			var tr sdk.Transport = &sdk.StreamableClientTransport{Endpoint: gw.url + "/mcp", HTTPClient: httpClient}
			if ingress == "sse" {
				tr = &sdk.SSEClientTransport{Endpoint: gw.url + "/mcp/sse", HTTPClient: httpClient}
			}
			cs, err := client.Connect(ctx, tr, &sdk.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			waitOpen(t, &peer.open, 1, 5*time.Second, "the legacy caller's follow")
			write(revokedIdentity())
			triggerUpstream(t, peer.url, 2)
			select {
			case <-changed:
				t.Fatal("a revoked legacy caller was notified")
			case <-time.After(500 * time.Millisecond):
			}
			waitOpen(t, &peer.open, 0, 3*time.Second, "the revoked legacy caller's follow")
		})
	}
}
