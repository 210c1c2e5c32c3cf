package gateway

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/mcpgw/mcpgw/internal/fakemcp"
	"github.com/mcpgw/mcpgw/internal/fault"
	"github.com/mcpgw/mcpgw/internal/identity"
	"github.com/mcpgw/mcpgw/internal/jsonrpc"
	"github.com/mcpgw/mcpgw/internal/mcp"
	"github.com/mcpgw/mcpgw/internal/policy"
)

// routed is the usual pair: alpha speaks 2026-07-28, beta 2025-11-25.
type routed struct {
	g           *Gateway
	alpha, beta *fakemcp.Server
}

func (r routed) both() []*fakemcp.Server { return []*fakemcp.Server{r.alpha, r.beta} }

func notFoundRead(server string) fakemcp.Handler {
	return func(p json.RawMessage) (json.RawMessage, *jsonrpc.Error) {
		if uri, _ := jsonrpc.StringMember(p, "uri"); strings.HasSuffix(uri, "/404") {
			return nil, &jsonrpc.Error{Code: mcp.CodeResourceNotFoundLegacy, Message: "Resource not found", Data: json.RawMessage(`{"uri":"` + uri + `"}`)}
		}
		return echo(server)(p)
	}
}

func newRouted(t *testing.T, alphaPolicy, betaPolicy policy.Server) routed {
	alpha := fakemcp.New(t, fakemcp.Opts{
		Lists: map[string][]json.RawMessage{
			mcp.MethodToolsList:              fakemcp.Tools("search", "web-fetch", "delete"),
			mcp.MethodPromptsList:            fakemcp.Prompts("greet"),
			mcp.MethodResourcesList:          fakemcp.Resources("file:///a", "file:///shared"),
			mcp.MethodResourcesTemplatesList: fakemcp.Templates("file:///docs/{name}"),
		},
		Handlers: map[string]fakemcp.Handler{
			mcp.MethodToolsCall:          echo("alpha"),
			mcp.MethodPromptsGet:         echo("alpha"),
			mcp.MethodResourcesRead:      notFoundRead("alpha"),
			mcp.MethodCompletionComplete: echo("alpha"),
		},
	})
	beta := fakemcp.New(t, fakemcp.Opts{
		Legacy: true,
		Lists: map[string][]json.RawMessage{
			mcp.MethodToolsList:              fakemcp.Tools("search", "drop"),
			mcp.MethodPromptsList:            fakemcp.Prompts("greet", "summarise"),
			mcp.MethodResourcesList:          fakemcp.Resources("file:///b", "file:///shared"),
			mcp.MethodResourcesTemplatesList: fakemcp.Templates("db://rows/{id}"),
		},
		Handlers: map[string]fakemcp.Handler{
			mcp.MethodToolsCall:          echo("beta"),
			mcp.MethodPromptsGet:         echo("beta"),
			mcp.MethodResourcesRead:      notFoundRead("beta"),
			mcp.MethodCompletionComplete: echo("beta"),
		},
	})
	g := newTestGateway(t, Config{},
		upSpec{name: "alpha", fake: alpha, policy: alphaPolicy},
		upSpec{name: "beta", fake: beta, policy: betaPolicy})
	return routed{g: g, alpha: alpha, beta: beta}
}

// echoed returns the params the upstream saw, as echoed in the result.
func echoed(t *testing.T, out answered, server string) map[string]any {
	t.Helper()
	res := wantResult(t, out)
	content, _ := res["content"].([]any)
	if len(content) != 1 || content[0].(map[string]any)["text"] != server {
		t.Fatalf("answered by %v, want %s: %s", content, server, out.Result)
	}
	e, _ := res["echo"].(map[string]any)
	return e
}

