package policy_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/mcpgw/mcpgw/internal/identity"
	"github.com/mcpgw/mcpgw/internal/policy"
)

func TestRulesTable(t *testing.T) {
	servers := []policy.ServerFacts{{Name: "files", ID: "f1", Host: "files.internal:8080", Transport: "http", Era: "auto"}}
	destructive := json.RawMessage(`{"name":"rm","annotations":{"destructiveHint":true}}`)
	readOnly := json.RawMessage(`{"name":"read","annotations":{"readOnlyHint":true,"destructiveHint":false}}`)
	bare := json.RawMessage(`{"name":"plain"}`)
	ops := &identity.Caller{TeamID: "ops", Role: "internal_user"}
	dev := &identity.Caller{TeamID: "dev", UserID: "u1"}
	alice := &identity.Caller{UserID: "alice", Claims: map[string]any{"sub": "alice", "groups": []any{"eng", "web"}}}
	for _, tc := range []struct {
		name    string
		rule    policy.RuleSpec
		s       policy.Subject
		allowed bool
		result  string
	}{
		{"deny destructive for non-ops", policy.RuleSpec{Name: "r", Effect: "deny", Expr: `tool.annotations.destructiveHint && caller.team_id != "ops"`},
			policy.Subject{Caller: dev, Server: "files", Tool: "rm", Definition: destructive}, false, policy.ResultTrue},
		{"ops may use destructive", policy.RuleSpec{Name: "r", Effect: "deny", Expr: `tool.annotations.destructiveHint && caller.team_id != "ops"`},
			policy.Subject{Caller: ops, Server: "files", Tool: "rm", Definition: destructive}, true, policy.ResultFalse},
		{"missing hint takes the spec default (destructive)", policy.RuleSpec{Name: "r", Effect: "deny", Expr: `tool.annotations.destructiveHint && caller.team_id != "ops"`},
			policy.Subject{Caller: dev, Server: "files", Tool: "plain", Definition: bare}, false, policy.ResultTrue},
		{"require read-only", policy.RuleSpec{Name: "r", Effect: "require", Expr: `tool.annotations.readOnlyHint`},
			policy.Subject{Caller: dev, Server: "files", Tool: "read", Definition: readOnly}, true, policy.ResultTrue},
		{"require read-only refuses others", policy.RuleSpec{Name: "r", Effect: "require", Expr: `tool.annotations.readOnlyHint`},
			policy.Subject{Caller: dev, Server: "files", Tool: "rm", Definition: destructive}, false, policy.ResultFalse},
		{"server host", policy.RuleSpec{Name: "r", Effect: "deny", Expr: `server.host.endsWith(".internal:8080") && caller.role != "proxy_admin"`},
			policy.Subject{Caller: dev, Server: "files", Tool: "read", Definition: readOnly}, false, policy.ResultTrue},
		{"args at listing do not decide", policy.RuleSpec{Name: "r", Effect: "deny", Expr: `args.path.startsWith("/etc")`},
			policy.Subject{Caller: dev, Server: "files", Tool: "read", Definition: readOnly}, true, policy.ResultNeedsArgs},
		{"args at call decide", policy.RuleSpec{Name: "r", Effect: "deny", Expr: `has(args.path) && args.path.startsWith("/etc")`},
			policy.Subject{Caller: dev, Server: "files", Tool: "read", Definition: readOnly, Calling: true, Args: json.RawMessage(`{"path":"/etc/passwd"}`)}, false, policy.ResultTrue},
		{"args at call pass", policy.RuleSpec{Name: "r", Effect: "deny", Expr: `has(args.path) && args.path.startsWith("/etc")`},
			policy.Subject{Caller: dev, Server: "files", Tool: "read", Definition: readOnly, Calling: true, Args: json.RawMessage(`{"path":"/tmp/x"}`)}, true, policy.ResultFalse},
		{"a short circuit before args decides at listing", policy.RuleSpec{Name: "r", Effect: "deny", Expr: `tool.name == "rm" && args.force == true`},
			policy.Subject{Caller: dev, Server: "files", Tool: "read", Definition: readOnly}, true, policy.ResultFalse},
		{"an evaluation error fails closed", policy.RuleSpec{Name: "r", Effect: "deny", Expr: `args.missing == 1`},
			policy.Subject{Caller: dev, Server: "files", Tool: "read", Calling: true, Args: json.RawMessage(`{}`)}, false, policy.ResultError},
		{"a non-boolean value fails closed", policy.RuleSpec{Name: "r", Effect: "require", Expr: `tool.annotations.title`},
			policy.Subject{Caller: dev, Server: "files", Tool: "read", Definition: json.RawMessage(`{"annotations":{"title":"T"}}`)}, false, policy.ResultError},
		{"jwt is an empty map for a key caller", policy.RuleSpec{Name: "r", Effect: "require", Expr: `!("sub" in jwt)`},
			policy.Subject{Caller: dev, Server: "files", Tool: "read"}, true, policy.ResultTrue},
		{"a JWT caller's claims are jwt.*", policy.RuleSpec{Name: "r", Effect: "require", Expr: `jwt.groups.exists(g, g == "eng") && jwt.sub == "alice"`},
			policy.Subject{Caller: alice, Server: "files", Tool: "read"}, true, policy.ResultTrue},
		{"a claim that does not match refuses", policy.RuleSpec{Name: "r", Effect: "require", Expr: `jwt.groups.exists(g, g == "ops")`},
			policy.Subject{Caller: alice, Server: "files", Tool: "read"}, false, policy.ResultFalse},
		{"cost limit fails closed", policy.RuleSpec{Name: "r", Effect: "deny", Expr: `[1,2,3,4,5,6,7,8,9,10].all(a, [1,2,3,4,5,6,7,8,9,10].all(b, [1,2,3,4,5,6,7,8,9,10].all(c, [1,2,3,4,5,6,7,8,9,10].all(d, [1,2,3,4,5,6,7,8,9,10].all(e, a+b+c+d+e > 0)))))`},
			policy.Subject{Caller: dev, Server: "files", Tool: "read"}, false, policy.ResultError},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := policy.CompileRules([]policy.RuleSpec{tc.rule}, servers)
			if err != nil {
				t.Fatal(err)
			}
			if name, denied := r.Denying(tc.s); denied == tc.allowed || denied && name != "r" {
				t.Errorf("Denying = %q, %v, want denied %v", name, denied, !tc.allowed)
			}
			out := r.Explain(tc.s)
			if len(out) != 1 || out[0].Result != tc.result || out[0].Denies == tc.allowed {
				t.Errorf("Explain = %+v, want result %s, denies %v", out, tc.result, !tc.allowed)
			}
		})
	}
}

