package e2e

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// seedEnding are the accesses after whose upstream change the subscription must end.
var seedEnding = []string{"revoked", "identity", "team", "org", "end-user", "upstream-ended", "config-change", "renewal-scopes", "renewal-failed"}

// subscribe is the seed's `async with listen(...)` block.
func (r *seedRun) subscribe(t *testing.T) {
	honored, err := r.caller.listen(map[string]any{
		"toolsListChanged": r.kind == "tools", "promptsListChanged": r.kind == "prompts",
		"resourcesListChanged": r.kind == "resources", "resourceSubscriptions": r.resourceSubscriptions(),
	})
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	if r.access == "fanout" {
		if got := r.up.ListenAuth(); !reflect.DeepEqual(got, []string{"", ""}) {
			t.Errorf("upstream listens carried Authorization %q, want two listens without it: an unscoped caller credential reached several upstreams", got)
		}
		r.checkCatalogCredentials(t, "catalog listings")
	}
	r.twist(t)
	if r.access == "idle" {
		r.expectEnd(t, 20*time.Second)
		r.up.WaitListenersClosed(t, 3*time.Second)
		return
	}
	if strings.HasPrefix(r.access, "renewal") {
		r.renewal(t)
	}
	if r.access != "setup-race" {
		r.up.Change(t) // no timing margin: right after the ack
	}
	if slices.Contains(seedEnding, r.access) {
		r.expectEnd(t, 5*time.Second)
		r.up.WaitListenersClosed(t, 3*time.Second)
		return
	}
	if r.access == "hidden" {
		if after := r.caller.mustList("tools"); !reflect.DeepEqual(after, map[string]bool{"peer-change_tools": true}) {
			t.Errorf("tools/list with allowed_tools [change_tools] = %v, want only peer-change_tools", after)
		}
		r.expectNoEvent(t)
		return
	}
	r.expectChange(t, honored)
	if r.access == "modern-boundary" || r.access == "normal" {
		if got := r.up.ListenAuth(); len(got) != 1 {
			t.Errorf("%d upstream subscriptions/listen calls, want exactly 1 for the one real listen", len(got))
		}
	}
	r.expectNoEvent(t)
	if err := r.caller.leave(); err != nil {
		t.Fatal(err)
	}
	r.up.WaitListenersClosed(t, 3*time.Second)
}

func (r *seedRun) resourceSubscriptions() []string {
	if r.kind == "updated" {
		return []string{"test://value"}
	}
	return []string{}
}

// apply makes yaml the running config, by r.reload when set.
func (r *seedRun) apply(t *testing.T, yaml string) {
	if r.reload != nil {
		r.reload(t, yaml)
		return
	}
	applySeedConfig(t, r.gw, yaml, r.env)
}

// twist applies the access's mid-subscription change.
func (r *seedRun) twist(t *testing.T) {
	switch r.access {
	case "metadata":
		setup := r.setup
		setup.peerYAML = "    authorization_url: https://authorization.example/authorize\n"
		r.apply(t, seedConfig(setup))
	case "config-change":
		setup := r.setup
		setup.peerURL = r.up.MCPURL() + "/changed"
		r.apply(t, seedConfig(setup))
	case "revoked", "idle":
		changed := seedIdentity(r.access)
		changed["object_permission"] = map[string]any{"object_permission_id": "subscription-permission", "mcp_servers": []string{"denied"}}
		r.write(changed)
	case "identity", "team", "org", "end-user":
		changed := seedIdentity(r.access)
		changed[map[string]string{"identity": "user_id", "team": "team_id", "org": "org_id", "end-user": "end_user_id"}[r.access]] = "bob"
		r.write(changed)
	}
}

// renewal waits (up to 25 s, listing tools meanwhile) for the gateway to
// renew its client_credentials token before expiry, with the same form.
func (r *seedRun) renewal(t *testing.T) {
	admitted := len(r.up.TokenForms())
	if admitted == 0 {
		t.Fatal("the gateway never requested a client_credentials token")
	}
	r.up.StartRenewal()
	for deadline := time.Now().Add(25 * time.Second); len(r.up.TokenForms()) == admitted; time.Sleep(200 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no token renewal within 25 s of a token with expires_in 70 (%d grants)", admitted)
		}
		if _, err := r.caller.list("tools", ""); err != nil && r.access != "renewal-failed" {
			t.Fatalf("tools/list during renewal: %v", err)
		}
	}
	forms := r.up.TokenForms()
	want := url.Values{"grant_type": {"client_credentials"}, "client_id": {"subscription-service"}, "scope": {"read write"}}
	for i, f := range forms {
		for k, v := range want {
			if !reflect.DeepEqual(f[k], v) {
				t.Errorf("token form %d: %s = %q, want %q", i, k, f[k], v)
			}
		}
	}
	if !reflect.DeepEqual(forms[0], forms[len(forms)-1]) {
		t.Errorf("renewal form %v differs from the first grant's %v", forms[len(forms)-1], forms[0])
	}
}

