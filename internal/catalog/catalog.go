package catalog

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"time"

	"github.com/mcpgw/mcpgw/internal/fault"
	"github.com/mcpgw/mcpgw/internal/jsonrpc"
	"github.com/mcpgw/mcpgw/internal/mcp"
	"github.com/mcpgw/mcpgw/internal/seal"
	"github.com/mcpgw/mcpgw/internal/upstream"
)

// SealPurpose is the seal purpose of aggregate cursors.
const SealPurpose = "mcp-cursor"

// Server is one upstream as the catalog sees it.
type Server struct {
	Name   string // the tool/prompt prefix and the key in outcomes
	Client *upstream.Client
	// SkipParamHeaders leaves its tools' x-mcp-header annotations
	// unenforced on callers: set for upstreams not on streamable HTTP,
	// whose client does not mirror them either.
	SkipParamHeaders bool
}

// Catalog aggregates the lists of many upstreams for one caller at a time.
type Catalog struct {
	servers map[string]*Server
	sep     string
	sealer  *seal.Sealer
	log     *slog.Logger
	cache   ListCache
	now     func() time.Time
	// pageSize is PageSize; tests make it smaller.
	pageSize int
	seen     names      // what each caller was last shown
	spans    nameSpans  // where the names of the items last presented lie
	snaps    Snapshots  // aggregates being paged through
	warned   warnedURIs // duplicate resource URIs already warned about

	breakers   *breakers     // per-server listing breakers
	patience   time.Duration // how long an aggregate waits for one server; 0: the listing timeout
	background chan struct{} // one token per fetch running on after its aggregate answered
	flights    flights       // upstream list walks in progress, shared by their callers
	cacheStats *CacheStats   // nil: not counted
	vet        Vetter        // judges tool definitions; nil judges none
	workers    *Workers      // runs fan-outs and walks; nil: a goroutine each
}

// Config builds a Catalog.
type Config struct {
	Servers   []*Server
	Separator string       // tool prefix separator; default "-"
	Sealer    *seal.Sealer // seals cursors; must know SealPurpose
	Logger    *slog.Logger
	// Patience is how long an aggregate waits for one server; zero means
	// DefaultPatience, negative waits the whole listing timeout.
	Patience time.Duration
	// MaxBackground bounds fetches left running after their aggregate
	// answered; zero means DefaultMaxBackground.
	MaxBackground int
	// Lists caches upstream lists; nil means a MemoryListCache.
	Lists ListCache
	// Snapshots keeps aggregates for their later pages; nil means a
	// MemorySnapshots.
	Snapshots Snapshots
	// CacheStats, when set, counts the list cache's hits and misses.
	CacheStats *CacheStats
	// Vetter judges tool definitions (pinning, listing guardrails); nil
	// judges none.
	Vetter Vetter
	// Workers runs the fan-outs' calls and the list walks; nil starts a
	// goroutine for each. The catalog does not close it: its owner does,
	// after the catalog's last use (it may outlive generations).
	Workers *Workers
}

// New returns a catalog over the given servers.
func New(cfg Config) *Catalog {
	c := &Catalog{servers: map[string]*Server{}, sep: cfg.Separator, sealer: cfg.Sealer, log: cfg.Logger, now: time.Now,
		cache: cfg.Lists, snaps: cfg.Snapshots, pageSize: PageSize, cacheStats: cfg.CacheStats, vet: cfg.Vetter, workers: cfg.Workers}
	if c.cache == nil {
		c.cache = NewMemoryListCache()
	}
	if c.snaps == nil {
		c.snaps = NewMemorySnapshots()
	}
	if c.sep == "" {
		c.sep = "-"
	}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	for _, s := range cfg.Servers {
		c.servers[s.Name] = s
	}
	c.breakers = newBreakers(DefaultBreakerThreshold, DefaultBreakerCoolOff, DefaultBreakerMaxCoolOff)
	switch {
	case cfg.Patience == 0:
		c.patience = DefaultPatience
	case cfg.Patience > 0:
		c.patience = cfg.Patience
	}
	c.background = make(chan struct{}, cmp.Or(max(cfg.MaxBackground, 0), DefaultMaxBackground))
	c.seen.lists = map[ListKey]shown{}
	return c
}

