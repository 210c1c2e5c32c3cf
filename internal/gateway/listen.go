package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"sync"
	"time"

	"github.com/mcpgw/mcpgw/internal/catalog"
	"github.com/mcpgw/mcpgw/internal/jsonrpc"
	"github.com/mcpgw/mcpgw/internal/mcp"
	"github.com/mcpgw/mcpgw/internal/upstream"
)

// Filter is a subscriptions/listen SubscriptionFilter.
type Filter struct {
	ToolsListChanged      bool     `json:"toolsListChanged,omitempty"`
	PromptsListChanged    bool     `json:"promptsListChanged,omitempty"`
	ResourcesListChanged  bool     `json:"resourcesListChanged,omitempty"`
	ResourceSubscriptions []string `json:"resourceSubscriptions,omitempty"`
	// Log, when set, also relays the notifications/message that legacy
	// upstream sessions send outside any request, at or above the level it
	// returns when each arrives ("" relays every level). Only a legacy
	// caller's session sets it: a 2026-07-28 listen carries no log lines.
	Log func() string `json:"-"`
	// ElicitationComplete also relays notifications/elicitation/complete
	// from legacy upstream sessions (a 2025-11-25 caller that declared
	// URL-mode elicitation).
	ElicitationComplete bool `json:"-"`
	// Owner, when set, names the caller whose own upstream sessions
	// (upstream.Interactions.Owner) this listen stands for, "" while it has
	// none. A server's notifications then come from that caller's own
	// session on it once there is one, and from the session shared by its
	// credentials until then; resource updates always from the shared one,
	// where the listen subscribes. Only a legacy caller's session sets it.
	Owner func() string `json:"-"`
	// Persist keeps the listen going when an upstream ends a listen it
	// relies on: its listeners are set up again (after relistenDelay) and
	// the caller's views checked again, instead of the listen ending. A
	// legacy caller's session sets it: it cannot listen again itself.
	Persist bool `json:"-"`
}

// Bounds on a SubscriptionFilter.
const (
	// MaxResourceSubscriptions bounds the resourceSubscriptions of one filter.
	MaxResourceSubscriptions = 64
	// maxSubscriptionURI bounds the length of one subscribed URI.
	maxSubscriptionURI = 4096
)

// ParseFilter decodes a SubscriptionFilter and validates it: at most
// MaxResourceSubscriptions resource subscriptions, each an absolute URI.
// The error is an Invalid Params error to answer with.
func ParseFilter(raw json.RawMessage) (Filter, *jsonrpc.Error) {
	var f Filter
	if len(raw) == 0 || raw[0] != '{' || json.Unmarshal(raw, &f) != nil {
		return Filter{}, jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "params.notifications must be a SubscriptionFilter object")
	}
	if n := len(f.ResourceSubscriptions); n > MaxResourceSubscriptions {
		return Filter{}, jsonrpc.Errorf(jsonrpc.CodeInvalidParams,
			"params.notifications.resourceSubscriptions has %d entries; at most %d are allowed", n, MaxResourceSubscriptions)
	}
	for i, uri := range f.ResourceSubscriptions {
		if msg := checkSubscriptionURI(uri); msg != "" {
			return Filter{}, jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "params.notifications.resourceSubscriptions[%d] %s", i, msg)
		}
	}
	return f, nil
}

// checkSubscriptionURI says what is wrong with a subscribed URI ("" when nothing).
func checkSubscriptionURI(uri string) string {
	switch {
	case uri == "":
		return "must not be empty"
	case len(uri) > maxSubscriptionURI:
		return fmt.Sprintf("is longer than %d bytes", maxSubscriptionURI)
	}
	if u, err := url.Parse(uri); err != nil || u.Scheme == "" {
		return "is not an absolute URI"
	}
	return ""
}

