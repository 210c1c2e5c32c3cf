package e2e

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// sharedListenAuth is a custom_auth webhook that knows three callers
// (alice, bob, carol, each by its own key) and refuses a key once revoked.
func sharedListenAuth(t *testing.T) (url string, revoke func(key string)) {
	t.Helper()
	users := map[string]string{"sk-shared-alice": "alice", "sk-shared-bob": "bob", "sk-shared-carol": "carol"}
	var mu sync.Mutex
	revoked := map[string]bool{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var in struct {
			APIKey string `json:"api_key"`
		}
		_ = json.NewDecoder(r.Body).Decode(&in)
		w.Header().Set("Content-Type", "application/json")
		mu.Lock()
		gone := revoked[in.APIKey]
		mu.Unlock()
		user, ok := users[in.APIKey]
		if !ok || gone {
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = io.WriteString(w, `{"detail":"Unknown caller"}`)
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"api_key": in.APIKey, "user_id": user, "user_role": "internal_user",
			"object_permission": map[string]any{"object_permission_id": "perm-" + user, "mcp_servers": []string{"subscription-server"}}})
	}))
	t.Cleanup(srv.Close)
	return srv.URL, func(key string) { mu.Lock(); revoked[key] = true; mu.Unlock() }
}

// sharedListenOn opens a tools listen with key, forwarding token to the
// upstream as X-Upstream-Token, and waits for its acknowledgement.
func sharedListenOn(t *testing.T, gw *gatewayUnderTest, key, token string) <-chan string {
	t.Helper()
	h := subscriberHeaders(key, "subscriptions/listen")
	h["X-Upstream-Token"] = token
	_, events := listenWith(t, gw.url+"/mcp/", h, `{"toolsListChanged":true}`)
	if first := nextEvent(events, 15*time.Second); !strings.Contains(first, "notifications/subscriptions/acknowledged") {
		t.Fatalf("listen with %s: first event = %q", key, first)
	}
	return events
}

// countListens counts the subscriptions/listen requests a peer is sent.
func countListens(p *listenPeer) *atomic.Int64 {
	n := new(atomic.Int64)
	count := func(r *http.Request) {
		if r.Header.Get("Mcp-Method") == "subscriptions/listen" {
			n.Add(1)
		}
	}
	p.before.Store(&count)
	return n
}

// Callers whose credentials at the upstream are the same (the forwarded
// X-Upstream-Token) share one upstream listen on a go-sdk server; a caller
// with another credential gets its own; each is told of a change.
func TestListensShareOneUpstreamListenPerCredential(t *testing.T) {
	t.Parallel()
	peer := startListenPeer(t, true)
	sent := countListens(peer)
	hook, _ := sharedListenAuth(t)
	gw := subscriptionGateway(t, peer.url, hook, "    extra_headers: [X-Upstream-Token]\n", "")
	alice := sharedListenOn(t, gw, "sk-shared-alice", "team-1")
	bob := sharedListenOn(t, gw, "sk-shared-bob", "team-1")
	waitOpen(t, &peer.open, 1, 3*time.Second, "alice's and bob's listens, one credential upstream")
	if n := sent.Load(); n != 1 {
		t.Fatalf("two listens with one upstream credential: %d subscriptions/listen sent upstream, want 1", n)
	}
	carol := sharedListenOn(t, gw, "sk-shared-carol", "team-2")
	waitOpen(t, &peer.open, 2, 3*time.Second, "with carol's listen, another credential upstream")
	if n := sent.Load(); n != 2 {
		t.Fatalf("a listen with another upstream credential: %d subscriptions/listen sent upstream, want 2", n)
	}
	triggerUpstream(t, peer.url, 2)
	for who, events := range map[string]<-chan string{"alice": alice, "bob": bob, "carol": carol} {
		expectToolsChanged(t, events, who+" told of the change")
	}
}

// A revoked caller's listen ends, and its leaving the shared upstream
// listen does not end the others' delivery; the upstream listen closes
// within 3 s of the last listen's end.
func TestRevokedCallerLeavingASharedListenKeepsOthersDelivering(t *testing.T) {
	t.Parallel()
	peer := startListenPeer(t, true)
	hook, revoke := sharedListenAuth(t)
	gw := subscriptionGateway(t, peer.url, hook, "    extra_headers: [X-Upstream-Token]\n", "")
	alice := sharedListenOn(t, gw, "sk-shared-alice", "team-1")
	bob := sharedListenOn(t, gw, "sk-shared-bob", "team-1")
	waitOpen(t, &peer.open, 1, 3*time.Second, "the shared upstream listen")
	revoke("sk-shared-alice")
	triggerUpstream(t, peer.url, 2)
	expectToolsChanged(t, bob, "bob, after alice was revoked")
	expectEnded(t, alice, 20*time.Second, "the revoked caller's listen")
	time.Sleep(200 * time.Millisecond)
	if n := peer.open.Load(); n != 1 {
		t.Fatalf("after the revoked caller left: %d upstream listens open, want 1", n)
	}
	triggerUpstream(t, peer.url, 3)
	expectToolsChanged(t, bob, "bob, after the revoked caller's listen ended")
	revoke("sk-shared-bob")
	triggerUpstream(t, peer.url, 4)
	expectEnded(t, bob, 20*time.Second, "the last listen, its caller revoked")
	waitOpen(t, &peer.open, 0, 3*time.Second, "after the last listen ended")
}
