package gateway

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"

	"github.com/mcpgw/mcpgw/internal/fakemcp"
	"github.com/mcpgw/mcpgw/internal/fault"
	"github.com/mcpgw/mcpgw/internal/identity"
	"github.com/mcpgw/mcpgw/internal/jsonrpc"
	"github.com/mcpgw/mcpgw/internal/mcp"
	"github.com/mcpgw/mcpgw/internal/upstream/auth"
)

// forwarding is three upstreams: alpha forwards X-Tenant and Authorization,
// beta forwards nothing, del delegates the caller's bearer token.
type forwarding struct {
	g                *Gateway
	alpha, beta, del *fakemcp.Server
}

func newForwarding(t *testing.T) forwarding {
	mk := func(name string, legacy bool) *fakemcp.Server {
		return fakemcp.New(t, fakemcp.Opts{Legacy: legacy,
			Lists:    map[string][]json.RawMessage{mcp.MethodToolsList: fakemcp.Tools("t")},
			Handlers: map[string]fakemcp.Handler{mcp.MethodToolsCall: echo(name)},
		})
	}
	f := forwarding{alpha: mk("alpha", false), beta: mk("beta", true), del: mk("del", false)}
	f.g = newTestGateway(t, Config{},
		upSpec{name: "alpha", fake: f.alpha, server: Server{ExtraHeaders: []string{"x-tenant", "Authorization"}}},
		upSpec{name: "beta", fake: f.beta},
		upSpec{name: "del", fake: f.del, server: Server{Delegate: true}, auth: auth.PolicyConfig{AuthType: auth.AuthOAuthDelegate}},
	)
	return f
}

func TestExtraHeadersAndAuthorization(t *testing.T) {
	f := newForwarding(t)
	onlyAlpha := &identity.Caller{KeyHash: "k-a", Servers: []string{"alpha"}}
	onlyDel := &identity.Caller{KeyHash: "k-d", Servers: []string{"del"}}
	callerHeader := func(authz string) http.Header {
		h := header("X-Tenant", "tenant-1", "X-Other", "other", "Cookie", "c=1")
		if authz != "" {
			h.Set("Authorization", authz)
		}
		return h
	}
	for _, tc := range []struct {
		name       string
		tool       string
		up         *fakemcp.Server
		caller     *identity.Caller
		scope      []string
		keyInAuthz bool
		authz      string
		wantTenant string
		wantAuthz  string
	}{
		{"extra header, many servers: no Authorization", "alpha-t", f.alpha, nil, nil, false, "Bearer caller-tok", "tenant-1", ""},
		{"extra header, one server in scope", "alpha-t", f.alpha, nil, []string{"alpha"}, false, "Bearer caller-tok", "tenant-1", "Bearer caller-tok"},
		{"one server visible to the caller", "alpha-t", f.alpha, onlyAlpha, nil, false, "Bearer caller-tok", "tenant-1", "Bearer caller-tok"},
		{"gateway key in Authorization", "alpha-t", f.alpha, nil, []string{"alpha"}, true, "Bearer sk-gateway", "tenant-1", ""},
		{"server without extra headers", "beta-t", f.beta, nil, []string{"beta"}, false, "Bearer caller-tok", "", ""},
		{"delegate, one server in scope", "del-t", f.del, nil, []string{"del"}, false, "Bearer caller-tok", "", "Bearer caller-tok"},
		{"delegate, one server visible", "del-t", f.del, onlyDel, nil, false, "Bearer caller-tok", "", "Bearer caller-tok"},
		{"delegate, many servers", "del-t", f.del, nil, nil, false, "Bearer caller-tok", "", ""},
		{"delegate, gateway key in Authorization", "del-t", f.del, nil, []string{"del"}, true, "Bearer sk-gateway", "", ""},
		{"delegate, not a bearer token", "del-t", f.del, nil, []string{"del"}, false, "Basic dXNlcjpwYXNz", "", ""},
		{"delegate, no Authorization", "del-t", f.del, nil, []string{"del"}, false, "", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			op := Operation{Method: mcp.MethodToolsCall, Params: json.RawMessage(`{"name":"` + tc.tool + `"}`),
				Caller: tc.caller, Scope: tc.scope, Credentials: creds(callerHeader(tc.authz), tc.keyInAuthz), Surface: fault.Modern}
			wantResult(t, do(t, f.g, op))
			h := tc.up.Last(t, mcp.MethodToolsCall).Header
			if got := h.Get("X-Tenant"); got != tc.wantTenant {
				t.Fatalf("X-Tenant = %q, want %q", got, tc.wantTenant)
			}
			if got := h.Get("Authorization"); got != tc.wantAuthz {
				t.Fatalf("Authorization = %q, want %q", got, tc.wantAuthz)
			}
			for _, name := range []string{"X-Other", "Cookie"} {
				if h.Get(name) != "" {
					t.Fatalf("%s forwarded without being named in extra_headers", name)
				}
			}
			// Lists carry the same options as calls.
			wantResult(t, do(t, f.g, Operation{Method: mcp.MethodToolsList, Caller: tc.caller, Scope: tc.scope,
				Credentials: creds(callerHeader(tc.authz), tc.keyInAuthz), Surface: fault.Modern}))
			h = tc.up.Last(t, mcp.MethodToolsList).Header
			if h.Get("X-Tenant") != tc.wantTenant || h.Get("Authorization") != tc.wantAuthz {
				t.Fatalf("tools/list headers: X-Tenant %q Authorization %q", h.Get("X-Tenant"), h.Get("Authorization"))
			}
		})
	}
	// The other servers never saw the tenant header or the caller's token.
	for _, up := range []*fakemcp.Server{f.beta, f.del} {
		for _, r := range append(up.Requests(mcp.MethodToolsCall), up.Requests(mcp.MethodToolsList)...) {
			if r.Header.Get("X-Tenant") != "" {
				t.Fatal("X-Tenant reached a server that did not ask for it")
			}
		}
	}
	for _, r := range f.beta.Requests(mcp.MethodToolsCall) {
		if r.Header.Get("Authorization") != "" {
			t.Fatal("Authorization reached a server that neither forwards nor delegates it")
		}
	}
}