// Query says whose view of the catalog to build.
type Query struct {
	// Servers are the server names the caller may use here, in order.
	Servers []string
	// Prefixed serves tool and prompt names as <server><sep><name>.
	Prefixed bool
	// Binding names the caller and scope; cursors are bound to it and
	// private cache entries are keyed by it.
	Binding string
	// Options returns the upstream options (forwarded headers, delegated
	// token) for one server.
	Options func(server string) upstream.Options
	// CredentialKey names the credentials Options carries for a server, for
	// private cache keys ("" when none).
	CredentialKey func(server string) string
	// AllowTool filters tools (bare upstream names); nil allows all.
	AllowTool func(server, tool string) bool
	// AllowToolDef filters tools by their whole definition (as the upstream
	// lists it), after AllowTool; nil allows all.
	AllowToolDef func(server string, tool json.RawMessage) bool
	// Whole serves the whole aggregate as one page, without a cursor
	// (REST listings); otherwise pages end at PageSize items and where an
	// upstream's page ended.
	Whole bool
}

// UpstreamFault is the fault of a failed upstream request: its class from
// the classification, message as the caller is to read it.
func UpstreamFault(cl upstream.Classified, message string) *fault.Fault {
	f := &fault.Fault{Class: upstreamClass(cl), Message: message}
	if f.Class == fault.AuthRequired || f.Class == fault.Forbidden {
		f.Challenge = cl.Challenge
	}
	return f
}

// upstreamClass maps an upstream fault class (and, for upstream errors,
// the status it passes on) to the fault table's class.
func upstreamClass(cl upstream.Classified) fault.Class {
	switch cl.Fault {
	case upstream.FaultAuthRequired:
		return fault.AuthRequired
	case upstream.FaultForbidden:
		return fault.Forbidden
	case upstream.FaultTimeout:
		return fault.Timeout
	case upstream.FaultUnreachable:
		return fault.Unreachable
	case upstream.FaultUpstreamError:
		switch cl.HTTPStatus {
		case 429:
			return fault.RateLimited
		case 503:
			return fault.Unavailable
		}
		return fault.UpstreamError
	}
	return fault.UpstreamInternal
}

// Outcome is one server's part in an aggregate list.
type Outcome struct {
	Status     string `json:"status"` // "ok" or the fault class
	Count      *int   `json:"count,omitempty"`
	ToolCount  *int   `json:"tool_count,omitempty"`
	HTTPStatus int    `json:"http_status,omitempty"`
}

// listKey names the array member of each list method's result.
func listKey(method string) string {
	switch method {
	case mcp.MethodToolsList:
		return "tools"
	case mcp.MethodPromptsList:
		return "prompts"
	case mcp.MethodResourcesList:
		return "resources"
	case mcp.MethodResourcesTemplatesList:
		return "resourceTemplates"
	}
	return ""
}

// ListChanged makes a server's cached lists stale at once when it says they
// changed (notifications/tools/list_changed and its siblings).
func (c *Catalog) ListChanged(server, notification string) {
	switch notification {
	case mcp.NotifToolsListChanged:
		c.invalidate(server, mcp.MethodToolsList)
	case mcp.NotifPromptsListChanged:
		c.invalidate(server, mcp.MethodPromptsList)
	case mcp.NotifResourcesListChanged:
		c.invalidate(server, mcp.MethodResourcesList)
		c.invalidate(server, mcp.MethodResourcesTemplatesList)
	}
}

// invalidate drops a server's cached lists of one method.
func (c *Catalog) invalidate(server, method string) {
	if err := c.cache.Invalidate(context.Background(), server, method); err != nil {
		c.log.Warn("list cache not invalidated; its entries live until they expire", "server", server, "method", method, "error", err.Error())
	}
}

// fetched is one server's list for one query.
type fetched struct {
	items []json.RawMessage
	cuts  []int // where the upstream's pages ended (Pages.Cuts)
	err   error
}

// fetch returns the items of one server's list, from the cache when the
// upstream allowed it.
func (c *Catalog) fetch(ctx context.Context, q Query, s *Server, method string) ([]json.RawMessage, error) {
	l, err := c.fetchPages(ctx, q, s, method)
	return l.Items, err
}

// fetchPages returns one server's list with its page cuts, from the cache
// when the upstream allowed it.
func (c *Catalog) fetchPages(ctx context.Context, q Query, s *Server, method string) (Pages, error) {
	key := q.listKey(s.Name, method)
	l, ok, err := c.cache.Get(ctx, key, c.now())
	hit := ok && err == nil
	c.cacheStats.count(hit)
	if hit {
		return l, nil
	}
	return c.load(ctx, q, s, method, key)
}