func TestUnknownNameNoUpstreamContact(t *testing.T) {
	r := newRouted(t, policy.Server{}, policy.Server{})
	onlyAlpha := &identity.Caller{KeyHash: "k", Servers: []string{"alpha"}}
	for _, tc := range []struct {
		name   string
		method string
		params string
		caller *identity.Caller
		scope  []string
	}{
		{"unknown prefix", mcp.MethodToolsCall, `{"name":"gamma-search","arguments":{}}`, nil, nil},
		{"no prefix", mcp.MethodToolsCall, `{"name":"search"}`, nil, nil},
		{"empty rest", mcp.MethodToolsCall, `{"name":"alpha-"}`, nil, nil},
		{"empty name", mcp.MethodToolsCall, `{"name":""}`, nil, nil},
		{"server not visible to the caller", mcp.MethodToolsCall, `{"name":"beta-search"}`, onlyAlpha, nil},
		{"server outside the scope", mcp.MethodToolsCall, `{"name":"beta-search"}`, nil, []string{"alpha"}},
		{"unknown scope", mcp.MethodToolsCall, `{"name":"alpha-search"}`, nil, []string{"nope"}},
		{"name missing", mcp.MethodToolsCall, `{"arguments":{}}`, nil, nil},
		{"name not a string", mcp.MethodToolsCall, `{"name":7}`, nil, nil},
		{"no params", mcp.MethodToolsCall, ``, nil, nil},
		{"params not an object", mcp.MethodToolsCall, `["alpha-search"]`, nil, nil},
		{"unknown prompt prefix", mcp.MethodPromptsGet, `{"name":"gamma-greet"}`, nil, nil},
		{"prompt outside the scope", mcp.MethodPromptsGet, `{"name":"beta-greet"}`, nil, []string{"alpha"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := r.alpha.Total() + r.beta.Total()
			out := do(t, r.g, Operation{Method: tc.method, Params: json.RawMessage(tc.params), Caller: tc.caller, Scope: tc.scope, Surface: fault.Modern})
			wantError(t, out, jsonrpc.CodeInvalidParams, http.StatusBadRequest)
			if after := r.alpha.Total() + r.beta.Total(); after != before {
				t.Fatalf("an unknown name contacted an upstream (%d → %d messages)", before, after)
			}
		})
	}
}

func TestToolRefusedByPolicy(t *testing.T) {
	r := newRouted(t, policy.Server{AllowedTools: []string{"search", "web-fetch"}}, policy.Server{DisallowedTools: []string{"drop"}})
	limited := &identity.Caller{KeyHash: "k2", ToolPermissions: map[string][]string{"beta": {"drop"}, "alpha": {"web-fetch"}}}
	for _, tc := range []struct {
		name, tool, server, bare string
		caller                   *identity.Caller
	}{
		{"not in allowed_tools", "alpha-delete", "alpha", "delete", nil},
		{"in disallowed_tools", "beta-drop", "beta", "drop", nil},
		{"disallowed wins over the caller's permission", "beta-drop", "beta", "drop", limited},
		{"not in the caller's tool permissions", "beta-search", "beta", "search", limited},
		{"allowed by the server, not the caller", "alpha-search", "alpha", "search", limited},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := do(t, r.g, Operation{Method: mcp.MethodToolsCall, Params: json.RawMessage(`{"name":"` + tc.tool + `","arguments":{}}`), Caller: tc.caller, Surface: fault.Modern})
			res := wantResult(t, out)
			if res["isError"] != true {
				t.Fatalf("refusal is not an isError result: %s", out.Result)
			}
			text := res["content"].([]any)[0].(map[string]any)["text"].(string)
			if !strings.Contains(text, "is not allowed") || !strings.Contains(text, "'"+tc.bare+"'") || !strings.Contains(text, "'"+tc.server+"'") {
				t.Fatalf("refusal text %q", text)
			}
		})
	}
	for _, f := range r.both() {
		if n := f.Count(mcp.MethodToolsCall); n != 0 {
			t.Fatalf("a refused call reached an upstream (%d tools/call)", n)
		}
	}
	// The permitted ones go through, and the lists agree with the refusals.
	echoed(t, do(t, r.g, Operation{Method: mcp.MethodToolsCall, Params: json.RawMessage(`{"name":"alpha-web-fetch"}`), Caller: limited}), "alpha")
	for _, tc := range []struct {
		caller *identity.Caller
		want   string
	}{
		{master, `["alpha-search","alpha-web-fetch","beta-search"]`},
		{limited, `["alpha-web-fetch"]`},
	} {
		names := itemNames(t, wantResult(t, do(t, r.g, Operation{Method: mcp.MethodToolsList, Caller: tc.caller})), "tools")
		if !jsonEqual(t, names, tc.want) {
			t.Fatalf("tools/list = %q, want %s", names, tc.want)
		}
	}
}