func TestCompileRulesRefuses(t *testing.T) {
	for _, tc := range []struct {
		spec policy.RuleSpec
		want string
	}{
		{policy.RuleSpec{Name: "a", Effect: "deny", Expr: `tool.name ==`}, "does not compile"},
		{policy.RuleSpec{Name: "a", Effect: "deny", Expr: `tool.name + "x"`}, "boolean"},
		{policy.RuleSpec{Name: "a", Effect: "allow", Expr: `true`}, "effect"},
		{policy.RuleSpec{Name: "", Effect: "deny", Expr: `true`}, "name"},
		{policy.RuleSpec{Name: "a", Effect: "deny", Expr: `nope.x`}, "does not compile"},
		{policy.RuleSpec{Name: "a", Effect: "deny", Expr: strings.Repeat("true && ", 600) + "true"}, "longer"},
	} {
		err := policy.CheckRule(tc.spec)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("CheckRule(%q) = %v, want %q", tc.spec.Expr, err, tc.want)
		}
	}
}

// TestExplainAgreesWithToolAllowed: the permission chain's verdict is ToolAllowed's.
func TestExplainAgreesWithToolAllowed(t *testing.T) {
	p := policy.New([]policy.Server{
		{Name: "a", ID: "ida", AccessGroups: []string{"g"}, DisallowedTools: []string{"x"}},
		{Name: "b", ID: "idb", AllowAllKeys: true, AllowedTools: []string{"y"}},
	}, policy.Options{})
	callers := []*identity.Caller{
		{IsMaster: true},
		{Servers: []string{"a"}},
		{Servers: []string{policy.NoServers}},
		{AccessGroups: []string{"g"}, BlockedTools: []string{"a-y"}},
		{Servers: []string{"a"}, Grants: []identity.Grant{{Level: identity.LevelTeam, Servers: []string{"b"}}}},
		{Servers: []string{"a"}, ToolPermissions: map[string][]string{"a": {"z"}}},
		{},
	}
	for ci, c := range callers {
		for _, server := range []string{"a", "b", "nope"} {
			for _, tool := range []string{"x", "y", "z"} {
				steps := p.Explain(c, server, tool)
				got := len(steps) > 0 && steps[len(steps)-1].Passed
				if want := p.ToolAllowed(c, server, tool); got != want {
					t.Errorf("caller %d %s/%s: Explain says %v, ToolAllowed %v (%+v)", ci, server, tool, got, want, steps)
				}
			}
		}
	}
}
