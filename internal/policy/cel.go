package policy

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"

	"github.com/mcpgw/mcpgw/internal/identity"
)

// Rule effects (general_settings.mcp_policies[].effect).
const (
	// EffectDeny refuses the tool when the expression is true.
	EffectDeny = "deny"
	// EffectRequire refuses the tool unless the expression is true.
	EffectRequire = "require"
)

// Bounds of rules; see the package doc.
const (
	// MaxRules is the most mcp_policies entries a config may hold.
	MaxRules = 256
	// MaxExprBytes is the longest expression accepted.
	MaxExprBytes = 4096
	// RuleCostLimit bounds one evaluation of one rule (CEL's cost units); a rule that exceeds it
	// fails closed.
	RuleCostLimit = 100_000
)

// RuleSpec is one general_settings.mcp_policies entry as written.
type RuleSpec struct {
	Name   string
	Expr   string
	Effect string // EffectDeny or EffectRequire
}

// Rules are compiled mcp_policies plus what they know of the configured servers; immutable and
// safe for concurrent use. A nil *Rules has no rules.
type Rules struct {
	rules   []compiled
	servers map[string]map[string]any // server name → the server variable
}

type compiled struct {
	spec RuleSpec
	prg  cel.Program
}

// ServerFacts is what rules see of one configured server (the server variable).
type ServerFacts struct {
	Name, ID, Alias string
	// Host is the URL's host ("" for stdio); Transport is http, sse, stdio or openapi.
	Host, Transport string
	// Era is the configured protocol_version ("auto" when the client finds it itself).
	Era string
}

// Subject is one tool decision the rules judge.
type Subject struct {
	Caller *identity.Caller
	Server string // the server's name
	Tool   string // the bare upstream tool name
	// Definition is the tool as its server lists it (nil when unknown): its annotations,
	// title and description come from here.
	Definition json.RawMessage
	// Calling is true for a tools/call, whose Args are known; at listing args is unknown and a
	// rule that needs it does not decide.
	Calling bool
	Args    json.RawMessage
}

// newEnv is the one CEL environment every rule is compiled in.
func newEnv() (*cel.Env, error) {
	dyn := cel.MapType(cel.StringType, cel.DynType)
	return cel.NewEnv(
		cel.Variable("caller", dyn),
		cel.Variable("jwt", dyn),
		cel.Variable("server", dyn),
		cel.Variable("tool", dyn),
		cel.Variable("args", dyn),
		cel.ParserExpressionSizeLimit(MaxExprBytes),
		cel.ParserRecursionLimit(64),
	)
}

// CompileRules compiles specs once; the error names the first rule that does not compile (by
// index and name). servers are what the server variable holds per server name.
func CompileRules(specs []RuleSpec, servers []ServerFacts) (*Rules, error) {
	if len(specs) > MaxRules {
		return nil, fmt.Errorf("mcp_policies: %d rules, at most %d", len(specs), MaxRules)
	}
	env, err := newEnv()
	if err != nil {
		return nil, fmt.Errorf("mcp_policies: building the CEL environment: %w", err)
	}
	r := &Rules{servers: make(map[string]map[string]any, len(servers))}
	for i, s := range specs {
		prg, err := compileOne(env, s)
		if err != nil {
			return nil, fmt.Errorf("mcp_policies[%d] %q: %w", i, s.Name, err)
		}
		r.rules = append(r.rules, compiled{spec: s, prg: prg})
	}
	for _, s := range servers {
		r.servers[s.Name] = map[string]any{
			"name": s.Name, "id": s.ID, "alias": s.Alias, "host": s.Host, "transport": s.Transport, "era": s.Era,
		}
	}
	return r, nil
}

// CheckRule reports why spec would not compile (nil when it does), for config validation.
func CheckRule(spec RuleSpec) error {
	env, err := newEnv()
	if err != nil {
		return err
	}
	_, err = compileOne(env, spec)
	return err
}

