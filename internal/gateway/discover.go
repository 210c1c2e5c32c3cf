package gateway

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/mcpgw/mcpgw/internal/catalog"
	"github.com/mcpgw/mcpgw/internal/fault"
	"github.com/mcpgw/mcpgw/internal/mcp"
	"github.com/mcpgw/mcpgw/internal/upstream"
)

// errNoCallerToken is a server whose credential is the caller's own OAuth
// token (Server.CallerToken) when the caller holds none for it.
var errNoCallerToken = errors.New("the server needs the caller's own OAuth token and the caller holds none")

// Outcome statuses of discovery that no upstream fault names.
const (
	outcomeLimited = "limit_exceeded" // the server's rpm refused the discovery
	outcomeNoToken = string(upstream.FaultAuthRequired)
	statusLimited  = 429
	statusNoToken  = 401
)

// discover aggregates server/discover over the caller's upstreams from what
// they say now (see live): nothing of an earlier answer is reused, so a
// server that cannot be asked degrades the promises instead of keeping them.
func (g *Gateway) discover(ctx context.Context, op *Operation) Outcome {
	servers := g.visible(op)
	infos, outcomes := g.live(ctx, op, servers)
	caps := aggregate(infos)
	res := map[string]any{
		"resultType":        mcp.ResultTypeComplete,
		"supportedVersions": g.cfg.Advertised,
		"capabilities":      caps,
		"ttlMs":             0,
		"cacheScope":        mcp.CacheScopePrivate,
		"_meta":             map[string]any{mcp.MetaServerInfo: g.cfg.Info, mcp.MetaServerOutcomes: outcomes},
	}
	if text := g.instructions(op, servers, infos); text != "" {
		res["instructions"] = text
	}
	b, err := json.Marshal(res)
	if err != nil {
		return fail(fault.Internal, "cannot encode discovery")
	}
	return Outcome{Result: b}
}

// live learns what each server offers the caller now, in three steps, each
// over every server at once: first each server is admitted (a server whose
// credential is the caller's own token the caller does not hold, or whose
// rpm is spent, is not contacted at all); then each reads its catalogs
// (tools, prompts, resources, resource templates, in that order, from the
// upstream: the catalogs the answer describes); then, once every read has
// ended, every server is probed at once (upstream.Client.Discover). Reads
// and probe are each bounded by the listing timeout, and the catalog's
// breakers and patience apply to both. A server that fails any step is nil,
// and its outcome says why.
//
// A probe's failure does not count against the server's breaker: the
// server has just answered its reads, so it is up, and only its discovery
// is broken or slow.
func (g *Gateway) live(ctx context.Context, op *Operation, servers []string) ([]*upstream.Info, map[string]catalog.Outcome) {
	multi := len(servers) > 1
	errs := make([]error, len(servers))
	for i, name := range servers {
		errs[i] = g.admitDiscovery(ctx, op, g.servers[name], multi)
	}
	q := g.query(op, servers)
	eachAdmitted(ctx, g, servers, errs, func(ctx context.Context, name string) (struct{}, error) {
		ctx, cancel := context.WithTimeout(ctx, g.cfg.ListTimeout)
		defer cancel()
		return struct{}{}, g.cfg.Catalog.Read(ctx, q, name)
	})
	infos := eachAdmitted(ctx, g, servers, errs, func(ctx context.Context, name string) (*upstream.Info, error) {
		s := g.servers[name]
		ctx, cancel := context.WithTimeout(ctx, g.cfg.ListTimeout)
		defer cancel()
		info, err := s.Client.Discover(ctx, g.sharedOptions(s, op, multi))
		if err != nil {
			return nil, err
		}
		return &info, nil
	})
	outcomes := make(map[string]catalog.Outcome, len(servers))
	for i, name := range servers {
		outcomes[name] = discoveryOutcome(errs[i])
		if errs[i] != nil && outcomes[name].Status != catalog.OutcomeSkipped {
			g.cfg.Logger.Warn("upstream discovery failed", "server", name, "fault", outcomes[name].Status)
		}
	}
	return infos, outcomes
}

