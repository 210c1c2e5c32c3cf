package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// hidden: with allowed_tools naming the one tool the caller sees, an
// upstream change that adds another tool does not change the caller's view
// and is not delivered.
func TestSubscriptionSuppressesChangesOutsideTheVisibleCatalog(t *testing.T) {
	t.Parallel()
	peer := startListenPeer(t, true)
	hook, _ := subscriptionAuth(t, aliceIdentity())
	gw := subscriptionGateway(t, peer.url, hook, "    allowed_tools: [test_trigger_tool_change]\n", "")
	list := func() []string {
		status, _, body := rpc(t, gw.url+"/mcp/", subscriberHeaders(subscriptionKey, "tools/list"), `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{`+modernMeta+`}}`)
		if status != 200 {
			t.Fatalf("tools/list: %d %v", status, body)
		}
		return toolsOf(body)
	}
	if got := list(); !slices.Equal(got, []string{"peer-test_trigger_tool_change"}) {
		t.Fatalf("tools/list before = %v", got)
	}
	_, events := listenWith(t, gw.url+"/mcp/", subscriberHeaders(subscriptionKey, "subscriptions/listen"), `{"toolsListChanged":true}`)
	if first := nextEvent(events, 15*time.Second); !strings.Contains(first, "notifications/subscriptions/acknowledged") {
		t.Fatalf("first event = %q", first)
	}
	triggerUpstream(t, peer.url, 2)
	if ev := nextEvent(events, 500*time.Millisecond); ev != "" {
		t.Fatalf("a change outside the caller's view was delivered: %s", ev)
	}
	if got := list(); !slices.Equal(got, []string{"peer-test_trigger_tool_change"}) {
		t.Fatalf("tools/list after = %v", got)
	}
}

// legacy-caller-isolation: a second legacy caller (bob) who may call only
// the trigger tool hears nothing of a change he cannot see, and his call to
// the added tool is refused in-band without reaching the upstream.
func TestLegacyCallerHearsOnlyItsOwnView(t *testing.T) {
	t.Parallel()
	peer := startListenPeer(t, true)
	var calls atomic.Int64
	count := func(r *http.Request) {
		if r.Header.Get("Mcp-Method") == "tools/call" && r.Header.Get("Mcp-Name") != "test_trigger_tool_change" {
			calls.Add(1)
		}
	}
	peer.before.Store(&count)
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var in struct {
			APIKey string `json:"api_key"`
		}
		_ = json.NewDecoder(r.Body).Decode(&in)
		w.Header().Set("Content-Type", "application/json")
		id := aliceIdentity()
		switch in.APIKey {
		case subscriptionKey:
		case "sk-subscriptions-other":
			id["api_key"], id["user_id"] = in.APIKey, "bob"
			id["object_permission"] = map[string]any{"object_permission_id": "subscription-permission", "mcp_servers": []string{"subscription-server"},
				"mcp_tool_permissions": map[string]any{"subscription-server": []string{"test_trigger_tool_change"}}}
		default:
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = w.Write([]byte(`{"detail":"Unknown caller"}`))
			return
		}
		_ = json.NewEncoder(w).Encode(id)
	}))
	t.Cleanup(hook.Close)
	gw := subscriptionGateway(t, peer.url, hook.URL, "", "")
	connect := func(key string, changed chan<- struct{}) *sdk.ClientSession {
		client := sdk.NewClient(&sdk.Implementation{Name: "legacy-" + key, Version: "1"}, &sdk.ClientOptions{
			ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) { changed <- struct{}{} },
		})
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		cs, err := client.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: gw.url + "/mcp", HTTPClient: &http.Client{Transport: authTransport{key}}},
			&sdk.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cs.Close() })
		return cs
	}
	aliceChanged, bobChanged := make(chan struct{}, 4), make(chan struct{}, 4)
	alice := connect(subscriptionKey, aliceChanged)
	bob := connect("sk-subscriptions-other", bobChanged)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	names := func(cs *sdk.ClientSession) []string {
		res, err := cs.ListTools(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, tool := range res.Tools {
			out = append(out, tool.Name)
		}
		return out
	}
	if got := names(bob); !slices.Equal(got, []string{"peer-test_trigger_tool_change"}) {
		t.Fatalf("bob's tools before = %v", got)
	}
	// Both follows (one upstream credential, one filter) share one upstream
	// listen; what each caller is told is decided per caller, on delivery.
	waitOpen(t, &peer.open, 1, 5*time.Second, "both legacy callers' follows")
	before := names(alice)
	if _, err := alice.CallTool(ctx, &sdk.CallToolParams{Name: "peer-test_trigger_tool_change", Arguments: map[string]any{}}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-aliceChanged:
	case <-time.After(10 * time.Second):
		t.Fatal("alice, who sees the change, was not notified")
	}
	select {
	case <-bobChanged:
		t.Fatal("bob was notified of a change he cannot see")
	case <-time.After(500 * time.Millisecond):
	}
	after := names(alice)
	var added string
	for _, n := range after {
		if !slices.Contains(before, n) {
			added = n
		}
	}
	if added == "" {
		t.Fatalf("alice's tools did not change: %v → %v", before, after)
	}
	if got := names(bob); !slices.Equal(got, []string{"peer-test_trigger_tool_change"}) {
		t.Fatalf("bob's tools after = %v", got)
	}
	calls.Store(0)
	res, err := bob.CallTool(ctx, &sdk.CallToolParams{Name: added, Arguments: map[string]any{}})
	if err != nil {
		t.Fatal(err)
	}
	if !res.IsError {
		t.Fatalf("bob's call to %s = %+v, want isError", added, res)
	}
	if n := calls.Load(); n != 0 {
		t.Fatalf("bob's refused call reached the upstream %d times", n)
	}
}

// setup-race: the upstream's catalog changes inside the gateway's own
// tools/list while the listen is being set up (once the upstream listener is
// connected); the change is still delivered.
func TestSubscriptionChangeDuringSetupIsDelivered(t *testing.T) {
	t.Parallel()
	peer := startListenPeer(t, true)
	var raced atomic.Bool
	race := func(r *http.Request) {
		if r.Header.Get("Mcp-Method") == "tools/list" && peer.open.Load() > 0 && raced.CompareAndSwap(false, true) {
			peer.addTool()
		}
	}
	peer.before.Store(&race)
	hook, _ := subscriptionAuth(t, aliceIdentity())
	gw := subscriptionGateway(t, peer.url, hook, "", "")
	_, events := listenWith(t, gw.url+"/mcp/", subscriberHeaders(subscriptionKey, "subscriptions/listen"), `{"toolsListChanged":true}`)
	if first := nextEvent(events, 15*time.Second); !strings.Contains(first, "notifications/subscriptions/acknowledged") {
		t.Fatalf("first event = %q", first)
	}
	if ev := nextEvent(events, 5*time.Second); !strings.Contains(ev, "notifications/tools/list_changed") {
		t.Fatalf("the change during set-up: got %q (raced %v)", ev, raced.Load())
	}
	if !raced.Load() {
		t.Fatal("no tools/list ran while the upstream listener was connected: the race was not exercised")
	}
}
