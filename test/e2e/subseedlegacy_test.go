package e2e

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// legacySeedCase is one parametrisation (access, event kind) of the seed's
// listen test whose caller speaks the legacy protocol.
type legacySeedCase struct{ access, kind string }

func (c legacySeedCase) name() string { return c.access + "_" + c.kind }

// legacySeedCases are the seed's legacy-caller parametrisations.
func legacySeedCases() []legacySeedCase {
	var out []legacySeedCase
	for _, access := range []string{"legacy-caller", "legacy-both"} {
		for _, kind := range []string{"tools", "prompts", "resources", "updated"} {
			out = append(out, legacySeedCase{access, kind})
		}
	}
	return append(out,
		legacySeedCase{"legacy-sse", "tools"}, legacySeedCase{"legacy-sse", "updated"},
		legacySeedCase{"legacy-caller-isolation", "tools"},
		legacySeedCase{"legacy-caller-no-notifications", "tools"}, legacySeedCase{"legacy-caller-no-notifications", "updated"},
		legacySeedCase{"legacy-caller-revoked", "tools"})
}

// TestLegacySubscriptionSeed ports the legacy-caller cases of LiteLLM's
// test_modern_subscription_delivers_changes_between_calls_and_refreshes_tools
// with its setup: server key peer, server_id subscription-server, a
// custom_auth webhook deciding alice with the master key as her key, both
// revisions advertised. A real go-sdk client, pinned to 2025-11-25 over
// streamable HTTP (or over /mcp/sse), records the legacy notifications the
// gateway pushes while the upstream's catalog changes. One addition to the
// seed's upstream: it takes followDelay to start following a resource, so
// the updated cases' race (a change made right after resources/subscribe is
// answered) is decided the same way on every run.
func TestLegacySubscriptionSeed(t *testing.T) {
	for _, c := range legacySeedCases() {
		t.Run(c.name(), func(t *testing.T) {
			t.Parallel()
			runLegacySeedCase(t, c)
		})
	}
}

// legacySeedIdentity is the webhook's identity for alice, allowed the given servers.
func legacySeedIdentity(servers ...string) map[string]any {
	return map[string]any{"api_key": subscriptionKey, "user_id": "alice", "user_role": "internal_user",
		"object_permission": map[string]any{"object_permission_id": "subscription-permission", "mcp_servers": servers}}
}

// seedLegacyGateway starts the gateway in front of upstream as the seed
// configures it; protocol is the upstream's pinned revision.
func seedLegacyGateway(t *testing.T, upstream, protocol, hook string) *gatewayUnderTest {
	return startGateway(t, fmt.Sprintf(`model_list: []
mcp_servers:
  peer:
    server_id: subscription-server
    url: %s
    transport: http
    protocol_version: "%s"
general_settings:
  master_key: %s
  custom_auth: %s
  store_model_in_db: false
  mcp_advertised_versions: ["2025-11-25", "2026-07-28"]
`, upstream, protocol, subscriptionKey, hook), map[string]string{
		"LITELLM_SALT_KEY": "subscription-pagination-key", "STORE_MODEL_IN_DB": "False",
		"DISABLE_SCHEMA_UPDATE": "true", "LITELLM_LOCAL_MODEL_COST_MAP": "True",
		"LITELLM_DANGEROUSLY_PERMIT_WEAK_OR_UNSET_MASTER_KEY": "true"})
}

// legacyNote is one list-changed or resource-updated notification a legacy
// caller received.
type legacyNote struct{ method, uri string }

func (n legacyNote) String() string {
	if n.uri == "" {
		return n.method
	}
	return n.method + " " + n.uri
}

// legacyCaller is a go-sdk client session pinned to 2025-11-25 and the
// notifications it has received.
type legacyCaller struct {
	cs    *sdk.ClientSession
	notes chan legacyNote
	// stop ends the context the connection lives in (the SSE transport
	// binds its stream to the context it was connected with).
	stop context.CancelFunc
}

// leave ends the session: a DELETE over streamable HTTP, the stream's close
// over SSE.
func (c *legacyCaller) leave() {
	_ = c.cs.Close()
	c.stop()
}

