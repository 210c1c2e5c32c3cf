package gateway

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	"github.com/mcpgw/mcpgw/internal/catalog"
	"github.com/mcpgw/mcpgw/internal/mcp"
	"github.com/mcpgw/mcpgw/internal/shallow"
)

// maxPendingEvents bounds the events (other than list changes, which are
// coalesced) waiting for one listen's delivery; beyond it they are dropped.
const maxPendingEvents = 64

// listKinds are the list-change notifications a listen may deliver, in the
// order it checks them, with the list methods making up each one's view.
var listKinds = [...]struct {
	notification string
	methods      []string
}{
	{mcp.NotifToolsListChanged, []string{mcp.MethodToolsList}},
	{mcp.NotifPromptsListChanged, []string{mcp.MethodPromptsList}},
	{mcp.NotifResourcesListChanged, []string{mcp.MethodResourcesList, mcp.MethodResourcesTemplatesList}},
}

// listKindOf returns the index in listKinds of a list-change notification.
func listKindOf(method string) (int, bool) {
	for i, k := range listKinds {
		if k.notification == method {
			return i, true
		}
	}
	return 0, false
}

// delivery hands one listen's events to its caller, after the
// acknowledgement and in the caller's view: a list change is delivered only
// when what the caller sees of that list changed (a digest of its visible
// view, taken before set-up and after each change), so a change it may not
// see stays hidden and a change made while the listen was being set up is
// not lost. Events arrive on upstream goroutines and are only queued there;
// the listen's own goroutine (run) waits for them, and fetches views, calls
// the Listener's Emit and serves its Tend through shallow.Do (the work on a
// goroutine of its own, so the held one keeps a 2 KB stack).
type delivery struct {
	g      *Gateway // the gateway the listen began on: its logger, for panics
	ctx    context.Context
	cancel context.CancelFunc
	filter *Filter
	l      *Listener
	wake   chan struct{}

	mu sync.Mutex
	// cur and q are the gateway the listen runs on now and the caller's
	// query there: a listen re-bound to a newer config (rebind) reads its
	// views through the new policy and catalog.
	cur      *Gateway
	q        catalog.Query
	queue    []pendingEvent
	dropped  bool
	draining bool // deliver what is pending, then end
	started  bool // acknowledged: start was called
	// changed holds, per list kind, the servers whose list may have
	// changed: true when the upstream said so, false for a check of the
	// view alone.
	changed [len(listKinds)]map[string]bool
	// views is the caller's view of each list followed ("" unknown): a
	// few entries (servers times kinds followed), searched in order; a
	// map would hold a bucket group of several hundred bytes per listen.
	views []viewEntry
}

// viewEntry is the caller's view of one server's list kind.
type viewEntry struct {
	viewKey
	digest string
}

// viewLocked returns the view recorded for key ("" when none); d.mu is held.
func (d *delivery) viewLocked(key viewKey) string {
	for i := range d.views {
		if d.views[i].viewKey == key {
			return d.views[i].digest
		}
	}
	return ""
}

// setViewLocked records the view for key; d.mu is held.
func (d *delivery) setViewLocked(key viewKey, digest string) {
	for i := range d.views {
		if d.views[i].viewKey == key {
			d.views[i].digest = digest
			return
		}
	}
	d.views = append(d.views, viewEntry{key, digest})
}

type pendingEvent struct {
	method string
	params json.RawMessage
	at     time.Time // when it arrived
}

type viewKey struct {
	server string
	kind   int
}

func (g *Gateway) newDelivery(ctx context.Context, cancel context.CancelFunc, op *Operation, servers []string, honoured *Filter, l *Listener) *delivery {
	wake := l.Wake // one channel for the listen's work and its caller's (Listener.Wake)
	if wake == nil {
		wake = make(chan struct{}, 1)
	}
	return &delivery{g: g, cur: g, ctx: ctx, cancel: cancel, q: g.query(op, servers), filter: honoured, l: l, wake: wake}
}

// current returns the gateway the listen runs on now and its query there.
func (d *delivery) current() (*Gateway, catalog.Query) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.cur, d.q
}

// rebind moves the delivery to next (see Listens): from now on views are
// read through next, and every followed view is checked against the last
// one delivered, so a change of what the caller sees (a tool filter
// changed) is told and nothing else is. Before the delivery has started
// (the listen is not acknowledged yet) the check is left to start.
func (d *delivery) rebind(next *Gateway, q catalog.Query, targets []listenTarget) {
	d.mu.Lock()
	d.cur, d.q = next, q
	started := d.started
	if started {
		for _, t := range targets {
			for _, k := range t.kinds() {
				d.markLocked(k, t.server.Name, false)
			}
		}
	}
	d.mu.Unlock()
	if started {
		d.signal()
	}
}