// wants reports whether the filter asks for a notification.
func (f *Filter) wants(method string, params json.RawMessage) bool {
	switch method {
	case mcp.NotifToolsListChanged:
		return f.ToolsListChanged
	case mcp.NotifPromptsListChanged:
		return f.PromptsListChanged
	case mcp.NotifResourcesListChanged:
		return f.ResourcesListChanged
	case mcp.NotifElicitationComplete:
		return f.ElicitationComplete
	case mcp.NotifMessage:
		if f.Log == nil {
			return false
		}
		least := f.Log()
		if least == "" {
			return true
		}
		level, _ := stringMember(params, "level")
		return mcp.LogLevelSeverity(level) >= mcp.LogLevelSeverity(least)
	case mcp.NotifResourcesUpdated:
		uri, _ := stringMember(params, "uri")
		for _, u := range f.ResourceSubscriptions {
			if u == "" {
				continue // refused by ParseFilter; never a prefix of everything
			}
			if uri == u || (len(uri) > len(u) && uri[:len(u)] == u && (u[len(u)-1] == '/' || uri[len(u)] == '/')) {
				return true
			}
		}
	}
	return false
}

// hub fans notifications that arrive on legacy upstream sessions (which name
// no listener) out to the listens interested in that server.
type hub struct {
	mu   sync.Mutex
	subs map[string]map[*hubSub]struct{}
	// upstreamSubs holds the legacy upstream sessions' subscriptions to a
	// URI, by server, credentials and URI, while a listen needs them.
	upstreamSubs map[string]*upstreamSub
}

// upstreamSub is one legacy upstream session's subscription to a URI,
// shared by the listens that need it.
type upstreamSub struct {
	n     int           // the listens holding it
	ready chan struct{} // closed once the upstream answered the subscribe
	err   error         // the upstream's refusal, set (under hub.mu) before ready closes
}

// holdSub takes a hold on the subscription for key, creating it when there
// is none (first: the caller subscribes upstream and reports the outcome
// with failSub or by closing ready).
func (h *hub) holdSub(key string) (e *upstreamSub, first bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if e = h.upstreamSubs[key]; e == nil {
		if h.upstreamSubs == nil {
			h.upstreamSubs = map[string]*upstreamSub{}
		}
		e = &upstreamSub{ready: make(chan struct{})}
		h.upstreamSubs[key] = e
		first = true
	}
	e.n++
	return e, first
}

// failSub records that the upstream refused e's subscribe: the next listen
// to need the URI subscribes again, and those waiting on e fail.
func (h *hub) failSub(key string, e *upstreamSub, err error) {
	h.mu.Lock()
	e.err = err
	if h.upstreamSubs[key] == e {
		delete(h.upstreamSubs, key)
	}
	h.mu.Unlock()
	close(e.ready)
}

// releaseSub lets go of a hold on e; it reports whether it was the last
// hold on a subscription the upstream made (so it is to be undone).
func (h *hub) releaseSub(key string, e *upstreamSub) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if e.n--; e.n > 0 {
		return false
	}
	if h.upstreamSubs[key] == e {
		delete(h.upstreamSubs, key)
	}
	return e.err == nil
}

type hubSub struct {
	cred   string // the upstream session's credentials it follows
	filter *Filter
	emit   func(method string, params json.RawMessage)
}

// follows reports whether the sub hears a notification that came on an
// upstream session with its credentials, owned by owner ("" for
// the shared one): the shared session, unless its owner has a session of
// its own there (resource updates excepted: the listen subscribes on the
// shared one); or its owner's own session.
func (s *hubSub) follows(hasOwn func(key string) bool, owner, method string) bool {
	mine := ""
	if s.filter.Owner != nil {
		mine = s.filter.Owner()
	}
	if owner != "" {
		return owner == mine
	}
	if mine == "" || method == mcp.NotifResourcesUpdated {
		return true
	}
	return !hasOwn(upstream.OwnerKey(s.cred, mine))
}

func (h *hub) add(server string, s *hubSub) func() {
	h.mu.Lock()
	if h.subs == nil {
		h.subs = map[string]map[*hubSub]struct{}{}
	}
	if h.subs[server] == nil {
		h.subs[server] = map[*hubSub]struct{}{}
	}
	h.subs[server][s] = struct{}{}
	h.mu.Unlock()
	return func() {
		h.mu.Lock()
		delete(h.subs[server], s)
		h.mu.Unlock()
	}
}