// dialLegacyCaller initializes a legacy session with key: over streamable
// HTTP at /mcp/ (with its GET stream), or over HTTP+SSE at /mcp/sse.
func dialLegacyCaller(ctx context.Context, t *testing.T, base, key string, overSSE bool) *legacyCaller {
	t.Helper()
	notes := make(chan legacyNote, 64)
	// The buffer outlasts any case; beyond it a notification is dropped, not
	// blocked on (the checks already fail on the first unexpected one).
	record := func(n legacyNote) {
		select {
		case notes <- n:
		default:
		}
	}
	client := sdk.NewClient(&sdk.Implementation{Name: "legacy-seed", Version: "1"}, &sdk.ClientOptions{
		ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) {
			record(legacyNote{method: "notifications/tools/list_changed"})
		},
		PromptListChangedHandler: func(context.Context, *sdk.PromptListChangedRequest) {
			record(legacyNote{method: "notifications/prompts/list_changed"})
		},
		ResourceListChangedHandler: func(context.Context, *sdk.ResourceListChangedRequest) {
			record(legacyNote{method: "notifications/resources/list_changed"})
		},
		ResourceUpdatedHandler: func(_ context.Context, req *sdk.ResourceUpdatedNotificationRequest) {
			record(legacyNote{method: "notifications/resources/updated", uri: req.Params.URI})
		},
	})
	hc := &http.Client{Transport: authTransport{key}}
	var tr sdk.Transport = &sdk.StreamableClientTransport{Endpoint: base + "/mcp/", HTTPClient: hc}
	if overSSE {
		tr = &sdk.SSEClientTransport{Endpoint: base + "/mcp/sse", HTTPClient: hc}
	}
	// The connection outlives ctx; ctx bounds only the handshake.
	live, stop := context.WithCancel(context.WithoutCancel(ctx))
	unbind := context.AfterFunc(ctx, stop)
	cs, err := client.Connect(live, tr, &sdk.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	unbind()
	if err != nil {
		stop()
		t.Fatalf("legacy initialize (overSSE=%v): %v", overSSE, err)
	}
	caller := &legacyCaller{cs: cs, notes: notes, stop: stop}
	t.Cleanup(caller.leave)
	if got := cs.InitializeResult().ProtocolVersion; got != "2025-11-25" {
		t.Fatalf("legacy initialize negotiated %s", got)
	}
	return caller
}

// missingFlags reports which of the four subscription flags initialize
// did not advertise.
func (c *legacyCaller) missingFlags() []string {
	caps := c.cs.InitializeResult().Capabilities
	var missing []string
	if caps == nil || caps.Tools == nil || !caps.Tools.ListChanged {
		missing = append(missing, "tools.listChanged")
	}
	if caps == nil || caps.Prompts == nil || !caps.Prompts.ListChanged {
		missing = append(missing, "prompts.listChanged")
	}
	if caps == nil || caps.Resources == nil || !caps.Resources.ListChanged {
		missing = append(missing, "resources.listChanged")
	}
	if caps == nil || caps.Resources == nil || !caps.Resources.Subscribe {
		missing = append(missing, "resources.subscribe")
	}
	return missing
}

// toolSet is the first page of the caller's tools/list, sorted.
func (c *legacyCaller) toolSet(ctx context.Context, t *testing.T) []string {
	t.Helper()
	res, err := c.cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	var names []string
	for _, tl := range res.Tools {
		names = append(names, tl.Name)
	}
	sort.Strings(names)
	return names
}

// call calls a tool through the gateway; a JSON-RPC error fails the test.
func (c *legacyCaller) call(ctx context.Context, t *testing.T, name string) *sdk.CallToolResult {
	t.Helper()
	res, err := c.cs.CallTool(ctx, &sdk.CallToolParams{Name: name, Arguments: map[string]any{}})
	if err != nil {
		t.Fatalf("tools/call %s: %v", name, err)
	}
	return res
}