// kinds lists the list kinds a target's filter follows.
func (t *listenTarget) kinds() []int {
	var out []int
	for i, on := range [...]bool{t.filter.ToolsListChanged, t.filter.PromptsListChanged, t.filter.ResourcesListChanged} {
		if on {
			out = append(out, i)
		}
	}
	return out
}

// baseline records the caller's view of every list the targets follow,
// concurrently, before their listeners are opened.
func (d *delivery) baseline(targets []listenTarget) {
	var wg sync.WaitGroup
	var mu sync.Mutex
	n := 0
	for _, t := range targets {
		n += len(t.kinds())
	}
	d.views = make([]viewEntry, 0, n) // exactly the views followed
	for _, t := range targets {
		for _, k := range t.kinds() {
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer d.g.recovered("listen view", d.cancel)
				v := d.view(t.server.Name, k)
				mu.Lock()
				d.setViewLocked(viewKey{t.server.Name, k}, v)
				mu.Unlock()
			}()
		}
	}
	wg.Wait()
}

// view is a digest of the caller's view of one server's list kind; "" when
// it cannot be fetched.
func (d *delivery) view(server string, kind int) string {
	cur, q := d.current()
	ctx, cancel := context.WithTimeout(d.ctx, cur.cfg.ListTimeout)
	defer cancel()
	out := ""
	for _, m := range listKinds[kind].methods {
		v, err := cur.cfg.Catalog.Digest(ctx, q, server, m)
		if err != nil {
			return ""
		}
		out += v
	}
	return out
}

// event takes one upstream event for the listen; it never blocks.
func (d *delivery) event(server, method string, params json.RawMessage) {
	defer d.g.recovered("listen event", d.cancel) // on an upstream goroutine
	if !d.filter.wants(method, params) {
		return
	}
	d.mu.Lock()
	if k, ok := listKindOf(method); ok {
		// The cached lists a change made stale were dropped once where it
		// arrived: by the shared upstream listen (runShared) for a modern
		// upstream, by the hub's subscriber (internal/app) for a legacy one.
		d.markLocked(k, server, true)
	} else if len(d.queue) < maxPendingEvents {
		d.queue = append(d.queue, pendingEvent{method: method, params: withoutSubscriptionID(params), at: time.Now()})
	} else if !d.dropped {
		d.dropped = true
		d.g.cfg.Logger.Warn("listen events dropped: the caller is not keeping up", "max_pending", maxPendingEvents)
	}
	d.mu.Unlock()
	d.signal()
}

func (d *delivery) markLocked(kind int, server string, fromUpstream bool) {
	if d.changed[kind] == nil {
		d.changed[kind] = map[string]bool{}
	}
	d.changed[kind][server] = d.changed[kind][server] || fromUpstream
}

