package config

import (
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/mcpgw/mcpgw/internal/policy"
)

// PolicyRule is one general_settings.mcp_policies entry: a CEL expression and what it does
// (policy.EffectDeny or policy.EffectRequire). The loader compiles each one to report errors at
// its line; the gateway compiles them again, once, when it builds a configuration.
type PolicyRule struct {
	Name, Expr, Effect string
	// Line is the entry's line in the file.
	Line int
}

// Spec returns the rule as the policy package takes it.
func (r PolicyRule) Spec() policy.RuleSpec {
	return policy.RuleSpec{Name: r.Name, Expr: r.Expr, Effect: r.Effect}
}

// policies reads general_settings.mcp_policies, a list of {name, expr, effect}; effect defaults
// to deny. Each expression is compiled here so an error names its line; names must be unique.
func (l *loader) policies(n *yaml.Node, field string) []PolicyRule {
	if isNull(n) {
		return nil
	}
	d := deref(n)
	if d.Kind != yaml.SequenceNode {
		l.errorf(n, "%s must be a list, not a %s", field, kindName(d))
		return nil
	}
	if len(d.Content) > policy.MaxRules {
		l.errorf(n, "%s has %d rules, at most %d", field, len(d.Content), policy.MaxRules)
		return nil
	}
	var out []PolicyRule
	seen := map[string]bool{}
	for i, item := range d.Content {
		at := field + "[" + strconv.Itoa(i) + "]"
		r := PolicyRule{Line: lineOf(item), Effect: policy.EffectDeny}
		for _, e := range l.entries(item, at, "key") {
			switch e.key {
			case "name":
				r.Name, _ = l.str(e.v, at+".name")
			case "expr":
				r.Expr, _ = l.str(e.v, at+".expr")
			case "effect":
				if s, ok := l.str(e.v, at+".effect"); ok {
					r.Effect = strings.ToLower(strings.TrimSpace(s))
				}
			default:
				l.warnf(e.k, "key %q in %s is not used by mcpgw (ignored)%s", e.key, at, didYouMean(e.key, []string{"name", "expr", "effect"}))
			}
		}
		if err := policy.CheckRule(r.Spec()); err != nil {
			l.errorf(item, "%s: %v", at, err)
			continue
		}
		if seen[r.Name] {
			l.errorf(item, "%s: rule name %q is used twice", at, r.Name)
			continue
		}
		seen[r.Name] = true
		out = append(out, r)
	}
	return out
}