func TestToolsCallForwarding(t *testing.T) {
	r := newRouted(t, policy.Server{}, policy.Server{})
	for _, tc := range []struct {
		name     string
		tool     string
		f        *fakemcp.Server
		server   string
		bare     string
		token    string
		modernUp bool
	}{
		{"modern upstream", "alpha-search", r.alpha, "alpha", "search", `"tok-7"`, true},
		{"name with the separator", "alpha-web-fetch", r.alpha, "alpha", "web-fetch", `42`, true},
		{"legacy upstream", "beta-search", r.beta, "beta", "search", `"tok-8"`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			params := `{"name":"` + tc.tool + `","arguments":{"q":"h\u00e9llo \"quoted\"","n":[1,2.5,{"deep":true}],"nil":null},` +
				`"_meta":{"progressToken":` + tc.token + `,"example.com/trace":"abc",` +
				`"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}`
			for _, modern := range []bool{true, false} {
				before := tc.f.Count(mcp.MethodToolsCall)
				out := do(t, r.g, Operation{Method: mcp.MethodToolsCall, Params: json.RawMessage(params), Surface: era(modern)})
				echoed(t, out, tc.server)
				if tc.f.Count(mcp.MethodToolsCall) != before+1 {
					t.Fatalf("want exactly one tools/call on %s", tc.server)
				}
				req := tc.f.Last(t, mcp.MethodToolsCall)
				p := paramsOf(t, req)
				if p["name"] != tc.bare {
					t.Fatalf("upstream got name %v, want %q", p["name"], tc.bare)
				}
				if !jsonEqual(t, p["arguments"], `{"q":"héllo \"quoted\"","n":[1,2.5,{"deep":true}],"nil":null}`) {
					t.Fatalf("arguments changed on the way: %s", req.Params)
				}
				meta, _ := p["_meta"].(map[string]any)
				if !jsonEqual(t, meta["progressToken"], tc.token) || meta["example.com/trace"] != "abc" {
					t.Fatalf("_meta changed on the way: %s", req.Params)
				}
				_, hasVersion := meta[mcp.MetaProtocolVersion]
				if hasVersion != tc.modernUp {
					t.Fatalf("_meta protocolVersion present = %v for a modern=%v upstream: %s", hasVersion, tc.modernUp, req.Params)
				}
				if tc.modernUp && req.Header.Get(mcp.HeaderName) != tc.bare {
					t.Fatalf("Mcp-Name = %q, want the bare name %q", req.Header.Get(mcp.HeaderName), tc.bare)
				}
			}
		})
	}
	// The other upstream never heard of these calls.
	if r.alpha.Count(mcp.MethodToolsCall) != 4 || r.beta.Count(mcp.MethodToolsCall) != 2 {
		t.Fatalf("tools/call counts alpha=%d beta=%d", r.alpha.Count(mcp.MethodToolsCall), r.beta.Count(mcp.MethodToolsCall))
	}
}

func TestUnprefixedScope(t *testing.T) {
	r := newRouted(t, policy.Server{}, policy.Server{})
	op := Operation{Method: mcp.MethodToolsCall, Params: json.RawMessage(`{"name":"search"}`), Scope: []string{"beta"}, Unprefixed: true, Surface: fault.Modern}
	e := echoed(t, do(t, r.g, op), "beta")
	if e["name"] != "search" {
		t.Fatalf("upstream got %v", e["name"])
	}
	// A prefixed name is just a name there, and beta lists no such tool.
	op.Params = json.RawMessage(`{"name":"beta-search"}`)
	wantError(t, do(t, r.g, op), jsonrpc.CodeInvalidParams, http.StatusBadRequest)
	res := wantResult(t, do(t, r.g, Operation{Method: mcp.MethodToolsList, Scope: []string{"beta"}, Unprefixed: true}))
	if names := itemNames(t, res, "tools"); !jsonEqual(t, names, `["search","drop"]`) {
		t.Fatalf("unprefixed tools/list: %q", names)
	}
	// Unprefixed needs exactly one server.
	op = Operation{Method: mcp.MethodToolsCall, Params: json.RawMessage(`{"name":"search"}`), Unprefixed: true, Surface: fault.Modern}
	wantError(t, do(t, r.g, op), jsonrpc.CodeInvalidParams, http.StatusBadRequest)
}

