package guardrail

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"

	"github.com/mcpgw/mcpgw/internal/config"
	"github.com/mcpgw/mcpgw/internal/fault"
	"github.com/mcpgw/mcpgw/internal/gateway"
	"github.com/mcpgw/mcpgw/internal/identity"
	"github.com/mcpgw/mcpgw/internal/panics"
	"github.com/mcpgw/mcpgw/internal/pinning"
)

// Config builds a Guard.
type Config struct {
	// Guardrails are the configured guardrails (config.Config.Guardrails).
	Guardrails []config.Guardrail
	// Servers maps a server's name to the guardrails it names beyond the default_on ones.
	Servers map[string][]string
	// Client sends the requests; nil: a client of its own.
	Client *http.Client
	// MaxConcurrent bounds the requests in flight at once; zero: DefaultMaxConcurrent.
	MaxConcurrent int
	Logger        *slog.Logger
	// OnCheck is told the outcome of every guardrail request (a metric); nil: nothing.
	OnCheck func(guardrail, mode, outcome string)
}

// Guard runs the guardrails around tool calls (gateway.CallGuard) and on tool descriptions
// at listing (Describe).
type Guard struct {
	cfg    Config
	log    *slog.Logger
	client *http.Client
	slots  chan struct{}
	rails  []*rail
}

// New returns a Guard; nil when no guardrail is configured.
func New(cfg Config) *Guard {
	if len(cfg.Guardrails) == 0 {
		return nil
	}
	g := &Guard{cfg: cfg, log: cmp.Or(cfg.Logger, discard()), client: cfg.Client,
		slots: make(chan struct{}, cmp.Or(max(cfg.MaxConcurrent, 0), DefaultMaxConcurrent))}
	if g.client == nil {
		g.client = &http.Client{}
	}
	for _, gc := range cfg.Guardrails {
		u := gc.APIBase
		if !strings.HasSuffix(u, Path) {
			u = strings.TrimRight(u, "/") + Path
		}
		g.rails = append(g.rails, &rail{cfg: gc, url: u})
	}
	return g
}

// applies returns the guardrails of mode that apply to server's calls by caller: the
// default_on ones, those the server names and those the caller's key or team names
// (identity.Caller.Guardrails; nil caller: none), in configuration order. A name the caller
// carries that no guardrail has is ignored.
func (g *Guard) applies(server string, caller *identity.Caller, mode string) []*rail {
	var out []*rail
	named := g.cfg.Servers[server]
	var own []string
	if caller != nil {
		own = caller.Guardrails
	}
	for _, r := range g.rails {
		if slices.Contains(r.cfg.Modes, mode) && (r.cfg.DefaultOn || slices.Contains(named, r.cfg.Name) || slices.Contains(own, r.cfg.Name)) {
			out = append(out, r)
		}
	}
	return out
}

// Listing reports whether any pre-call guardrail applies to some server's tools, so that
// descriptions are worth judging at listing.
func (g *Guard) Listing() bool {
	for _, r := range g.rails {
		if slices.Contains(r.cfg.Modes, config.GuardPre) {
			return true
		}
	}
	return false
}

// check asks the guardrails rs in turn about texts, each seeing the previous one's rewrite.
// It returns the texts as rewritten (nil when none was) or the refusal.
func (g *Guard) check(ctx context.Context, rs []*rail, mode string, body request, server, tool string) ([]string, *fault.Fault) {
	var rewritten []string
	for _, r := range rs {
		v, err := g.ask(ctx, r, body)
		if err != nil {
			g.logFailure(r, mode, server, tool, err)
			if r.cfg.FailOpen {
				g.count(r, mode, OutcomeFailOpen)
				continue
			}
			g.count(r, mode, OutcomeFailClosed)
			return nil, unavailable(r)
		}
		switch {
		case v.blocked:
			g.count(r, mode, OutcomeBlocked)
			return nil, blocked(r, v.reason)
		case v.texts != nil:
			g.count(r, mode, OutcomeIntervened)
			body.Texts, rewritten = v.texts, v.texts
		default:
			g.count(r, mode, OutcomeNone)
		}
	}
	return rewritten, nil
}

func (g *Guard) count(r *rail, mode, outcome string) {
	if g.cfg.OnCheck != nil {
		g.cfg.OnCheck(r.cfg.Name, mode, outcome)
	}
}

// blocked is the refusal of a call or result a guardrail blocked.
func blocked(r *rail, reason string) *fault.Fault {
	data, _ := json.Marshal(map[string]string{"guardrail": r.cfg.Name})
	return &fault.Fault{Class: fault.InvalidParams, Data: data,
		Message: "Content blocked by guardrail '" + r.cfg.Name + "': " + reason}
}

// unavailable is the refusal when a fail-closed guardrail could not be asked.
func unavailable(r *rail) *fault.Fault {
	data, _ := json.Marshal(map[string]string{"guardrail": r.cfg.Name})
	return &fault.Fault{Class: fault.Unavailable, Data: data,
		Message: "Guardrail '" + r.cfg.Name + "' could not be checked; the request is refused"}
}

