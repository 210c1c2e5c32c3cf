package gateway

import (
	"context"
	"encoding/json"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpgw/mcpgw/internal/fault"
	"github.com/mcpgw/mcpgw/internal/mcp"
	"github.com/mcpgw/mcpgw/internal/shallow"
	"github.com/mcpgw/mcpgw/internal/upstream"
)

// DefaultMaxListenersPerCaller bounds the upstream listeners one caller
// holds at once (Config.MaxListenersPerCaller).
const DefaultMaxListenersPerCaller = 64

// Listener is what a listen serves (ListenFilter): its caller's
// acknowledgement and events, and the caller's own duties, which run on
// the listen's goroutine between events so that a held stream needs no
// goroutine of its own for them (keepalives, re-checking its caller,
// writing what others queued for its stream).
type Listener struct {
	// Ack is called once, when every upstream listener is established,
	// with the part of the filter the upstreams honour. False ends the
	// listen.
	Ack func(honoured json.RawMessage) bool
	// Emit is called, one call at a time (as Tend is), on a goroutine the
	// listen's goroutine starts for each wake and waits for
	// (internal/shallow), for every event in the
	// caller's view, after Ack; arrived is when the event reached the
	// gateway (for a list change: when it is told), for the caller to be
	// re-checked after it. False ends the listen.
	Emit func(method string, params json.RawMessage, arrived time.Time) bool
	// Wake, when set, is the one channel the listen's goroutine waits on
	// for its work: the listen signals its own events on it (a send that
	// never blocks: give it a buffer of one), and the caller wakes it the
	// same way (its timer, its queue); each wake (after Ack) calls Tend,
	// then delivers what is pending. A held listen then waits on three
	// channels, not one per source of work.
	Wake chan struct{}
	// Tend does the caller's own work; false ends the listen.
	Tend func() bool
	// Done, when set, ends the listen when it closes (noticed while the
	// listen waits for events: within the listing timeout of set-up).
	Done <-chan struct{}
}

// ListenFilter serves one subscriptions/listen over the caller's upstreams,
// for a filter from ParseFilter or one the gateway built itself (a legacy
// caller's session following its upstreams, Log included).
//
// Set-up is all or nothing: every upstream listener the listen needs (a
// subscriptions/listen on each modern upstream that can honour part of it,
// a followed session with its resources/subscribe on each legacy one) is
// opened and established first (a modern upstream has acknowledged its
// listen; a legacy session is set up with its stream open), within the
// listing timeout and the caller's listener capacity. Only then is l.Ack
// called, once, with the part of the filter the upstreams honour; then
// l.Emit for every event, until ctx ends, l.Tend refuses, l.Done closes or
// an upstream ends its listen. All of it runs on the caller's goroutine,
// the work between two waits on goroutines it starts and waits for.
// When set-up fails, what was opened is closed, Ack is never called and
// the Outcome is the fault.
func (g *Gateway) ListenFilter(outer context.Context, op Operation, want Filter, l Listener) Outcome {
	held, out := g.OpenListen(outer, op, want, l)
	if held == nil {
		return out
	}
	return held.Hold()
}

// OpenListen is the first part of ListenFilter: it sets the listen up and
// acknowledges it (l.Ack), and returns the open listen, whose Hold
// delivers its events until it ends and must be called once, on any
// goroutine (a server can run it after the handler that opened the listen
// has returned, so that the frames which opened it are not held). When
// set-up fails or l.Ack refuses, it returns nil and the outcome (see
// ListenFilter); nothing is left open.
func (g *Gateway) OpenListen(outer context.Context, op Operation, want Filter, l Listener) (*OpenedListen, Outcome) {
	ctx, cancel := context.WithCancel(outer)
	run, f := g.beginListen(outer, ctx, cancel, &op, &want, &l)
	if f != nil {
		cancel()
		return nil, Failed(f)
	}
	o := &OpenedListen{ctx: ctx, cancel: cancel, ls: g.ls, run: run, op: &op, persist: want.Persist}
	opened := false
	defer func() {
		if !opened { // set-up refused, or a panic in it (l.Ack's writes)
			o.end()
		}
	}()
	out, ok := o.open()
	if !ok {
		return nil, out
	}
	opened = true
	return o, Outcome{}
}