// Notify delivers a notification a server sent outside any request (list
// changes, resource updates, log lines) on the upstream session named by
// session (see upstream.OwnerKey) to the listens following that
// session: callers with other credentials never see it, and a caller's own
// session's notifications reach that caller alone (hubSub.follows).
//
// Only the newest gateway over a Listens delivers (one a newer config took
// over from delivers nothing): the followers are shared, and each must hear
// a notification once.
func (g *Gateway) Notify(server, session, method string, params json.RawMessage) {
	if g.ls.currentOr(g) != g {
		return
	}
	cred, owner := upstream.SplitNotificationKey(session)
	g.ls.hub.mu.Lock()
	subs := make([]*hubSub, 0, len(g.ls.hub.subs[server]))
	for s := range g.ls.hub.subs[server] {
		if s.cred == cred {
			subs = append(subs, s)
		}
	}
	g.ls.hub.mu.Unlock()
	var (
		own    map[string]bool // looked up once, when a follower has an owner
		looked bool
	)
	hasOwn := func(key string) bool {
		if !looked {
			looked = true
			if srv := g.servers[server]; srv != nil && srv.Client != nil {
				own = srv.Client.OwnSessions()
			}
		}
		return own[key]
	}
	for _, s := range subs {
		if s.follows(hasOwn, owner, method) && s.filter.wants(method, params) {
			s.emit(method, params)
		}
	}
}

// honour is the part of want the servers can honour (those that answered
// their probe, per infos), with the subscribed URIs each server serves.
func (g *Gateway) honour(ctx context.Context, op *Operation, servers []string, infos []*upstream.Info, want *Filter) (Filter, map[string][]string) {
	honoured := Filter{Log: want.Log, ElicitationComplete: want.ElicitationComplete, Owner: want.Owner}
	owners := map[string][]string{} // server → the subscribed URIs it serves
	for _, info := range infos {
		if info == nil {
			continue
		}
		caps := info.Capabilities
		honoured.ToolsListChanged = honoured.ToolsListChanged || (want.ToolsListChanged && caps.ToolsListChanged())
		honoured.PromptsListChanged = honoured.PromptsListChanged || (want.PromptsListChanged && caps.PromptsListChanged())
		honoured.ResourcesListChanged = honoured.ResourcesListChanged || (want.ResourcesListChanged && caps.ResourcesListChanged())
	}
	if len(want.ResourceSubscriptions) == 0 {
		return honoured, owners
	}
	q := g.query(op, servers)
	for _, uri := range want.ResourceSubscriptions {
		owner, _ := g.cfg.Catalog.ResourceOwner(ctx, q, uri)
		if i := slices.Index(servers, owner); i >= 0 && infos[i] != nil && infos[i].Capabilities.ResourcesSubscribe() {
			owners[owner] = append(owners[owner], uri)
			honoured.ResourceSubscriptions = append(honoured.ResourceSubscriptions, uri)
		}
	}
	return honoured, owners
}

// legacySubscribe subscribes a legacy upstream session to uri until
// unsubscribe is called. Listens with the same credentials share the
// upstream session, so subscriptions are shared: the first listen
// subscribes, within the listing timeout, and the others wait for that
// outcome (or their own end); the last to call unsubscribe unsubscribes
// upstream (within a short bound). The error is the upstream's refusal of
// the subscribe, for every listen that waited on it (nothing is held then).
func (g *Gateway) legacySubscribe(ctx context.Context, s *Server, opts upstream.Options, uri string) (unsubscribe func(), err error) {
	params := jsonrpc.AppendString([]byte(`{"uri":`), uri)
	params = append(params, '}')
	key := s.Name + "\x00" + upstream.CredentialKey(opts) + "\x00" + uri
	e, first := g.ls.hub.holdSub(key)
	send := func() {
		uctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_, _ = s.Client.Call(uctx, mcp.MethodResourcesUnsubscribe, params, opts)
	}
	var once sync.Once
	unsubscribe = func() {
		once.Do(func() {
			defer g.recovered("legacy unsubscribe", nil)
			if g.ls.hub.releaseSub(key, e) { // else another listen still follows this URI on that session
				send()
			}
		})
	}
	if first {
		err = g.subscribeUpstream(ctx, s, opts, params, send)
		if err != nil {
			g.ls.hub.failSub(key, e, err)
		} else {
			close(e.ready)
		}
	} else {
		select {
		case <-e.ready:
			err = e.err
		case <-ctx.Done():
			err = ctx.Err()
		}
	}
	if err == nil {
		// The listen ended while the subscribe was answered: undo it.
		err = ctx.Err()
	}
	if err != nil {
		unsubscribe()
		return nil, fmt.Errorf("resources/subscribe on %s: %w", s.Name, err)
	}
	return unsubscribe, nil
}