func TestPromptsGetRouted(t *testing.T) {
	r := newRouted(t, policy.Server{}, policy.Server{})
	for _, tc := range []struct {
		name   string
		f      *fakemcp.Server
		server string
	}{
		{"beta-greet", r.beta, "beta"},
		{"alpha-greet", r.alpha, "alpha"},
		{"beta-summarise", r.beta, "beta"},
	} {
		other := r.alpha
		if tc.f == r.alpha {
			other = r.beta
		}
		otherBefore := other.Count(mcp.MethodPromptsGet)
		out := do(t, r.g, Operation{Method: mcp.MethodPromptsGet, Params: json.RawMessage(`{"name":"` + tc.name + `","arguments":{"lang":"en"}}`), Surface: fault.Modern})
		e := echoed(t, out, tc.server)
		bare := strings.TrimPrefix(tc.name, tc.server+"-")
		if e["name"] != bare || !jsonEqual(t, e["arguments"], `{"lang":"en"}`) {
			t.Fatalf("%s: upstream got %v", tc.name, e)
		}
		if p := paramsOf(t, tc.f.Last(t, mcp.MethodPromptsGet)); p["name"] != bare {
			t.Fatalf("%s: upstream got name %v", tc.name, p["name"])
		}
		if other.Count(mcp.MethodPromptsGet) != otherBefore {
			t.Fatalf("%s reached the other upstream", tc.name)
		}
	}
	// Prompts are not subject to tool policy.
	r2 := newRouted(t, policy.Server{AllowedTools: []string{"none"}}, policy.Server{})
	echoed(t, do(t, r2.g, Operation{Method: mcp.MethodPromptsGet, Params: json.RawMessage(`{"name":"alpha-greet"}`)}), "alpha")
}

func TestResourcesRead(t *testing.T) {
	r := newRouted(t, policy.Server{}, policy.Server{})
	for _, tc := range []struct {
		uri    string
		server string
	}{
		{"file:///a", "alpha"},
		{"file:///b", "beta"},
		{"file:///shared", "alpha"}, // listed by both: the first in order
		{"db://rows/7", "beta"},     // template
		{"file:///docs/readme", "alpha"},
	} {
		for _, modern := range []bool{true, false} {
			counts := [2]int{r.alpha.Count(mcp.MethodResourcesRead), r.beta.Count(mcp.MethodResourcesRead)}
			out := do(t, r.g, Operation{Method: mcp.MethodResourcesRead, Params: json.RawMessage(`{"uri":"` + tc.uri + `"}`), Surface: era(modern)})
			if e := echoed(t, out, tc.server); e["uri"] != tc.uri {
				t.Fatalf("%s: upstream got uri %v", tc.uri, e["uri"])
			}
			got := [2]int{r.alpha.Count(mcp.MethodResourcesRead) - counts[0], r.beta.Count(mcp.MethodResourcesRead) - counts[1]}
			want := [2]int{1, 0}
			if tc.server == "beta" {
				want = [2]int{0, 1}
			}
			if got != want {
				t.Fatalf("%s: resources/read counts (alpha, beta) = %v, want %v", tc.uri, got, want)
			}
		}
	}
	// The order of servers is the caller's view: scoped to beta, beta serves
	// the shared URI.
	out := do(t, r.g, Operation{Method: mcp.MethodResourcesRead, Params: json.RawMessage(`{"uri":"file:///shared"}`), Scope: []string{"beta"}})
	echoed(t, out, "beta")

	for _, tc := range []struct {
		name     string
		params   string
		modern   bool
		code     int64
		status   int
		upstream bool // the read reaches an upstream
	}{
		{"unknown URI, modern caller", `{"uri":"file:///zzz"}`, true, jsonrpc.CodeInvalidParams, 400, false},
		{"unknown URI, legacy caller", `{"uri":"file:///zzz"}`, false, mcp.CodeResourceNotFoundLegacy, 200, false},
		{"uri missing", `{}`, true, jsonrpc.CodeInvalidParams, 400, false},
		{"upstream -32002, modern caller", `{"uri":"db://rows/404"}`, true, jsonrpc.CodeInvalidParams, 400, true},
		{"upstream -32002, legacy caller", `{"uri":"db://rows/404"}`, false, mcp.CodeResourceNotFoundLegacy, 200, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := r.alpha.Count(mcp.MethodResourcesRead) + r.beta.Count(mcp.MethodResourcesRead)
			out := do(t, r.g, Operation{Method: mcp.MethodResourcesRead, Params: json.RawMessage(tc.params), Surface: era(tc.modern)})
			wantError(t, out, tc.code, tc.status)
			reads := r.alpha.Count(mcp.MethodResourcesRead) + r.beta.Count(mcp.MethodResourcesRead) - before
			if (reads == 1) != tc.upstream || reads > 1 {
				t.Fatalf("%d upstream reads", reads)
			}
			if uri, ok := jsonrpc.StringMember(json.RawMessage(tc.params), "uri"); ok {
				if !jsonEqual(t, out.Err.Data, `{"uri":"`+uri+`"}`) {
					t.Fatalf("error data = %s", out.Err.Data)
				}
			}
		})
	}
}