// beginListen describes what a listen follows and registers it, on the
// newest gateway, with the caller's baseline views taken. It returns
// before the listen is held, so that the frames it needs are not held on
// the listen's stack while the listen lasts. ctx is the listen's, outer
// the one it was derived from.
func (g *Gateway) beginListen(outer, ctx context.Context, cancel context.CancelFunc, op *Operation, want *Filter, l *Listener) (*listenRun, *fault.Fault) {
	if l.Wake != nil && cap(l.Wake) == 0 {
		// The listen's own sends on Wake never block: unbuffered, they
		// would be lost while its goroutine is busy. A caller's bug.
		panic("gateway: Listener.Wake needs a buffer of one")
	}
	g = g.ls.currentOr(g) // a listen reaching an older config's front runs on the newest
	g.resolveCallerTokens(ctx, op)
	servers := g.visible(op)
	// What the upstreams are is asked under a context of its own, ended
	// once they answered: nothing the asking registers on the listen's
	// context is held as long as the listen. It is derived from outer,
	// which has children already, so that the listen's context does not
	// grow a set of children for it (nothing can end the listen's alone
	// before it is registered).
	ictx, done := context.WithCancel(outer)
	infos, _ := g.infos(ictx, op, servers)
	honoured, owners := g.honour(ictx, op, servers, infos, want)
	done()
	targets := g.listenTargets(op, servers, infos, &honoured, owners)
	d := g.newDelivery(ctx, cancel, op, servers, &honoured, l)
	run := &listenRun{op: *op, servers: servers, cancel: cancel, d: d, g: g, targets: targets}
	if !g.ls.register(run) {
		return nil, fault.New(fault.Unavailable, "the gateway is shutting down")
	}
	baselined := false
	defer func() {
		if !baselined { // a panic taking the views: nothing stays registered
			cancel()
			g.ls.unregister(run)
		}
	}()
	d.baseline(targets)
	baselined = true
	return run, nil
}

// OpenedListen is a listen set up and acknowledged (OpenListen), until its
// Hold returns.
type OpenedListen struct {
	ctx    context.Context
	cancel context.CancelFunc
	ls     *Listens
	run    *listenRun
	// op is OpenListen's own (the delivery's query keeps it too), not a
	// copy: set up by beginListen, then only read (its binding cached by
	// the query), so sharing it costs a held listen one Operation less.
	op      *Operation
	persist bool
	// What the listen holds now: the gateway it runs on, its targets
	// there and their listeners.
	cur     *Gateway
	targets []listenTarget
	set     *listenSet
}

// open sets up the listen's upstream listeners and acknowledges it; false
// with the outcome when either fails (what was opened is closed).
func (o *OpenedListen) open() (Outcome, bool) {
	if f := o.setUp(); f != nil {
		return Failed(f), false
	}
	if !o.run.d.ack() {
		o.set.close()
		return Outcome{Result: json.RawMessage(`{}`)}, false
	}
	return Outcome{}, true
}

// setUp opens the listen's upstream listeners (Gateway.setUp) on the
// gateway it runs on now: a newer config may have taken the listen over
// (Listens). When that fails, what was opened is closed and o.set is left
// as it was.
func (o *OpenedListen) setUp() *fault.Fault {
	o.cur, o.targets = o.run.current()
	set, f := o.cur.setUp(o.ctx, o.op, o.targets, o.run.d.event, o.run.d.signal)
	if f != nil {
		set.close()
		return f
	}
	o.set = set
	return nil
}

// end releases what the listen holds in the gateway.
func (o *OpenedListen) end() {
	o.cancel()
	o.ls.unregister(o.run)
}

// Hold delivers the open listen's events until it ends (see ListenFilter),
// then releases it; a persistent one is set up again when an upstream
// ends a listen it relies on. Call it once. A held stream waits in it
// (runUntil) for as long as it lasts, so it is kept a shallow frame: what
// is done between two runs of delivery is in next.
func (o *OpenedListen) Hold() Outcome {
	defer o.end()
	d := o.run.d
	var h held
	for {
		// After the acknowledgement, and after each set-up again, every
		// followed view is checked: a change made while listeners were
		// opening is delivered. Delivery runs here, on the listen's own
		// goroutine, until the listen or an upstream listen ends; what
		// it does between two waits runs on a goroutine of its own
		// (internal/shallow), so this one's stack never grows.
		shallow.Do(func() {
			d.start(o.targets)
			h.tokens, h.stopWatch = d.watchTokens(o.cur, o.op, o.targets)
		})
		ended, c := d.runUntil(nil, o.set.ended.Load, h.tokens)
		shallow.Do(func() {
			h.stopWatch()
			h.out, h.done = o.next(ended, c)
		})
		if h.done {
			return h.out
		}
	}
}

// held is what Hold's steps hand each other.
type held struct {
	tokens    <-chan *tokenCheck
	stopWatch context.CancelFunc
	out       Outcome
	done      bool
}