func TestDiscoverForwardsOptions(t *testing.T) {
	f := newForwarding(t)
	op := Operation{Method: mcp.MethodDiscover, Scope: []string{"del"}, Credentials: creds(header("Authorization", "Bearer caller-tok"), false)}
	wantResult(t, do(t, f.g, op))
	if got := f.del.Last(t, mcp.MethodDiscover).Header.Get("Authorization"); got != "Bearer caller-tok" {
		t.Fatalf("server/discover Authorization = %q", got)
	}
}

// cacheStep is one tools/list by the caller with key hash key and an
// X-Tenant header; want is the upstream's tools/list count afterwards.
type cacheStep struct {
	key, tenant string
	want        int
}

// The list cache honours the upstream's scope per caller and never shares
// across forwarded credentials.
func TestListCacheAcrossCallers(t *testing.T) {
	for _, tc := range []struct {
		scope string
		// steps: caller key hash, tenant header, then the upstream tools/list count
		steps []cacheStep
	}{
		{"public", []cacheStep{{"k1", "t1", 1}, {"k2", "t1", 1}, {"k2", "t2", 2}, {"k1", "t2", 2}, {"k1", "", 3}}},
		{"private", []cacheStep{{"k1", "t1", 1}, {"k1", "t1", 1}, {"k2", "t1", 2}, {"k1", "t2", 3}, {"k2", "t1", 3}}},
	} {
		t.Run(tc.scope, func(t *testing.T) {
			up := fakemcp.New(t, fakemcp.Opts{TTLMs: fakemcp.TTL(60_000), CacheScope: tc.scope,
				Lists: map[string][]json.RawMessage{mcp.MethodToolsList: fakemcp.Tools("t")}})
			g := newTestGateway(t, Config{}, upSpec{name: "s", fake: up, server: Server{ExtraHeaders: []string{"X-Tenant"}}})
			for i, st := range tc.steps {
				c := &identity.Caller{KeyHash: st.key, UserID: "u-" + st.key}
				op := Operation{Method: mcp.MethodToolsList, Caller: c, Credentials: creds(header("X-Tenant", st.tenant), false)}
				if st.tenant == "" {
					op.Credentials = creds(http.Header{}, false)
				}
				res := wantResult(t, do(t, g, op))
				if len(res["tools"].([]any)) != 1 {
					t.Fatalf("step %d: %v", i, res)
				}
				if got := up.Count(mcp.MethodToolsList); got != st.want {
					t.Fatalf("step %d (%s, %q): tools/list count = %d, want %d", i, st.key, st.tenant, got, st.want)
				}
			}
		})
	}
}