// admitDiscovery says why s may not be contacted for this discovery (nil
// when it may): it needs a token of the caller's that the caller lacks, or
// its request limit refuses one more discovery.
func (g *Gateway) admitDiscovery(ctx context.Context, op *Operation, s *Server, multi bool) error {
	if s.CallerToken && g.options(s, op, multi).Token == "" {
		return errNoCallerToken
	}
	if g.cfg.Limit != nil {
		return g.cfg.Limit(ctx, s.Name)
	}
	return nil
}

// eachAdmitted runs fn for every server whose errs entry is nil, all at
// once with the catalog's patience (catalog.Patiently), and records each
// failure in errs. The values of the others are zero.
func eachAdmitted[T any](ctx context.Context, g *Gateway, servers []string, errs []error, fn func(ctx context.Context, name string) (T, error)) []T {
	out := make([]T, len(servers))
	var idx []int
	var names []string
	for i, name := range servers {
		if errs[i] == nil {
			idx, names = append(idx, i), append(names, name)
		}
	}
	vals, fails := catalog.Patiently(ctx, g.cfg.Catalog, names, func(ctx context.Context, j int) (T, error) {
		return fn(ctx, names[j])
	})
	for j, i := range idx {
		out[i], errs[i] = vals[j], fails[j]
	}
	return out
}

// discoveryOutcome is one server's outcome in a discovery's _meta.
func discoveryOutcome(err error) catalog.Outcome {
	var limited *fault.Fault
	switch {
	case err == nil:
		return catalog.Outcome{Status: "ok"}
	case errors.Is(err, errNoCallerToken):
		return catalog.Outcome{Status: outcomeNoToken, HTTPStatus: statusNoToken}
	case errors.As(err, &limited):
		return catalog.Outcome{Status: outcomeLimited, HTTPStatus: statusLimited}
	}
	return catalog.OutcomeOf(err)
}

// capabilities aggregates what the upstreams offered. A feature is offered
// when any upstream offers it; a change notification is promised only when
// every upstream offering the feature sends it and no upstream failed its
// probe (a change there could not be seen); resources/subscribe only with a
// single upstream in scope.
type capabilities struct {
	tools, toolsChanged, prompts, promptsChanged, resources, resourcesChanged, subscribe, completions, logging bool
}

func aggregate(infos []*upstream.Info) capabilities {
	c := capabilities{toolsChanged: true, promptsChanged: true, resourcesChanged: true, subscribe: len(infos) == 1}
	failed := false
	for _, info := range infos {
		if info == nil {
			failed = true
			continue
		}
		sc := info.Capabilities
		if sc.HasTools() {
			c.tools = true
			c.toolsChanged = c.toolsChanged && sc.ToolsListChanged()
		}
		if sc.HasPrompts() {
			c.prompts = true
			c.promptsChanged = c.promptsChanged && sc.PromptsListChanged()
		}
		if sc.HasResources() {
			c.resources = true
			c.resourcesChanged = c.resourcesChanged && sc.ResourcesListChanged()
			c.subscribe = c.subscribe && sc.ResourcesSubscribe()
		}
		c.completions = c.completions || sc.HasCompletions()
		c.logging = c.logging || sc.HasLogging()
	}
	if failed {
		// An upstream we could not probe may well have tools; say so, but
		// promise no notifications for it.
		c.tools = c.tools || len(infos) > 0
		c.toolsChanged, c.promptsChanged, c.resourcesChanged, c.subscribe = false, false, false, false
	}
	c.subscribe = c.subscribe && c.resources
	return c
}

func (c capabilities) MarshalJSON() ([]byte, error) {
	m := map[string]any{}
	if c.tools {
		m["tools"] = map[string]bool{"listChanged": c.toolsChanged}
	}
	if c.prompts {
		m["prompts"] = map[string]bool{"listChanged": c.promptsChanged}
	}
	if c.resources {
		m["resources"] = map[string]bool{"listChanged": c.resourcesChanged, "subscribe": c.subscribe}
	}
	if c.completions {
		m["completions"] = struct{}{}
	}
	if c.logging {
		m["logging"] = struct{}{}
	}
	return json.Marshal(m)
}
