package gateway

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpgw/mcpgw/internal/fakemcp"
	"github.com/mcpgw/mcpgw/internal/fault"
	"github.com/mcpgw/mcpgw/internal/jsonrpc"
	"github.com/mcpgw/mcpgw/internal/mcp"
	"github.com/mcpgw/mcpgw/internal/upstream"
)

const capable = `{"tools":{"listChanged":true},"resources":{"listChanged":true,"subscribe":true}}`

var discoverOp = Operation{Method: mcp.MethodDiscover, Params: json.RawMessage(`{}`), Surface: fault.Modern}

// outcomesOf decodes a discovery's per-server outcomes.
func outcomesOf(t *testing.T, res json.RawMessage) map[string]map[string]any {
	t.Helper()
	var oc map[string]map[string]any
	if err := json.Unmarshal(jsonMember(t, jsonMember(t, res, "_meta"), mcp.MetaServerOutcomes), &oc); err != nil {
		t.Fatalf("%v: %s", err, res)
	}
	return oc
}

// Every discovery asks each server again, after reading its catalogs: a
// probe that fails now degrades the promises an earlier one made.
func TestDiscoverProbesEveryTime(t *testing.T) {
	var failing atomic.Bool
	up := fakemcp.New(t, fakemcp.Opts{Caps: capable, Handlers: map[string]fakemcp.Handler{
		mcp.MethodDiscover: func(json.RawMessage) (json.RawMessage, *jsonrpc.Error) {
			if failing.Load() {
				return nil, jsonrpc.Errorf(jsonrpc.CodeInternalError, "Discovery unavailable")
			}
			return json.RawMessage(`{"resultType":"complete","supportedVersions":["2026-07-28"],"capabilities":` + capable + `}`), nil
		}}})
	g := newTestGateway(t, Config{ListTimeout: 2 * time.Second}, upSpec{name: "peer", fake: up})
	out := do(t, g, discoverOp)
	if !jsonEqual(t, jsonMember(t, out.Result, "capabilities"), capable) {
		t.Fatalf("capabilities = %s", jsonMember(t, out.Result, "capabilities"))
	}
	probes, reads := up.Count(mcp.MethodDiscover), up.Count(mcp.MethodResourcesTemplatesList)
	failing.Store(true)
	out = do(t, g, discoverOp)
	if !jsonEqual(t, jsonMember(t, out.Result, "capabilities"), `{"tools":{"listChanged":false}}`) {
		t.Fatalf("capabilities after a failed probe = %s", jsonMember(t, out.Result, "capabilities"))
	}
	if up.Count(mcp.MethodDiscover) != probes+1 || up.Count(mcp.MethodResourcesTemplatesList) != reads+1 {
		t.Fatalf("the second discovery sent %d probes and %d template reads, want 1 and 1",
			up.Count(mcp.MethodDiscover)-probes, up.Count(mcp.MethodResourcesTemplatesList)-reads)
	}
	if oc := outcomesOf(t, out.Result); oc["peer"]["status"] != string(upstream.FaultUpstreamError) {
		t.Fatalf("outcomes = %v", oc)
	}
	// The probe's failure is not the server's: its lists are still served.
	list := do(t, g, Operation{Method: mcp.MethodToolsList, Params: json.RawMessage(`{}`), Surface: fault.Modern})
	if oc := outcomesOf(t, list.Result); oc["peer"]["status"] != "ok" {
		t.Fatalf("tools/list after the failed probe: %s", list.Result)
	}
}