func TestListCursorBoundToCallerAndScope(t *testing.T) {
	var names []string
	for i := range 510 {
		names = append(names, fmt.Sprintf("t%03d", i))
	}
	up := fakemcp.New(t, fakemcp.Opts{Lists: map[string][]json.RawMessage{
		mcp.MethodToolsList:   fakemcp.Tools(names...),
		mcp.MethodPromptsList: fakemcp.Prompts(names...),
	}})
	g := newTestGateway(t, Config{}, upSpec{name: "s", fake: up})
	alice := &identity.Caller{KeyHash: "ka", UserID: "alice"}
	first := wantResult(t, do(t, g, Operation{Method: mcp.MethodToolsList, Caller: alice, Params: json.RawMessage(`{}`)}))
	cursor, _ := first["nextCursor"].(string)
	if len(first["tools"].([]any)) != 500 || cursor == "" {
		t.Fatalf("first page: %d tools, cursor %q", len(first["tools"].([]any)), cursor)
	}
	params := json.RawMessage(`{"cursor":"` + cursor + `"}`)
	next := wantResult(t, do(t, g, Operation{Method: mcp.MethodToolsList, Caller: alice, Params: params}))
	if len(next["tools"].([]any)) != 10 || next["nextCursor"] != nil {
		t.Fatalf("second page: %v tools, cursor %v", len(next["tools"].([]any)), next["nextCursor"])
	}
	for _, tc := range []struct {
		name string
		op   Operation
	}{
		{"another caller", Operation{Method: mcp.MethodToolsList, Caller: &identity.Caller{KeyHash: "kb", UserID: "bob"}, Params: params}},
		{"same user, another key", Operation{Method: mcp.MethodToolsList, Caller: &identity.Caller{KeyHash: "kb", UserID: "alice"}, Params: params}},
		{"another scope", Operation{Method: mcp.MethodToolsList, Caller: alice, Scope: []string{"s"}, Params: params}},
		{"another method", Operation{Method: mcp.MethodPromptsList, Caller: alice, Params: params}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wantError(t, do(t, g, tc.op), jsonrpc.CodeInvalidParams, http.StatusOK) // a legacy caller's error rides HTTP 200
		})
	}
	t.Run("params not an object", func(t *testing.T) {
		wantError(t, do(t, g, Operation{Method: mcp.MethodToolsList, Caller: alice, Params: json.RawMessage(`{"cursor":5}`)}), jsonrpc.CodeInvalidParams, http.StatusOK)
	})
}

func TestListEveryUpstreamUnauthorized(t *testing.T) {
	a := fakemcp.New(t, fakemcp.Opts{Status: 401, Challenge: `Bearer resource_metadata="https://a.example/prm"`})
	b := fakemcp.New(t, fakemcp.Opts{Status: 401, Challenge: `Bearer realm="b"`})
	g := newTestGateway(t, Config{}, upSpec{name: "a", fake: a}, upSpec{name: "b", fake: b})
	out := do(t, g, Operation{Method: mcp.MethodToolsList})
	if out.Err == nil || out.Status != http.StatusUnauthorized || out.Challenge != `Bearer resource_metadata="https://a.example/prm"` {
		t.Fatalf("outcome = %+v", out)
	}
	// One upstream in scope that works is enough.
	ok := fakemcp.New(t, fakemcp.Opts{Lists: map[string][]json.RawMessage{mcp.MethodToolsList: fakemcp.Tools("t")}})
	g = newTestGateway(t, Config{}, upSpec{name: "a", fake: a}, upSpec{name: "ok", fake: ok})
	res := wantResult(t, do(t, g, Operation{Method: mcp.MethodToolsList}))
	meta := res["_meta"].(map[string]any)["litellm.ai/server_outcomes"]
	if !jsonEqual(t, meta, `{"a":{"status":"auth_required","http_status":401},"ok":{"status":"ok","tool_count":1}}`) {
		t.Fatalf("outcomes = %v", meta)
	}
}