func (d *delivery) signal() {
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

// start begins delivery, after the acknowledgement (and again after the
// listeners are set up again): every followed view is marked for a check
// against its baseline (a change made while the listeners were being
// opened), then run delivers each event as it comes.
func (d *delivery) start(targets []listenTarget) {
	d.mu.Lock()
	for _, t := range targets {
		for _, k := range t.kinds() {
			d.markLocked(k, t.server.Name, false)
		}
	}
	d.started = true // under mu: rebind reads it
	d.mu.Unlock()
	d.signal()
}

// run delivers for the listen's own goroutine (the one that called
// ListenFilter: no goroutine of its own per listen), and serves the
// Listener's Tend there, until ctx ends, Tend refuses or the Listener's
// Done closes (false), or stop closes (true). Nothing is emitted once run
// has returned.
func (d *delivery) run(stop <-chan struct{}) (stopped bool) {
	stopped, _ = d.runUntil(stop, nil, nil)
	return stopped
}

// runUntil is run that also returns true once ended reports true when it
// is woken (nil: never), and returns, with what it found, when tokens
// reports that the caller's vault token changed or was deleted.
func (d *delivery) runUntil(stop <-chan struct{}, ended func() bool, tokens <-chan *tokenCheck) (stopped bool, c *tokenCheck) {
	for {
		select {
		case <-d.ctx.Done():
			return false, nil
		case <-stop:
			return true, nil
		case tc := <-tokens:
			return false, tc
		case <-d.l.Done:
			d.cancel()
			return false, nil
		case <-d.wake:
		}
		if ended != nil && ended() {
			return true, nil
		}
		if !d.work() {
			return false, nil
		}
	}
}

// work serves the Listener's Tend when it shares the wake channel, then
// delivers what is pending, on a goroutine of its own (internal/shallow:
// the listen's goroutine only waits); false when the listen ended.
func (d *delivery) work() (ok bool) {
	shallow.Do(func() {
		defer d.g.recovered("listen delivery", d.cancel)
		// the caller's wakes come on the same channel
		ok = (d.l.Wake == nil || d.tend()) && d.step()
	})
	return ok
}

// ack acknowledges the listen with the honoured filter; false when the
// Listener refuses (the listen ends). Ack runs once: it is let go, so a
// held listen does not keep the closure and what it captured.
func (d *delivery) ack() bool {
	b, _ := json.Marshal(d.filter)
	ack := d.l.Ack
	d.l.Ack = nil
	return ack(b)
}

// watchTokens watches the caller's tokens on cur's upstreams (targets)
// while delivery runs (runUntil's tokens) until stop; nil and a stop that
// does nothing when there is nothing to watch (no context nor channel is
// held for it).
func (d *delivery) watchTokens(cur *Gateway, op *Operation, targets []listenTarget) (tokens <-chan *tokenCheck, stop context.CancelFunc) {
	if cur.cfg.CallerTokens == nil || !holdsVaultToken(op, targets) {
		return nil, func() {}
	}
	wctx, stop := context.WithCancel(d.ctx)
	return cur.watchCallerTokens(wctx, op, targets), stop
}

// pause delivers for a while (between set-ups); false when ctx ended.
func (d *delivery) pause(wait time.Duration) bool {
	stop := make(chan struct{})
	t := time.AfterFunc(wait, func() { close(stop) })
	defer t.Stop()
	return d.run(stop)
}

// drain delivers what is pending: the events an upstream sent before ending
// its listen still reach the caller.
func (d *delivery) drain() {
	defer d.g.recovered("listen delivery", d.cancel)
	d.mu.Lock()
	d.draining = true
	d.mu.Unlock()
	d.step()
}

// step delivers what is queued and the list changes marked; false when the
// listen ended meanwhile.
func (d *delivery) step() bool {
	if !d.settle() {
		return false
	}
	d.mu.Lock()
	queue, changed := d.queue, d.changed
	d.queue, d.changed = nil, [len(listKinds)]map[string]bool{}
	d.mu.Unlock()
	for _, ev := range queue {
		d.send(ev.method, ev.params, ev.at)
	}
	for k, servers := range changed {
		if len(servers) > 0 && d.viewChanged(k, servers) {
			d.refreshOthers(k, servers)
			d.send(listKinds[k].notification, json.RawMessage(`{}`), time.Now())
		}
	}
	return d.ctx.Err() == nil
}

// listChangeSettle is how long delivery waits after an upstream announces a
// list change before it compares views, so that one change several
// upstreams announce (servers sharing a backend, a fan-out) is told once.
const listChangeSettle = 100 * time.Millisecond

// settle waits listChangeSettle when an upstream announced a list change
// (not for a check alone, nor while draining); false when the listen ended
// meanwhile.
func (d *delivery) settle() bool {
	d.mu.Lock()
	announced := false
	for _, servers := range d.changed {
		for _, fromUpstream := range servers {
			announced = announced || fromUpstream
		}
	}
	draining := d.draining
	d.mu.Unlock()
	if !announced || draining {
		return true
	}
	t := time.NewTimer(listChangeSettle)
	defer t.Stop()
	select {
	case <-d.ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// viewChanged refreshes the caller's view of the servers' lists of kind and
// reports whether it changed. A server whose upstream reported a change
// counts as changed when its view cannot be compared (unknown before or
// now); a check alone needs a difference.
func (d *delivery) viewChanged(kind int, servers map[string]bool) bool {
	changed := false
	for server, fromUpstream := range servers {
		now := d.view(server, kind)
		key := viewKey{server, kind}
		d.mu.Lock()
		before := d.viewLocked(key)
		d.setViewLocked(key, now)
		d.mu.Unlock()
		if now != before || (fromUpstream && now == "") {
			changed = true
		}
	}
	return changed
}

// refreshOthers refreshes, concurrently, the caller's view of kind on every
// followed server not in told, before a change is told: a change another
// upstream announces a moment later (servers sharing a backend) is then
// already in the caller's view and is not told twice. It runs only when a
// change is told, and the catalog shares each fetch among the listens
// making it.
func (d *delivery) refreshOthers(kind int, told map[string]bool) {
	d.mu.Lock()
	var others []string
	for _, v := range d.views {
		if v.kind == kind && !told[v.server] {
			others = append(others, v.server)
		}
	}
	d.mu.Unlock()
	var wg sync.WaitGroup
	for _, server := range others {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer d.g.recovered("listen view", d.cancel)
			now := d.view(server, kind)
			d.mu.Lock()
			d.setViewLocked(viewKey{server, kind}, now)
			d.mu.Unlock()
		}()
	}
	wg.Wait()
}

// send emits one event unless the listen has ended; an event the
// Listener refuses ends it.
func (d *delivery) send(method string, params json.RawMessage, at time.Time) {
	if d.ctx.Err() == nil && !d.l.Emit(method, params, at) {
		d.cancel()
	}
}

// tend serves the Listener's Tend; false (the listen ended) when it refuses.
func (d *delivery) tend() bool {
	if d.ctx.Err() != nil {
		return false
	}
	if d.l.Tend != nil && !d.l.Tend() {
		d.cancel()
		return false
	}
	return true
}