// List serves one page of the aggregated list method for q. cursor is the
// caller's cursor ("" for the first page).
func (c *Catalog) List(ctx context.Context, q Query, method, cursor string) (json.RawMessage, *fault.Fault) {
	key := listKey(method)
	offset, snapID := 0, ""
	if cursor != "" {
		cur, err := c.openCursor(cursor, method, q.Binding)
		if err != nil {
			return nil, fault.New(fault.InvalidParams, "invalid or expired cursor")
		}
		offset, snapID = cur.Offset, cur.Snapshot
		if sn, ok, err := c.snaps.Get(ctx, snapID, q.Binding, c.now()); ok && err == nil {
			// The walk started where its snapshot is kept: later pages come
			// from the list its first page was cut from, not from a new
			// fan-out.
			agg := aggregate{items: sn.Items, cuts: sn.Cuts, outcomes: sn.Outcomes}
			return c.page(key, method, q, agg, offset, snapID)
		}
	}
	results := c.gather(ctx, q, method)
	total := 0
	for _, r := range results {
		total += len(r.items)
	}
	items := make([]json.RawMessage, 0, total) // at most what was fetched
	var cuts []int
	outcomes := make(map[string]Outcome, len(q.Servers))
	var authFails []upstream.Classified
	var owners resourceOwners
	for i, name := range q.Servers {
		r := results[i]
		if o, ok := unasked(r.err); ok {
			outcomes[name] = o
			level := slog.LevelDebug // skipped: its failure was logged when it happened
			if o.Status != OutcomeSkipped {
				level = slog.LevelWarn
			}
			c.log.Log(ctx, level, "upstream left out of an aggregate list", "server", name, "method", method, "status", o.Status)
			continue
		}
		if r.err != nil {
			cl := upstream.Classify(r.err)
			o := OutcomeOf(r.err)
			if cl.Fault == upstream.FaultAuthRequired || cl.Fault == upstream.FaultForbidden {
				authFails = append(authFails, cl)
			}
			outcomes[name] = o
			c.log.Warn("upstream list failed", "server", name, "method", method, "fault", string(cl.Fault), "reason", cl.Message)
			continue
		}
		kept, kcuts, names := c.present(q, name, method, r.items, r.cuts)
		if method == mcp.MethodResourcesList {
			kept, kcuts = owners.keep(name, kept, kcuts)
		}
		c.seen.recordNamed(q, name, method, r.items, names, c.annotated(name), c.now())
		n := len(kept)
		o := Outcome{Status: "ok", Count: &n}
		if method == mcp.MethodToolsList {
			o.ToolCount, o.Count = &n, nil
		}
		outcomes[name] = o
		for _, cut := range kcuts {
			cuts = append(cuts, len(items)+cut)
		}
		items = append(items, kept...)
	}
	if len(q.Servers) > 0 && len(authFails) == len(q.Servers) {
		cl := authFails[0]
		return nil, UpstreamFault(cl, cl.Message)
	}
	c.warnDuplicates(ctx, &owners)
	agg := aggregate{items: items, cuts: cuts, outcomes: outcomes}
	if !q.Whole && snapID == "" && c.pageEnd(agg, offset) < len(items) {
		sn := Snapshot{Binding: q.Binding, Items: items, Cuts: cuts, Outcomes: outcomes, Expires: c.now().Add(snapshotTTL)}
		if id, err := c.snaps.Put(ctx, sn); err == nil {
			snapID = id // else later pages fan out again
		}
	}
	return c.page(key, method, q, agg, offset, snapID)
}

// unasked is the outcome of a server the aggregate did not wait for: skipped
// by its breaker, or slower than the aggregate's patience.
func unasked(err error) (Outcome, bool) {
	switch {
	case errors.Is(err, ErrSkipped):
		return Outcome{Status: OutcomeSkipped}, true
	case errors.Is(err, errImpatient):
		return Outcome{Status: string(upstream.FaultTimeout)}, true
	}
	return Outcome{}, false
}