// next ends or sets up again a listen whose delivery returned (ended: an
// upstream ended its listen; c: the caller's token changed); done when
// the listen ends, with its outcome.
func (o *OpenedListen) next(ended bool, c *tokenCheck) (out Outcome, done bool) {
	d := o.run.d
	log := d.g.cfg.Logger
	endOK := Outcome{Result: json.RawMessage(`{}`)}
	switch {
	case c != nil:
		// The caller's token changed: set up again with the new one; deleted: end.
		o.set.close()
		if c.gone {
			return endOK, true
		}
		d.g.ls.retoken(o.run, c.changed)
	case !ended || !o.persist:
		if ended {
			// An upstream ended its listen: the listen no longer covers
			// it, so it ends too (the caller may listen again), once what
			// the upstreams sent before is delivered.
			d.drain()
		}
		o.set.close()
		return endOK, true
	default:
		o.set.close()
		log.Info("an upstream ended a listen a persistent listen relies on; setting it up again")
		if !d.pause(relistenDelay) {
			return endOK, true
		}
	}
	if f := o.setUp(); f != nil {
		log.Warn("a persistent listen could not be set up again; it ends", "reason", f.Message)
		return endOK, true
	}
	return Outcome{}, false
}

// relistenDelay is the pause before a persistent listen (Filter.Persist)
// sets up its upstream listeners again after an upstream ended one.
const relistenDelay = time.Second

// listenTarget is one upstream a listen needs a listener on.
type listenTarget struct {
	server *Server
	modern bool
	filter Filter // the part of the honoured filter this upstream serves
	opts   upstream.Options
}

// listenTargets are the upstreams the honoured filter needs listeners on:
// each server that answered its probe and can honour part of it.
func (g *Gateway) listenTargets(op *Operation, servers []string, infos []*upstream.Info, honoured *Filter, owners map[string][]string) []listenTarget {
	multi := len(servers) > 1
	var out []listenTarget
	for i, name := range servers {
		if infos[i] == nil {
			continue
		}
		caps := infos[i].Capabilities
		part := *honoured
		part.ToolsListChanged = part.ToolsListChanged && caps.ToolsListChanged()
		part.PromptsListChanged = part.PromptsListChanged && caps.PromptsListChanged()
		part.ResourcesListChanged = part.ResourcesListChanged && caps.ResourcesListChanged()
		part.ResourceSubscriptions = owners[name]
		modern := infos[i].Era == mcp.EraModern
		if !offers(infos[i], &part) {
			continue
		}
		s := g.servers[name]
		out = append(out, listenTarget{server: s, modern: modern, filter: part, opts: g.options(s, op, multi)})
	}
	return out
}

// listenSet is what one listen holds upstream; close releases all of it.
type listenSet struct {
	cancel context.CancelFunc
	// ended is set, and wake called, when an upstream ends its listen
	// (never when the listen has none): a flag its delivery reads when
	// woken, not a channel more for a held listen to wait on.
	ended    atomic.Bool
	wake     func()
	releases []func()
}

// end marks the set ended: an upstream listener ended on its own.
func (ls *listenSet) end() {
	if ls.ended.CompareAndSwap(false, true) {
		ls.wake()
	}
}

// close ends every upstream listener of the set; the last listen to leave
// a shared upstream listen waits for it to end.
func (ls *listenSet) close() {
	ls.cancel()
	for i := len(ls.releases) - 1; i >= 0; i-- {
		ls.releases[i]()
	}
}

// setUp opens the listeners targets need, within the caller's capacity, and
// waits until each is established (see ListenFilter). onEvent receives
// every event from then on, the upstream acknowledgements excepted; wake
// is called when an upstream ends its listen (listenSet.ended).
func (g *Gateway) setUp(ctx context.Context, op *Operation, targets []listenTarget, onEvent func(server, method string, params json.RawMessage), wake func()) (*listenSet, *fault.Fault) {
	// A legacy upstream's follow and subscriptions end with a context of
	// the set's; modern upstream listens are shared and need none, so a
	// set of those alone holds no context of its own.
	lctx, cancel := ctx, context.CancelFunc(func() {})
	if slices.ContainsFunc(targets, func(t listenTarget) bool { return !t.modern }) {
		lctx, cancel = context.WithCancel(ctx)
	}
	set := &listenSet{cancel: cancel, wake: wake}
	release, ok := g.ls.listeners.reserve(listenerHolder(op), len(targets), g.maxListeners())
	if !ok {
		return set, fault.New(fault.LimitExceeded,
			"this listen needs %d upstream listeners, beyond this caller's limit of %d open at once; end other listens or narrow this one", len(targets), g.maxListeners())
	}
	set.releases = append(set.releases, release)
	var pending []*sharedListen
	for _, t := range targets {
		if t.modern {
			pending = append(pending, g.openUpstreamListen(lctx, set, t, onEvent))
			continue
		}
		if f := g.followLegacy(lctx, set, t, onEvent); f != nil {
			return set, f
		}
	}
	timer := time.NewTimer(g.cfg.ListTimeout)
	defer timer.Stop()
	for _, ul := range pending {
		select {
		case <-ul.acked:
		case <-ul.done:
			if ul.err == nil {
				return set, fault.New(fault.Unavailable, "upstream %s ended its listen before acknowledging it", ul.server)
			}
			return set, g.failure(op, ul.server, ul.err).Fault
		case <-timer.C:
			return set, fault.New(fault.Timeout, "upstream %s did not acknowledge its listen in time", ul.server)
		case <-ctx.Done():
			return set, fault.New(fault.UpstreamInternal, "the listen ended while it was being set up")
		}
	}
	return set, nil
}