// next waits up to d for a notification.
func (c *legacyCaller) next(d time.Duration) (legacyNote, bool) {
	select {
	case n := <-c.notes:
		return n, true
	case <-time.After(d):
		return legacyNote{}, false
	}
}

// expectQuiet fails if any notification arrives within d.
func (c *legacyCaller) expectQuiet(t *testing.T, d time.Duration, why string) {
	t.Helper()
	if n, ok := c.next(d); ok {
		t.Fatalf("%s: received %s within %s", why, n, d)
	}
}

// expectedLegacyNote is the notification the seed expects for an event kind.
func expectedLegacyNote(kind string) legacyNote {
	switch kind {
	case "prompts":
		return legacyNote{method: "notifications/prompts/list_changed"}
	case "resources":
		return legacyNote{method: "notifications/resources/list_changed"}
	case "updated":
		return legacyNote{method: "notifications/resources/updated", uri: "test://value"}
	}
	return legacyNote{method: "notifications/tools/list_changed"}
}

// within polls cond every 20 ms for up to d.
func within(d time.Duration, cond func() bool) bool {
	for deadline := time.Now().Add(d); ; time.Sleep(20 * time.Millisecond) {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
	}
}

// mcpError reports whether err is a JSON-RPC error the gateway answered,
// as opposed to a transport failure or a timeout.
func mcpError(err error) bool {
	var wire *jsonrpc.Error
	return errors.As(err, &wire)
}

// legacySeedRun is one case's upstream, webhook and legacy callers: alice,
// and bob in the isolation case.
type legacySeedRun struct {
	up         *subUpstream
	write      func(map[string]any)
	followed   <-chan struct{} // closed once the upstream follows test://value
	alice, bob *legacyCaller
}

// startLegacySeed sets a case up as the seed's exercise does, up to alice's
// first tools/list: bob (isolation only) and alice initialize, and alice's
// initialize advertises the four subscription flags. The callers leave (a
// DELETE, or the SSE stream's close) before the gateway shuts down; after
// that no upstream listener may remain (checked for 10 s).
func startLegacySeed(ctx context.Context, t *testing.T, c legacySeedCase) *legacySeedRun {
	t.Helper()
	run := &legacySeedRun{up: startSubscriptionUpstream(t, subUpstreamOptions{Kind: c.kind,
		NoCapabilities: c.access == "legacy-caller-no-notifications"})}
	up := run.up
	run.followed = watchFollow(up, "test://value")
	var hook string
	hook, run.write = subscriptionAuth(t, legacySeedIdentity("subscription-server"))
	// Registered before the gateway, so it runs after the gateway's shutdown.
	t.Cleanup(func() {
		if !within(10*time.Second, func() bool { return up.OpenListeners() == 0 }) {
			t.Errorf("%d upstream listeners remain 10 s after the gateway's shutdown", up.OpenListeners())
		}
	})
	protocol := "2026-07-28"
	if c.access == "legacy-both" {
		protocol = "2025-11-25"
	}
	gw := seedLegacyGateway(t, up.MCPURL(), protocol, hook)
	if c.access == "legacy-caller-isolation" {
		run.bob = dialLegacyCaller(ctx, t, gw.url, "sk-subscriptions-other", false)
		if got := run.bob.toolSet(ctx, t); fmt.Sprint(got) != "[peer-change_tools]" {
			t.Fatalf("bob's tools before the change = %v, want [peer-change_tools]", got)
		}
	}
	run.alice = dialLegacyCaller(ctx, t, gw.url, subscriptionKey, c.access == "legacy-sse")
	t.Cleanup(func() {
		run.alice.leave()
		start := time.Now()
		closed := within(3*time.Second, func() bool { return up.OpenListeners() == 0 })
		t.Logf("after alice left: upstream listeners closed=%v after %s", closed, time.Since(start).Round(time.Millisecond))
	})
	if missing := run.alice.missingFlags(); len(missing) > 0 {
		t.Fatalf("initialize does not advertise %v", missing)
	}
	if got := run.alice.toolSet(ctx, t); slices.Contains(got, "peer-added") {
		t.Fatalf("tools/list before the change already holds peer-added: %v", got)
	}
	return run
}