// Pre runs the pre-call guardrails on a call's arguments (their string values are the texts).
func (g *Guard) Pre(ctx context.Context, call gateway.GuardedCall, args json.RawMessage) (json.RawMessage, *fault.Fault) {
	rs := g.applies(call.Server, call.Caller, config.GuardPre)
	if len(rs) == 0 {
		return nil, nil
	}
	l, err := stringLeaves(args)
	if err != nil {
		return nil, fault.New(fault.InvalidParams, "params.arguments is not JSON")
	}
	texts, f := g.check(ctx, rs, config.GuardPre, g.callBody(call, l.texts, args, inputTypeRequest), call.Server, call.Tool)
	if f != nil || texts == nil {
		return nil, f
	}
	out, err := l.rewrite(texts)
	if err != nil {
		return nil, fault.New(fault.Internal, "the guardrails' rewrite could not be applied")
	}
	return out, nil
}

// During starts the during-call guardrails on a call's arguments; their rewrites are not
// applied (the call is already on its way), only their blocks.
func (g *Guard) During(ctx context.Context, call gateway.GuardedCall, args json.RawMessage) func() *fault.Fault {
	rs := g.applies(call.Server, call.Caller, config.GuardDuring)
	if len(rs) == 0 {
		return nil
	}
	l, err := stringLeaves(args)
	if err != nil {
		return func() *fault.Fault { return fault.New(fault.InvalidParams, "params.arguments is not JSON") }
	}
	body := g.callBody(call, l.texts, args, inputTypeRequest)
	results := make([]*fault.Fault, len(rs))
	var wg sync.WaitGroup
	for i, r := range rs {
		wg.Add(1)
		panics.Go(g.log, "a during-call guardrail", func() {
			defer wg.Done()
			results[i] = unavailable(r) // what a panic leaves
			_, results[i] = g.check(ctx, []*rail{r}, config.GuardDuring, body, call.Server, call.Tool)
		}, nil)
	}
	return func() *fault.Fault {
		wg.Wait()
		for _, f := range results {
			if f != nil {
				return f
			}
		}
		return nil
	}
}

// Post runs the post-call guardrails on a result's texts (text content, then the strings of
// structuredContent).
func (g *Guard) Post(ctx context.Context, call gateway.GuardedCall, result json.RawMessage) (json.RawMessage, *fault.Fault) {
	rs := g.applies(call.Server, call.Caller, config.GuardPost)
	if len(rs) == 0 {
		return nil, nil
	}
	r, err := parseResult(result)
	if err != nil {
		return nil, nil // not a tool result the guardrails can read; passed on as it is
	}
	body := g.callBody(call, r.texts, nil, inputTypeResponse)
	texts, f := g.check(ctx, rs, config.GuardPost, body, call.Server, call.Tool)
	if f != nil || texts == nil {
		return nil, f
	}
	out, err := r.set(texts)
	if err != nil {
		return nil, fault.New(fault.Internal, "the guardrails' rewrite could not be applied")
	}
	return out, nil
}

func (g *Guard) callBody(call gateway.GuardedCall, texts []string, args json.RawMessage, inputType string) request {
	if texts == nil {
		texts = []string{}
	}
	fn := toolFunction{Name: call.Tool}
	if len(args) > 0 {
		fn.Arguments = string(args)
	}
	return request{Texts: texts, Tools: []toolParam{{Type: "function", Function: fn}},
		RequestData: requestData(call.Caller, call.Server, call.Tool), InputType: inputType, CallID: callID()}
}

// Describe asks the pre-call guardrails that apply to server about a tool's description
// (input_type request, texts the description): a block is a verdict that quarantines the
// tool; a fail-closed guardrail that cannot be asked is an error (the tool is hidden from
// that listing only); a fail-open one passes.
func (g *Guard) Describe(ctx context.Context, server, tool, description string) (pinning.Verdict, error) {
	rs := g.applies(server, nil, config.GuardPre)
	if len(rs) == 0 {
		return pinning.Verdict{}, nil
	}
	body := request{Texts: []string{description}, InputType: inputTypeRequest, CallID: callID(),
		Tools:       []toolParam{{Type: "function", Function: toolFunction{Name: tool, Description: description}}},
		RequestData: map[string]string{"mcp_server_name": server, "mcp_tool_name": tool}}
	for _, r := range rs {
		v, err := g.ask(ctx, r, body)
		if err != nil {
			g.logFailure(r, "listing", server, tool, err)
			if r.cfg.FailOpen {
				g.count(r, config.GuardPre, OutcomeFailOpen)
				continue
			}
			g.count(r, config.GuardPre, OutcomeFailClosed)
			return pinning.Verdict{}, errors.New("guardrail " + r.cfg.Name + " could not be asked")
		}
		if v.blocked {
			g.count(r, config.GuardPre, OutcomeBlocked)
			return pinning.Verdict{Blocked: true, Reason: v.reason}, nil
		}
		g.count(r, config.GuardPre, OutcomeNone)
	}
	return pinning.Verdict{}, nil
}
