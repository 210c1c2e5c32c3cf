package config

import (
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// The phases of a tool call a guardrail runs in (Guardrail.Modes).
const (
	GuardPre    = "pre_call"    // on the arguments, before the call (pre_mcp_call, pre_call)
	GuardDuring = "during_call" // on the arguments, alongside the call (during_mcp_call, during_call)
	GuardPost   = "post_call"   // on the result (post_mcp_call, post_call)
)

// GenericGuardrailAPI is the one guardrail kind mcpgw implements (LiteLLM's generic_guardrail_api).
const GenericGuardrailAPI = "generic_guardrail_api"

// DefaultGuardrailTimeout bounds one guardrail request when timeout is not set.
const DefaultGuardrailTimeout = 5 * time.Second

// Guardrail is one entry of the top-level guardrails list: LiteLLM's {guardrail_name,
// litellm_params} with guardrail generic_guardrail_api.
type Guardrail struct {
	// Name is guardrail_name; unique.
	Name string
	// Modes are the phases it runs in (GuardPre, GuardDuring, GuardPost), from mode (one or a list).
	Modes []string
	// APIBase is api_base; requests go to APIBase + "/beta/litellm_basic_guardrail_api".
	APIBase string
	// APIKey is api_key, sent as the x-api-key header; empty when unset.
	APIKey Secret
	// Headers are sent with every request (headers).
	Headers map[string]string
	// DefaultOn applies it to every call; otherwise to the servers that name it (guardrails).
	DefaultOn bool
	// FailOpen lets a call through when the guardrail cannot be asked or answers nonsense
	// (unreachable_fallback: fail_open); the default, fail_closed, refuses it.
	FailOpen bool
	// Timeout bounds one request (timeout, seconds; default DefaultGuardrailTimeout).
	Timeout time.Duration
	// Params are additional_provider_specific_params, sent as they are.
	Params map[string]string
	// Line is the entry's line in the file.
	Line int
}

// guardrailKeys and guardrailParamKeys are the keys read in a guardrails entry.
var (
	guardrailKeys      = []string{"guardrail_name", "litellm_params"}
	guardrailParamKeys = []string{"guardrail", "mode", "api_base", "api_key", "headers", "default_on",
		"unreachable_fallback", "fail_open", "timeout", "additional_provider_specific_params"}
)

// guardrails reads the top-level guardrails list.
func (l *loader) guardrails(n *yaml.Node) []Guardrail {
	if isNull(n) {
		return nil
	}
	d := deref(n)
	if d.Kind != yaml.SequenceNode {
		l.errorf(n, "guardrails must be a list, not a %s", kindName(d))
		return nil
	}
	var out []Guardrail
	for i, item := range d.Content {
		field := "guardrails[" + strconv.Itoa(i) + "]"
		g := Guardrail{Line: lineOf(item), Timeout: DefaultGuardrailTimeout}
		kind := ""
		for _, e := range l.entries(item, field, "key") {
			switch e.key {
			case "guardrail_name":
				g.Name, _ = l.str(e.v, field+".guardrail_name")
			case "litellm_params":
				kind = l.guardrailParams(e.v, field+".litellm_params", &g)
			default:
				l.warnf(e.k, "key %q in %s is not used by mcpgw (ignored)%s", e.key, field, didYouMean(e.key, guardrailKeys))
			}
		}
		switch {
		case g.Name == "":
			l.errorf(item, "%s has no guardrail_name", field)
		case slices.ContainsFunc(out, func(o Guardrail) bool { return o.Name == g.Name }):
			l.errorf(item, "%s: guardrail_name %q is used twice", field, g.Name)
		case kind != GenericGuardrailAPI:
			l.warnf(item, "%s: guardrail %q is not implemented by mcpgw (only %s; ignored)", field, kind, GenericGuardrailAPI)
		case g.APIBase == "":
			l.errorf(item, "%s: litellm_params.api_base is required", field)
		default:
			if len(g.Modes) == 0 {
				l.warnf(item, "%s: no mode applies to MCP tool calls; the guardrail never runs", field)
			}
			out = append(out, g)
		}
	}
	return out
}

// guardrailParams reads one entry's litellm_params into g and returns its guardrail kind.
func (l *loader) guardrailParams(n *yaml.Node, field string, g *Guardrail) string {
	kind := ""
	for _, e := range l.entries(n, field, "key") {
		f := field + "." + e.key
		switch e.key {
		case "guardrail":
			kind, _ = l.str(e.v, f)
		case "mode":
			g.Modes = l.guardrailModes(e.v, f)
		case "api_base":
			if s, ok := l.str(e.v, f); ok {
				g.APIBase = strings.TrimRight(strings.TrimSpace(s), "/")
				if !isHTTPURL(g.APIBase) {
					l.errorf(e.v, "%s must be an absolute http(s) URL", f)
				}
			}
		case "api_key":
			s, _ := l.str(e.v, f)
			g.APIKey = Secret(s)
		case "headers":
			g.Headers, _ = l.strMap(e.v, f)
		case "additional_provider_specific_params":
			g.Params, _ = l.strMap(e.v, f)
		case "default_on":
			g.DefaultOn, _ = l.boolean(e.v, f)
		case "fail_open":
			g.FailOpen, _ = l.boolean(e.v, f)
		case "unreachable_fallback":
			if s, ok := l.str(e.v, f); ok {
				switch strings.TrimSpace(s) {
				case "fail_open":
					g.FailOpen = true
				case "fail_closed":
					g.FailOpen = false
				default:
					l.errorf(e.v, "%s must be fail_open or fail_closed", f)
				}
			}
		case "timeout":
			if t, ok := l.seconds(e.v, f); ok && t > 0 {
				g.Timeout = t
			}
		default:
			l.warnf(e.k, "key %q in %s is not used by mcpgw (ignored)%s", e.key, field, didYouMean(e.key, guardrailParamKeys))
		}
	}
	return kind
}

// guardrailModes reads mode (one or a list) as the phases of a tool call it names.
func (l *loader) guardrailModes(n *yaml.Node, field string) []string {
	var modes []string
	if d := deref(n); d.Kind == yaml.SequenceNode {
		modes = l.strList(n, field)
	} else if s, ok := l.str(n, field); ok {
		modes = []string{s}
	}
	var out []string
	for _, m := range modes {
		phase := ""
		switch strings.TrimSpace(m) {
		case "pre_mcp_call", "pre_call":
			phase = GuardPre
		case "during_mcp_call", "during_call":
			phase = GuardDuring
		case "post_mcp_call", "post_call":
			phase = GuardPost
		default:
			l.warnf(n, "%s: mode %q does not apply to MCP tool calls (ignored)", field, m)
			continue
		}
		if !slices.Contains(out, phase) {
			out = append(out, phase)
		}
	}
	return out
}

// checkGuardrailRefs reports servers naming a guardrail that is not configured: in the file,
// or for a server parsed alone (ParseServer), in the running file's.
func (l *loader) checkGuardrailRefs(cfg *Config) {
	known := cfg.Guardrails
	if l.opts.standalone {
		known = l.opts.fileGuardrails
	}
	for _, s := range cfg.Servers {
		for _, name := range s.Guardrails {
			if !slices.ContainsFunc(known, func(g Guardrail) bool { return g.Name == name }) {
				l.errorAt(s.Line, "mcp_servers.%s.guardrails names %q, which is not in guardrails", s.Name, name)
			}
		}
	}
}

// pinKey reads a server key about tool pinning or guardrails, and reports whether it did.
func (l *loader) pinKey(s *Server, key string, v *yaml.Node, field string) bool {
	switch key {
	case "pin_tool_definitions":
		s.PinToolDefinitions, _ = l.boolean(v, field)
	case "pinned_tools":
		s.PinnedTools = l.strList(v, field)
	case "guardrails":
		s.Guardrails = l.strList(v, field)
	default:
		return false
	}
	return true
}