// runLegacySeedCase runs one case as the seed's exercise does.
func runLegacySeedCase(t *testing.T, c legacySeedCase) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	run := startLegacySeed(ctx, t, c)
	up, alice := run.up, run.alice
	if c.kind == "updated" {
		if c.access == "legacy-caller-no-notifications" {
			checkSubscribeRefused(ctx, t, alice, up)
			return
		}
		if err := alice.cs.Subscribe(ctx, &sdk.SubscribeParams{URI: "test://value"}); err != nil {
			t.Fatalf("resources/subscribe test://value: %v", err)
		}
		// The seed changes the resource right after resources/subscribe is
		// answered, and its wait for an upstream listener is already met by
		// the one initialize opened; so the change is delivered only if the
		// upstream follows test://value by the time the answer arrives.
		select {
		case <-run.followed:
		default:
			t.Fatal("resources/subscribe was answered before the upstream followed test://value: a change made right after it is lost")
		}
	}
	if c.access != "legacy-caller-no-notifications" {
		select {
		case <-up.Connected():
		case <-time.After(5 * time.Second):
			t.Fatal("no upstream listener within 5 s of the legacy caller's initialize/subscribe")
		}
	}
	if c.access == "legacy-caller-revoked" {
		run.write(legacySeedIdentity("denied"))
		up.Change(t)
		alice.expectQuiet(t, 500*time.Millisecond, "a revoked legacy caller")
		if !within(3*time.Second, func() bool { return up.OpenListeners() == 0 }) {
			t.Fatalf("%d upstream listeners still open 3 s after the revoked caller's change", up.OpenListeners())
		}
		return
	}
	if res := alice.call(ctx, t, "peer-change_tools"); res.IsError {
		t.Fatalf("peer-change_tools through the gateway: isError %s", textOf(res))
	}
	if c.access == "legacy-caller-no-notifications" {
		alice.expectQuiet(t, 500*time.Millisecond, "an upstream without notifications")
		if got := alice.toolSet(ctx, t); !slices.Contains(got, "peer-added") {
			t.Fatalf("tools/list after the change lacks peer-added: %v", got)
		}
		if n := len(up.ListenAuth()); n != 0 {
			t.Fatalf("the gateway attempted %d subscriptions/listen on an upstream without support", n)
		}
		return
	}
	note, ok := alice.next(10 * time.Second)
	if !ok {
		t.Fatalf("no legacy notification within 10 s of the change (want %s)", expectedLegacyNote(c.kind))
	}
	if note != expectedLegacyNote(c.kind) {
		t.Fatalf("first notification = %s, want %s", note, expectedLegacyNote(c.kind))
	}
	if run.bob != nil {
		checkIsolated(ctx, t, run.bob, up)
	}
	checkAfterChange(ctx, t, c, alice)
}

// checkSubscribeRefused is the no-notifications/updated case: the upstream
// cannot follow resources, so resources/subscribe is an MCP error within
// 3 s, no listen is attempted, and tool calls still work.
func checkSubscribeRefused(ctx context.Context, t *testing.T, alice *legacyCaller, up *subUpstream) {
	t.Helper()
	sub, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	if err := alice.cs.Subscribe(sub, &sdk.SubscribeParams{URI: "test://value"}); !mcpError(err) {
		t.Fatalf("resources/subscribe on an upstream without subscriptions: %v, want an MCP error within 3 s", err)
	}
	if n, open := len(up.ListenAuth()), up.OpenListeners(); n != 0 || open != 0 {
		t.Fatalf("the refused subscribe left %d listen attempts, %d listeners open; want none", n, open)
	}
	if res := alice.call(ctx, t, "peer-change_tools"); res.IsError {
		t.Fatalf("peer-change_tools after the refused subscribe: isError %s", textOf(res))
	}
}