func TestCompletionRouted(t *testing.T) {
	r := newRouted(t, policy.Server{}, policy.Server{})
	arg := `"argument":{"name":"lang","value":"e"},"context":{"arguments":{"x":"y"}}`
	for _, tc := range []struct {
		name    string
		ref     string
		server  string
		wantRef string
	}{
		{"prompt, renamed", `{"type":"ref/prompt","name":"beta-greet"}`, "beta", `{"type":"ref/prompt","name":"greet"}`},
		{"prompt on the modern upstream", `{"type":"ref/prompt","name":"alpha-greet","title":"t"}`, "alpha", `{"type":"ref/prompt","name":"greet","title":"t"}`},
		{"resource template", `{"type":"ref/resource","uri":"db://rows/{id}"}`, "beta", `{"type":"ref/resource","uri":"db://rows/{id}"}`},
		{"resource template on the first", `{"type":"ref/resource","uri":"file:///docs/{name}"}`, "alpha", `{"type":"ref/resource","uri":"file:///docs/{name}"}`},
		{"listed resource", `{"type":"ref/resource","uri":"file:///b"}`, "beta", `{"type":"ref/resource","uri":"file:///b"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := do(t, r.g, Operation{Method: mcp.MethodCompletionComplete, Params: json.RawMessage(`{"ref":` + tc.ref + `,` + arg + `}`), Surface: fault.Modern})
			e := echoed(t, out, tc.server)
			if !jsonEqual(t, e["ref"], tc.wantRef) {
				t.Fatalf("upstream ref = %v, want %s", e["ref"], tc.wantRef)
			}
			if !jsonEqual(t, e["argument"], `{"name":"lang","value":"e"}`) || !jsonEqual(t, e["context"], `{"arguments":{"x":"y"}}`) {
				t.Fatalf("upstream params = %v", e)
			}
		})
	}
	for _, tc := range []struct {
		name   string
		params string
		modern bool
		code   int64
	}{
		{"unknown prompt", `{"ref":{"type":"ref/prompt","name":"gamma-greet"},` + arg + `}`, true, jsonrpc.CodeInvalidParams},
		{"prompt without a prefix", `{"ref":{"type":"ref/prompt","name":"greet"},` + arg + `}`, true, jsonrpc.CodeInvalidParams},
		{"unknown resource, modern", `{"ref":{"type":"ref/resource","uri":"x://{id}"},` + arg + `}`, true, jsonrpc.CodeInvalidParams},
		{"unknown resource, legacy", `{"ref":{"type":"ref/resource","uri":"x://{id}"},` + arg + `}`, false, mcp.CodeResourceNotFoundLegacy},
		{"unknown ref type", `{"ref":{"type":"ref/tool","name":"alpha-search"},` + arg + `}`, true, jsonrpc.CodeInvalidParams},
		{"ref missing", `{` + arg + `}`, true, jsonrpc.CodeInvalidParams},
		{"ref not an object", `{"ref":"beta-greet",` + arg + `}`, true, jsonrpc.CodeInvalidParams},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := r.alpha.Count(mcp.MethodCompletionComplete) + r.beta.Count(mcp.MethodCompletionComplete)
			out := do(t, r.g, Operation{Method: mcp.MethodCompletionComplete, Params: json.RawMessage(tc.params), Surface: era(tc.modern)})
			status := http.StatusBadRequest
			if !tc.modern {
				status = http.StatusOK // a legacy caller's error rides HTTP 200
			}
			wantError(t, out, tc.code, status)
			if after := r.alpha.Count(mcp.MethodCompletionComplete) + r.beta.Count(mcp.MethodCompletionComplete); after != before {
				t.Fatal("the completion reached an upstream")
			}
		})
	}
}

func TestUnknownMethod(t *testing.T) {
	r := newRouted(t, policy.Server{}, policy.Server{})
	for _, m := range []string{"tools/delete", mcp.MethodPing, mcp.MethodInitialize, ""} {
		wantError(t, do(t, r.g, Operation{Method: m}), jsonrpc.CodeMethodNotFound, http.StatusOK) // legacy: HTTP 200
	}
	if r.alpha.Total()+r.beta.Total() != 0 {
		t.Fatal("an unknown method contacted an upstream")
	}
}

func TestCallUpstreamFailure(t *testing.T) {
	const secret = "SECRET-BODY"
	unauth := fakemcp.New(t, fakemcp.Opts{Status: 401, Challenge: `Bearer resource_metadata="https://u.example/prm"`, Body: secret})
	forbidden := fakemcp.New(t, fakemcp.Opts{Legacy: true, Status: 403, Challenge: `Bearer error="insufficient_scope"`, Body: secret})
	broken := fakemcp.New(t, fakemcp.Opts{Status: 500, Body: secret})
	rpc := fakemcp.New(t, fakemcp.Opts{Lists: map[string][]json.RawMessage{mcp.MethodToolsList: fakemcp.Tools("t")}, Handlers: map[string]fakemcp.Handler{
		mcp.MethodToolsCall: func(json.RawMessage) (json.RawMessage, *jsonrpc.Error) {
			return nil, &jsonrpc.Error{Code: -32001, Message: "upstream says no", Data: json.RawMessage(`{"why":"x"}`)}
		},
	}})
	var logs fakemcp.LogBuffer
	g := newTestGateway(t, Config{Logger: logs.Logger()},
		upSpec{name: "unauth", fake: unauth}, upSpec{name: "forbidden", fake: forbidden},
		upSpec{name: "broken", fake: broken}, upSpec{name: "rpc", fake: rpc})
	for _, tc := range []struct {
		tool      string
		code      int64
		status    int
		challenge string
		message   string
	}{
		{"unauth-t", jsonrpc.CodeInternalError, 401, `Bearer resource_metadata="https://u.example/prm"`, "upstream unauth: upstream requires authentication (HTTP 401)"},
		{"forbidden-t", jsonrpc.CodeInternalError, 403, `Bearer error="insufficient_scope"`, "upstream forbidden: upstream refused access (HTTP 403)"},
		{"broken-t", jsonrpc.CodeInternalError, 200, "", "upstream broken: upstream answered HTTP 500 Internal Server Error"},
		{"rpc-t", -32001, 200, "", "upstream says no"}, // the upstream's own JSON-RPC error is the caller's
	} {
		t.Run(tc.tool, func(t *testing.T) {
			out := do(t, g, Operation{Method: mcp.MethodToolsCall, Params: json.RawMessage(`{"name":"` + tc.tool + `"}`), Surface: fault.Modern})
			wantError(t, out, tc.code, tc.status)
			if out.Challenge != tc.challenge || out.Err.Message != tc.message {
				t.Fatalf("challenge %q message %q; want %q %q", out.Challenge, out.Err.Message, tc.challenge, tc.message)
			}
		})
	}
	if strings.Contains(logs.String(), secret) {
		t.Fatalf("an upstream body reached the log: %s", logs.String())
	}
}

// A name the caller's listing lacks is refused without an upstream call; with
// no recent listing the gateway lists first.
func TestUnlistedNameAfterListing(t *testing.T) {
	r := newRouted(t, policy.Server{}, policy.Server{})
	call := Operation{Method: mcp.MethodToolsCall, Params: json.RawMessage(`{"name":"alpha-nonexistent","arguments":{}}`), Surface: fault.Modern}
	before := r.alpha.Count(mcp.MethodToolsCall)
	wantError(t, do(t, r.g, call), jsonrpc.CodeInvalidParams, http.StatusBadRequest) // no listing yet: the gateway lists first
	if r.alpha.Count(mcp.MethodToolsCall) != before {
		t.Fatal("a tool the upstream does not list reached the upstream")
	}
	wantResult(t, do(t, r.g, Operation{Method: mcp.MethodToolsList, Surface: fault.Modern}))
	before = r.alpha.Count(mcp.MethodToolsCall)
	wantError(t, do(t, r.g, call), jsonrpc.CodeInvalidParams, http.StatusBadRequest)
	if r.alpha.Count(mcp.MethodToolsCall) != before {
		t.Fatal("an unlisted tool reached the upstream")
	}
	listed := Operation{Method: mcp.MethodToolsCall, Params: json.RawMessage(`{"name":"alpha-search","arguments":{}}`), Surface: fault.Modern}
	wantResult(t, do(t, r.g, listed))
	if r.alpha.Count(mcp.MethodToolsCall) != before+1 {
		t.Fatal("a listed tool did not reach the upstream")
	}
}