// A server the discovery may not contact (its rpm is spent, or it takes a
// token the caller does not hold) is not asked anything, and degrades the
// promises.
func TestDiscoverLeavesOutServersItMayNotContact(t *testing.T) {
	limited, tokenless, other := fakemcp.New(t, fakemcp.Opts{Caps: capable}), fakemcp.New(t, fakemcp.Opts{Caps: capable}), fakemcp.New(t, fakemcp.Opts{Caps: capable})
	var counted []string
	g := newTestGateway(t, Config{Limit: func(_ context.Context, server string) error {
		counted = append(counted, server)
		if server == "limited" {
			return &fault.Fault{Class: fault.LimitExceeded, Message: "request limit reached"}
		}
		return nil
	}}, upSpec{name: "limited", fake: limited}, upSpec{name: "tokenless", fake: tokenless, server: Server{CallerToken: true}},
		upSpec{name: "other", fake: other})
	out := do(t, g, discoverOp)
	if limited.Total() != 0 || tokenless.Total() != 0 {
		t.Fatalf("contacted: limited %d, tokenless %d", limited.Total(), tokenless.Total())
	}
	if other.Count(mcp.MethodDiscover) == 0 {
		t.Fatal("the admitted server was not probed")
	}
	if len(counted) != 2 || counted[0] != "limited" || counted[1] != "other" {
		t.Fatalf("Limit asked for %v, want limited and other (tokenless was left out first)", counted)
	}
	if !jsonEqual(t, jsonMember(t, out.Result, "capabilities"), `{"tools":{"listChanged":false},"resources":{"listChanged":false,"subscribe":false}}`) {
		t.Fatalf("capabilities = %s", jsonMember(t, out.Result, "capabilities"))
	}
	oc := outcomesOf(t, out.Result)
	if oc["limited"]["status"] != "limit_exceeded" || oc["tokenless"]["status"] != "auth_required" || oc["other"]["status"] != "ok" {
		t.Fatalf("outcomes = %v", oc)
	}
}

// A server gets an upstream listen only when it offers something of what
// the listen wants.
func TestOffers(t *testing.T) {
	info := func(era mcp.Era, caps string) *upstream.Info {
		var c mcp.ServerCapabilities
		if err := json.Unmarshal([]byte(caps), &c); err != nil {
			t.Fatal(err)
		}
		return &upstream.Info{Era: era, Capabilities: c}
	}
	logs := func() string { return "" }
	for _, tc := range []struct {
		name string
		info *upstream.Info
		part Filter
		want bool
	}{
		{"no answer", nil, Filter{ToolsListChanged: true}, false},
		{"tools announced", info(mcp.EraModern, capable), Filter{ToolsListChanged: true}, true},
		{"no capabilities", info(mcp.EraModern, `{}`), Filter{ToolsListChanged: true, ResourcesListChanged: true, Log: logs}, false},
		{"tools without listChanged", info(mcp.EraModern, `{"tools":{}}`), Filter{ToolsListChanged: true}, false},
		{"prompts wanted, only tools announced", info(mcp.EraModern, capable), Filter{PromptsListChanged: true}, false},
		{"a subscribed URI it serves", info(mcp.EraModern, capable), Filter{ResourceSubscriptions: []string{"test://value"}}, true},
		{"a modern upstream's logs are not followed", info(mcp.EraModern, `{"logging":{}}`), Filter{Log: logs}, false},
		{"a legacy upstream's logs", info(mcp.EraLegacy, `{"logging":{}}`), Filter{Log: logs}, true},
		{"a legacy upstream that does not log", info(mcp.EraLegacy, `{}`), Filter{Log: logs}, false},
		{"URL elicitation completions", info(mcp.EraLegacy, `{}`), Filter{ElicitationComplete: true}, true},
	} {
		if got := offers(tc.info, &tc.part); got != tc.want {
			t.Errorf("%s: offers = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// A modern upstream that announces nothing the listen wants gets no
// subscriptions/listen: the listen is acknowledged with nothing honoured
// and holds nothing upstream until the caller leaves.
func TestListenSkipsServersThatOfferNothing(t *testing.T) {
	quiet := fakemcp.New(t, fakemcp.Opts{Caps: `{"tools":{}}`})
	g := newTestGateway(t, Config{}, upSpec{name: "quiet", fake: quiet})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var honoured json.RawMessage
	lctx, leave := context.WithCancel(ctx)
	defer leave()
	out := listenRaw(g, lctx, Operation{Method: mcp.MethodSubscriptionsListen, Caller: master, Surface: fault.Modern},
		json.RawMessage(`{"toolsListChanged":true,"resourceSubscriptions":["test://value"]}`),
		func(b json.RawMessage) { honoured = b; leave() }, func(string, json.RawMessage) {})
	if out.Err != nil || ctx.Err() != nil {
		t.Fatalf("listen: %v %v", out.Err, ctx.Err())
	}
	if !jsonEqual(t, honoured, `{}`) {
		t.Fatalf("honoured = %s", honoured)
	}
	if n := quiet.Count(mcp.MethodSubscriptionsListen); n != 0 {
		t.Fatalf("%d upstream listens sent", n)
	}
}