// openUpstreamListen has the listen hear a subscriptions/listen on a modern
// upstream, shared with every other listen whose credentials and filter
// there are the same (sharedListens); the returned listen's acked closes
// when the upstream acknowledged it, done when it ends. The set's close
// leaves it.
func (g *Gateway) openUpstreamListen(ctx context.Context, set *listenSet, t listenTarget, onEvent func(server, method string, params json.RawMessage)) *sharedListen {
	pb, _ := json.Marshal(t.filter)
	sub := &listenSub{event: onEvent, ended: func() {
		if ctx.Err() == nil {
			set.end()
		}
	}}
	sl := g.joinShared(t, pb, sub)
	set.releases = append(set.releases, func() { g.leaveShared(sl, sub) })
	return sl
}

// followLegacy follows a legacy upstream's session for the listen: the
// session set up with its stream open, its notifications heard through the
// hub, and the subscribed URIs subscribed on it.
func (g *Gateway) followLegacy(ctx context.Context, set *listenSet, t listenTarget, onEvent func(server, method string, params json.RawMessage)) *fault.Fault {
	name := t.server.Name
	fctx, release, err := t.server.Client.FollowContext(ctx, t.opts)
	if err != nil {
		return g.failure(&Operation{Method: mcp.MethodSubscriptionsListen}, name, err).Fault
	}
	set.releases = append(set.releases, release)
	// The session ending (or its credential lost) ends what it carried: the
	// listen ends as when a modern upstream ends its listen.
	stop := context.AfterFunc(fctx, func() {
		if ctx.Err() == nil {
			set.end()
		}
	})
	set.releases = append(set.releases, func() { stop() })
	part := t.filter
	remove := g.ls.hub.add(name, &hubSub{cred: upstream.CredentialKey(t.opts), filter: &part, emit: func(method string, params json.RawMessage) {
		onEvent(name, method, params)
	}})
	set.releases = append(set.releases, remove)
	for _, uri := range part.ResourceSubscriptions {
		unsubscribe, err := g.legacySubscribe(ctx, t.server, t.opts, uri)
		if err != nil {
			return g.failure(&Operation{Method: mcp.MethodResourcesSubscribe}, name, err).Fault
		}
		// Released before the follow (releases run last first), so the
		// unsubscribe reaches the session the subscribe was made on.
		set.releases = append(set.releases, unsubscribe)
	}
	return nil
}

// maxListeners is the per-caller listener capacity.
func (g *Gateway) maxListeners() int {
	if g.cfg.MaxListenersPerCaller > 0 {
		return g.cfg.MaxListenersPerCaller
	}
	return DefaultMaxListenersPerCaller
}

// listenerHolder names whose capacity a listen counts against: the caller's
// user when it has one, else its binding.
func listenerHolder(op *Operation) string {
	if op.Caller != nil && op.Caller.UserID != "" {
		return "user:" + op.Caller.UserID
	}
	return "binding:" + op.Caller.Binding()
}

// listenerCounts counts the upstream listeners each caller holds. Entries
// exist only while a caller holds some: at most one per caller with an
// open listen.
type listenerCounts struct {
	mu   sync.Mutex
	held map[string]int
}

// reserve takes n listeners of holder's capacity max, all or none; release
// gives them back (once).
func (l *listenerCounts) reserve(holder string, n, max int) (release func(), ok bool) {
	if n == 0 {
		return func() {}, true
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.held[holder]+n > max {
		return nil, false
	}
	if l.held == nil {
		l.held = map[string]int{}
	}
	l.held[holder] += n
	var once sync.Once
	return func() {
		once.Do(func() {
			l.mu.Lock()
			defer l.mu.Unlock()
			if l.held[holder] -= n; l.held[holder] <= 0 {
				delete(l.held, holder)
			}
		})
	}, true
}