func compileOne(env *cel.Env, s RuleSpec) (cel.Program, error) {
	switch {
	case strings.TrimSpace(s.Name) == "":
		return nil, errors.New("name is required")
	case s.Effect != EffectDeny && s.Effect != EffectRequire:
		return nil, fmt.Errorf("effect must be %q or %q", EffectDeny, EffectRequire)
	case strings.TrimSpace(s.Expr) == "":
		return nil, errors.New("expr is required")
	case len(s.Expr) > MaxExprBytes:
		return nil, fmt.Errorf("expr is longer than %d bytes", MaxExprBytes)
	}
	ast, iss := env.Compile(s.Expr)
	if iss != nil && iss.Err() != nil {
		return nil, fmt.Errorf("expr does not compile: %s", oneLine(iss.Err().Error()))
	}
	if t := ast.OutputType(); !t.IsExactType(cel.BoolType) && !t.IsExactType(cel.DynType) {
		return nil, fmt.Errorf("expr must be a boolean expression, not %s", ast.OutputType())
	}
	prg, err := env.Program(ast,
		cel.EvalOptions(cel.OptPartialEval, cel.OptTrackCost),
		cel.CostLimit(RuleCostLimit),
		cel.InterruptCheckFrequency(100))
	if err != nil {
		return nil, fmt.Errorf("expr cannot be planned: %s", oneLine(err.Error()))
	}
	return prg, nil
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// Len is the number of rules.
func (r *Rules) Len() int {
	if r == nil {
		return 0
	}
	return len(r.rules)
}

// Denying returns the name of the first rule (in config order) that refuses s; denied is false
// when none does (always, when there are no rules).
func (r *Rules) Denying(s Subject) (rule string, denied bool) {
	if r.Len() == 0 {
		return "", false
	}
	act := r.activation(s)
	for i := range r.rules {
		if o := r.rules[i].eval(act); o.Denies {
			return o.Name, true
		}
	}
	return "", false
}

// Explain evaluates every rule on s and returns each one's outcome, in config order.
func (r *Rules) Explain(s Subject) []RuleOutcome {
	if r.Len() == 0 {
		return nil
	}
	act := r.activation(s)
	out := make([]RuleOutcome, len(r.rules))
	for i := range r.rules {
		out[i] = r.rules[i].eval(act)
	}
	return out
}

// Rule outcomes (RuleOutcome.Result).
const (
	ResultTrue      = "true"
	ResultFalse     = "false"
	ResultNeedsArgs = "needs_args" // at listing: the result depends on the call's arguments
	ResultError     = "error"      // evaluation failed (or ran past its cost limit): fails closed
)

// RuleOutcome is one rule's verdict on one subject.
type RuleOutcome struct {
	Name   string `json:"name"`
	Effect string `json:"effect"`
	Result string `json:"result"`
	// Denies says the rule refused the tool.
	Denies bool `json:"denies"`
	// Error is the evaluation error (never argument values; CEL's messages name types and
	// keys).
	Error string `json:"error,omitempty"`
}

func (c *compiled) eval(act any) RuleOutcome {
	o := RuleOutcome{Name: c.spec.Name, Effect: c.spec.Effect}
	val, _, err := c.prg.Eval(act)
	switch {
	case err != nil:
		o.Result, o.Denies, o.Error = ResultError, true, clipErr(err.Error())
	case types.IsUnknown(val):
		o.Result = ResultNeedsArgs
	default:
		b, ok := val.Value().(bool)
		if !ok {
			o.Result, o.Denies, o.Error = ResultError, true, "not a boolean"
			break
		}
		o.Result = ResultFalse
		if b {
			o.Result = ResultTrue
		}
		o.Denies = b == (c.spec.Effect == EffectDeny)
	}
	return o
}

func clipErr(s string) string {
	s = oneLine(s)
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}

// activation binds the variables for s; at listing args is an unknown, so partial evaluation
// reports a rule whose result depends on it.
func (r *Rules) activation(s Subject) any {
	vars := map[string]any{
		"caller": callerVars(s.Caller),
		"jwt":    jwtVars(s.Caller),
		"server": r.serverVars(s.Server),
		"tool":   toolVars(s.Tool, s.Definition),
	}
	if !s.Calling {
		act, err := cel.PartialVars(vars, cel.AttributePattern("args"))
		if err == nil {
			return act
		}
		return vars // never: the map is a valid activation
	}
	vars["args"] = argVars(s.Args)
	return vars
}

func (r *Rules) serverVars(name string) map[string]any {
	if v, ok := r.servers[name]; ok {
		return v
	}
	return map[string]any{"name": name, "id": "", "alias": "", "host": "", "transport": "", "era": ""}
}

// callerVars is the caller variable; every key is always present.
func callerVars(c *identity.Caller) map[string]any {
	if c == nil {
		c = &identity.Caller{}
	}
	return map[string]any{
		"user_id": c.UserID, "team_id": c.TeamID, "org_id": c.OrgID, "end_user_id": c.EndUserID,
		"key_alias": c.KeyAlias, "team_alias": c.TeamAlias, "role": c.Role, "key_hash": c.KeyHash,
		"is_master": c.IsMaster,
	}
}

// Annotation defaults of the MCP specification, used when a tool does not state a hint.
var hintDefaults = [...]struct {
	key string
	def bool
}{{"readOnlyHint", false}, {"destructiveHint", true}, {"idempotentHint", false}, {"openWorldHint", true}}

// toolVars is the tool variable: name, title, description and annotations (each hint present,
// with the specification's default when the tool does not state it).
func toolVars(name string, def json.RawMessage) map[string]any {
	var d struct {
		Title       string         `json:"title"`
		Description string         `json:"description"`
		Annotations map[string]any `json:"annotations"`
	}
	if len(def) > 0 {
		_ = json.Unmarshal(def, &d) // a malformed definition leaves the defaults
	}
	ann := make(map[string]any, len(d.Annotations)+len(hintDefaults))
	for k, v := range d.Annotations {
		ann[k] = v
	}
	for _, h := range hintDefaults {
		if _, ok := ann[h.key].(bool); !ok {
			ann[h.key] = h.def
		}
	}
	if d.Title == "" {
		d.Title, _ = ann["title"].(string)
	}
	return map[string]any{"name": name, "title": d.Title, "description": d.Description, "annotations": ann}
}

// argVars is the args variable: the call's arguments object (empty when absent or not an
// object).
func argVars(raw json.RawMessage) map[string]any {
	m := map[string]any{}
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &m); err != nil || m == nil {
			return map[string]any{}
		}
	}
	return m
}

// jwtVars are a JWT caller's claims; an empty map for every other caller, so jwt.x reads as
// absent (has(jwt.x) is false) rather than failing.
func jwtVars(c *identity.Caller) map[string]any {
	if c == nil || c.Claims == nil {
		return map[string]any{}
	}
	return c.Claims
}