// subscribeUpstream sends the resources/subscribe a shared subscription
// starts with, bounded by the listing timeout but not by the listen that
// sends it (other listens may be waiting for its outcome). A subscribe
// that timed out is undone (send): the upstream may have subscribed all
// the same.
func (g *Gateway) subscribeUpstream(ctx context.Context, s *Server, opts upstream.Options, params []byte, send func()) error {
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), g.cfg.ListTimeout)
	defer cancel()
	_, err := s.Client.Call(sctx, mcp.MethodResourcesSubscribe, params, opts)
	if err == nil {
		return nil
	}
	g.cfg.Logger.Warn("upstream refused resources/subscribe", "server", s.Name, "fault", string(upstream.Classify(err).Fault))
	if sctx.Err() != nil {
		send()
	}
	return err
}

// infos asks each server what it is, concurrently, each under the listing
// timeout and within the catalog's patience and breakers; a server that
// fails, is skipped or is too slow is nil, and its outcome says why.
func (g *Gateway) infos(ctx context.Context, op *Operation, servers []string) ([]*upstream.Info, map[string]catalog.Outcome) {
	multi := len(servers) > 1
	out, errs := catalog.Patiently(ctx, g.cfg.Catalog, servers, func(ctx context.Context, i int) (*upstream.Info, error) {
		s := g.servers[servers[i]]
		opts := g.options(s, op, multi)
		if s.CallerToken && opts.Token == "" {
			return nil, errNoCallerToken
		}
		done, ok := g.cfg.Catalog.Admit(s.Name)
		if !ok {
			return nil, catalog.ErrSkipped
		}
		ctx, cancel := context.WithTimeout(ctx, g.cfg.ListTimeout)
		defer cancel()
		info, err := s.Client.Info(ctx, opts)
		done(ctx, err)
		if err != nil {
			return nil, err
		}
		return &info, nil
	})
	outcomes := make(map[string]catalog.Outcome, len(servers))
	for i, name := range servers {
		if errs[i] == nil {
			outcomes[name] = catalog.Outcome{Status: "ok"}
			continue
		}
		o := discoveryOutcome(errs[i])
		outcomes[name] = o
		if o.Status != catalog.OutcomeSkipped {
			g.cfg.Logger.Warn("upstream discovery failed", "server", name, "fault", o.Status)
		}
	}
	return out, outcomes
}

// withoutSubscriptionID drops an upstream listen's own subscriptionId from
// an event: the caller's listen tags it with its own.
func withoutSubscriptionID(params json.RawMessage) json.RawMessage {
	meta := jsonrpc.Member(params, "_meta")
	if len(meta) == 0 || meta[0] != '{' || jsonrpc.Member(meta, mcp.MetaSubscriptionID) == nil {
		return params
	}
	m, err := removeMember(meta, mcp.MetaSubscriptionID)
	if err != nil {
		return params
	}
	if string(m) == "{}" {
		if out, err := removeMember(params, "_meta"); err == nil {
			return out
		}
		return params
	}
	if out, err := jsonrpc.SetMember(params, "_meta", m); err == nil {
		return out
	}
	return params
}