// OutcomeOf is a failed server's outcome in an aggregate: skipped (its
// breaker is open), the fault class, and the HTTP status for refusals and
// rate limits.
func OutcomeOf(err error) Outcome {
	if o, ok := unasked(err); ok {
		return o
	}
	cl := upstream.Classify(err)
	o := Outcome{Status: string(cl.Fault)}
	if cl.Fault == upstream.FaultAuthRequired || cl.Fault == upstream.FaultForbidden || cl.HTTPStatus == 429 || cl.HTTPStatus == 503 {
		o.HTTPStatus = cl.HTTPStatus
	}
	return o
}

// present filters and renames one server's items for the caller; cuts
// (Pages.Cuts) follow the items kept. names[i] is items[i]'s name ("" when
// it has none), for names.record. Renaming replaces the item's name in
// place (nothing else of the item is decoded or re-encoded), and the
// renamed items of one server share one buffer.
func (c *Catalog) present(q Query, server, method string, items []json.RawMessage, cuts []int) (kept []json.RawMessage, kcuts []int, names []string) {
	renames := method == mcp.MethodToolsList || method == mcp.MethodPromptsList
	if !renames {
		return items, cuts, nil
	}
	out := make([]json.RawMessage, 0, len(items))
	sp := c.spans.of(server, method, items)
	var renamed []json.RawMessage
	if q.Prefixed {
		prefix := jsonrpc.AppendString(nil, server+c.sep) // `"<server><sep>`, as a JSON string without its end
		renamed = sp.renamed(prefix[:len(prefix)-1])
	}
	cut := cutter{cuts: cuts}
	for i, it := range items {
		cut.at(i, len(out))
		name := sp.spans[i].name
		if !sp.spans[i].ok {
			// A name listed twice: parsers disagree on which one counts.
			c.log.Warn("upstream item without a name dropped", "server", server, "method", method)
			continue
		}
		if method == mcp.MethodToolsList && (q.AllowTool != nil && !q.AllowTool(server, name) || c.vetHidden(server, name)) {
			continue
		}
		if method == mcp.MethodToolsList && q.AllowToolDef != nil && !q.AllowToolDef(server, it) {
			continue
		}
		if q.Prefixed {
			it = renamed[i]
		}
		out = append(out, it)
	}
	names = sp.names
	return out, cut.done(len(out)), names
}

// stringMember returns the string value of obj's top-level member key.
func stringMember(obj []byte, key string) (string, bool) { return jsonrpc.StringMember(obj, key) }

// SplitName maps a served tool or prompt name to its server and upstream
// name. Server names cannot contain the separator, so the name splits at the
// first one; the prefix must be one of servers. Without prefixes the single
// server in servers owns every name.
func (c *Catalog) SplitName(name string, servers []string, prefixed bool) (server, bare string, ok bool) {
	if !prefixed {
		if len(servers) != 1 {
			return "", "", false
		}
		return servers[0], name, name != ""
	}
	prefix, rest, found := strings.Cut(name, c.sep)
	if !found || rest == "" {
		return "", "", false
	}
	for _, s := range servers {
		if s == prefix {
			return s, rest, true
		}
	}
	return "", "", false
}

// ResourceOwner finds the server that serves uri for this caller: the first
// (in order) that lists it, else the first whose resource template matches.
// When no server has it and every server refused the caller's credentials,
// the auth failure is returned, so the caller learns it must authenticate.
func (c *Catalog) ResourceOwner(ctx context.Context, q Query, uri string) (string, *fault.Fault) {
	results := c.gather(ctx, q, mcp.MethodResourcesList)
	for i, name := range q.Servers {
		for _, it := range results[i].items {
			if u, ok := stringMember(it, "uri"); ok && u == uri {
				return name, nil
			}
		}
	}
	templates := c.gather(ctx, q, mcp.MethodResourcesTemplatesList)
	for i, name := range q.Servers {
		for _, it := range templates[i].items {
			if t, ok := stringMember(it, "uriTemplate"); ok && templateMatches(t, uri) {
				return name, nil
			}
		}
	}
	return "", authFailure(results)
}

// authFailure is the first auth refusal when every fetch was refused one.
func authFailure(results []fetched) *fault.Fault {
	var first *upstream.Classified
	for _, r := range results {
		if r.err == nil {
			return nil
		}
		cl := upstream.Classify(r.err)
		if cl.Fault != upstream.FaultAuthRequired && cl.Fault != upstream.FaultForbidden {
			return nil
		}
		if first == nil {
			first = &cl
		}
	}
	if first == nil {
		return nil
	}
	return UpstreamFault(*first, first.Message)
}