// checkIsolated is the isolation case's second caller, bob, who may call
// change_tools only: he sees no notification, his catalog stays
// {peer-change_tools}, and his call to peer-added is refused before the
// upstream.
func checkIsolated(ctx context.Context, t *testing.T, bob *legacyCaller, up *subUpstream) {
	t.Helper()
	bob.expectQuiet(t, 500*time.Millisecond, "bob, who cannot see the change")
	if got := bob.toolSet(ctx, t); fmt.Sprint(got) != "[peer-change_tools]" {
		t.Fatalf("bob's tools after the change = %v, want [peer-change_tools]", got)
	}
	before := fmt.Sprint(up.Executions())
	if res := bob.call(ctx, t, "peer-added"); !res.IsError {
		t.Fatalf("bob's call to peer-added was not refused: %s", textOf(res))
	}
	if after := fmt.Sprint(up.Executions()); after != before {
		t.Fatalf("bob's refused call ran upstream: executions %s -> %s", before, after)
	}
}

// checkAfterChange reads the changed catalog afresh; for updated it
// unsubscribes and expects no notification for a second change.
func checkAfterChange(ctx context.Context, t *testing.T, c legacySeedCase, alice *legacyCaller) {
	t.Helper()
	switch c.kind {
	case "tools":
		if got := alice.toolSet(ctx, t); !slices.Contains(got, "peer-added") {
			t.Fatalf("tools/list after the notification lacks peer-added: %v", got)
		}
	case "prompts":
		res, err := alice.cs.ListPrompts(ctx, nil)
		if err != nil || !slices.ContainsFunc(res.Prompts, func(p *sdk.Prompt) bool { return p.Name == "peer-added" }) {
			t.Fatalf("prompts/list after the notification lacks peer-added: %v %v", res, err)
		}
	case "resources":
		res, err := alice.cs.ListResources(ctx, nil)
		if err != nil || !slices.ContainsFunc(res.Resources, func(r *sdk.Resource) bool { return r.URI == "test://added" }) {
			t.Fatalf("resources/list after the notification lacks test://added: %v %v", res, err)
		}
	case "updated":
		if err := alice.cs.Unsubscribe(ctx, &sdk.UnsubscribeParams{URI: "test://value"}); err != nil {
			t.Fatalf("resources/unsubscribe: %v", err)
		}
		if res := alice.call(ctx, t, "peer-change_tools"); res.IsError {
			t.Fatalf("second peer-change_tools: isError %s", textOf(res))
		}
		alice.expectQuiet(t, 500*time.Millisecond, "after resources/unsubscribe")
	}
}

// followDelay is how long the upstream takes to start following a
// resource. The seed's Python upstream is slower than go-sdk's; with this
// margin a gateway that answers before its upstream follows the resource is
// caught every time rather than now and then.
const followDelay = 100 * time.Millisecond

// watchFollow makes the upstream start following uri only after
// followDelay, and reports by closing the returned channel when it first
// does: it acknowledged a subscriptions/listen naming uri, or it answered a
// legacy resources/subscribe for uri. Either happens after the go-sdk server
// registered the subscription.
func watchFollow(up *subUpstream, uri string) <-chan struct{} {
	followed := make(chan struct{})
	var once sync.Once
	mark := func() { once.Do(func() { close(followed) }) }
	up.server.AddSendingMiddleware(func(next sdk.MethodHandler) sdk.MethodHandler {
		return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
			if p, ok := req.GetParams().(*sdk.SubscriptionsAcknowledgedParams); ok && slices.Contains(p.Notifications.ResourceSubscriptions, uri) {
				mark()
			}
			return next(ctx, method, req)
		}
	})
	up.server.AddReceivingMiddleware(func(next sdk.MethodHandler) sdk.MethodHandler {
		return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
			switch p := req.GetParams().(type) {
			case *sdk.SubscribeParams:
				if p.URI != uri {
					break
				}
				time.Sleep(followDelay)
				res, err := next(ctx, method, req)
				if err == nil {
					mark()
				}
				return res, err
			case *sdk.SubscriptionsListenParams:
				if p.Notifications != nil && slices.Contains(p.Notifications.ResourceSubscriptions, uri) {
					time.Sleep(followDelay)
				}
			}
			return next(ctx, method, req)
		}
	})
	return followed
}