// expectChange: the matching event arrives within 5 s, equals the
// upstream's, is honored, and a fresh listing shows the change.
func (r *seedRun) expectChange(t *testing.T, honored seedHonored) {
	want := map[string]string{"tools": "notifications/tools/list_changed", "prompts": "notifications/prompts/list_changed",
		"resources": "notifications/resources/list_changed", "updated": "notifications/resources/updated"}[r.kind]
	ev, err := r.caller.nextEvent(5 * time.Second)
	if err != nil || ev.Event != "notification" {
		if r.access == "setup-race" && len(r.up.Executions()) == 0 {
			t.Fatalf("the gateway sent no tools/list upstream while its upstream listener was open, so no change happened during setup (and no %s arrived: %+v %v)", want, ev, err)
		}
		t.Fatalf("no %s within 5 s of the upstream change: %+v %v", want, ev, err)
	}
	params := map[string]any{}
	for k, v := range ev.Params {
		if k != "_meta" {
			params[k] = v
		}
	}
	wantParams := map[string]any{}
	if r.kind == "updated" {
		wantParams["uri"] = "test://value"
	}
	if ev.Method != want || !reflect.DeepEqual(params, wantParams) {
		t.Fatalf("event %s %v, want %s %v", ev.Method, params, want, wantParams)
	}
	if r.access == "fanout" {
		r.checkCatalogCredentials(t, "refreshed catalogs")
	}
	switch r.kind {
	case "tools":
		if !honored.ToolsListChanged {
			t.Errorf("honored %+v lacks toolsListChanged", honored)
		}
		r.checkToolsAfter(t)
	case "prompts":
		if !honored.PromptsListChanged {
			t.Errorf("honored %+v lacks promptsListChanged", honored)
		}
		if after := r.caller.mustList("prompts"); !after["peer-added"] {
			t.Errorf("prompts/list after the change = %v, want peer-added", after)
		}
	case "resources":
		if !honored.ResourcesListChanged {
			t.Errorf("honored %+v lacks resourcesListChanged", honored)
		}
		if after := r.caller.mustList("resources"); !after["test://added"] {
			t.Errorf("resources/list after the change = %v, want test://added", after)
		}
	default:
		if !reflect.DeepEqual(honored.ResourceSubscriptions, []string{"test://value"}) {
			t.Errorf("honored resourceSubscriptions %q, want [test://value]", honored.ResourceSubscriptions)
		}
	}
}

// checkToolsAfter: a fresh tools/list shows peer-added (on the cursor's page with pages).
func (r *seedRun) checkToolsAfter(t *testing.T) {
	after, err := r.caller.list("tools", "")
	if err != nil {
		t.Fatal(err)
	}
	if r.access == "pages" {
		if after.NextCursor == "" || after.names()["peer-added"] {
			t.Fatalf("first page after the change = %v, cursor %q; want a cursor and no peer-added", after.names(), after.NextCursor)
		}
		if after, err = r.caller.list("tools", after.NextCursor); err != nil {
			t.Fatalf("following the cursor: %v", err)
		}
	}
	if !after.names()["peer-added"] {
		t.Errorf("tools/list after the change = %v, want peer-added", after.names())
	}
}

// checkCatalogCredentials: every upstream tools/list so far came without Authorization.
func (r *seedRun) checkCatalogCredentials(t *testing.T, what string) {
	got := r.up.ToolsListAuth()
	if len(got) == 0 || slices.ContainsFunc(got, func(a string) bool { return a != "" }) {
		t.Errorf("upstream tools/list Authorization headers %q: an unscoped caller credential reached %s", got, what)
	}
}

// expectEnd: the subscription ends within the given time, with no event first.
func (r *seedRun) expectEnd(t *testing.T, within time.Duration) {
	ev, err := r.caller.nextEvent(within)
	if errors.Is(err, errTimeout) {
		t.Fatalf("the subscription did not end within %s", within)
	}
	if err != nil {
		t.Fatal(err)
	}
	if ev.Event != "ended" {
		t.Fatalf("a %s subscription received %s %v instead of ending", r.access, ev.Method, ev.Params)
	}
}

// expectNoEvent: nothing arrives within 0.5 s.
func (r *seedRun) expectNoEvent(t *testing.T) {
	if ev, err := r.caller.nextEvent(500 * time.Millisecond); !errors.Is(err, errTimeout) {
		t.Errorf("unexpected event within 0.5 s: %+v %v", ev, err)
	}
}

// legacyCallAdded: a 2025-11-25 client (go-sdk, initialize handshake)
// lists peer-added and calling it returns "new tool".
func legacyCallAdded(t *testing.T, endpoint string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client := mcp.NewClient(&mcp.Implementation{Name: "rollback", Version: "1"}, nil)
	transport := &mcp.StreamableClientTransport{Endpoint: endpoint,
		HTTPClient: &http.Client{Transport: bearer{key: subscriptionKey}}}
	cs, err := client.Connect(ctx, transport, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatalf("legacy initialize after rollback: %v", err)
	}
	defer cs.Close()
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatalf("legacy tools/list after rollback: %v", err)
	}
	if !slices.ContainsFunc(tools.Tools, func(tool *mcp.Tool) bool { return tool.Name == "peer-added" }) {
		t.Errorf("legacy tools/list after rollback lacks peer-added: %d tools", len(tools.Tools))
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "peer-added", Arguments: map[string]any{}})
	if err != nil {
		t.Fatalf("legacy call peer-added: %v", err)
	}
	text := ""
	if len(res.Content) > 0 {
		if tc, ok := res.Content[0].(*mcp.TextContent); ok {
			text = tc.Text
		}
	}
	if res.IsError || text != "new tool" {
		t.Errorf("peer-added after rollback: isError %v text %q, want \"new tool\"", res.IsError, text)
	}
}

// bearer adds the caller's Authorization to every request.
type bearer struct{ key string }

func (b bearer) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	req.Header.Set("Authorization", "Bearer "+b.key)
	return http.DefaultTransport.RoundTrip(req)
}
