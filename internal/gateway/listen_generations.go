package gateway

import (
	"slices"
	"sync"
)

// Listens is the listen state that outlives one Gateway: when the running
// config changes, a new Gateway is built over the new policy, catalog and
// servers, and the listens running on the old one either move to it
// (TakeOver) or end. It also holds what must be counted across configs:
// the hub through which listens follow legacy upstream sessions (and their
// shared resources/subscribe), and each caller's upstream listener count.
type Listens struct {
	hub       hub
	listeners listenerCounts
	shared    sharedListens // modern upstream listens, shared by listens

	mu      sync.Mutex
	runs    map[*listenRun]struct{} // the listens running now
	current *Gateway                // the newest gateway to TakeOver; nil before any
	closed  bool                    // End was called: no listen may start
}

// NewListens returns an empty Listens, for Config.Listens.
func NewListens() *Listens { return &Listens{} }

// listenRun is one running listen, as Listens sees it.
type listenRun struct {
	op      Operation // a copy: binding() caches in it
	servers []string  // the servers whose views it follows (visible at its start)
	cancel  func()    // ends the listen
	d       *delivery

	mu      sync.Mutex
	g       *Gateway       // the gateway it runs on now
	targets []listenTarget // its upstream listeners, described over g's servers
}

// current returns the gateway the listen runs on and its targets there.
func (r *listenRun) current() (*Gateway, []listenTarget) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.g, r.targets
}

// keptBy reports whether the listen may go on under next: every server it
// follows is still there with the same upstream client (so its upstream
// listeners, sessions and subscriptions are still the right ones), and the
// caller sees exactly the same servers under next's policy.
func (r *listenRun) keptBy(next *Gateway) bool {
	g, _ := r.current()
	return g.keeps(next, &r.op, r.servers)
}

// keeps reports whether what op follows over servers (as g serves them)
// goes on under next: every server is still there with the same upstream
// client, and op's caller sees exactly the same servers under next.
func (g *Gateway) keeps(next *Gateway, op *Operation, servers []string) bool {
	for _, name := range servers {
		was, now := g.servers[name], next.servers[name]
		if was == nil || now == nil || was.Client != now.Client {
			return false
		}
	}
	return slices.Equal(next.visible(op), servers)
}

// Keeps reports whether a legacy session of op's caller and scope goes on
// when next replaces g, by the rule a listen moves by (TakeOver): every
// server the caller sees under g is served by next with the same upstream
// client (so its upstream sessions, listeners and subscriptions are still
// the right ones), and the caller sees exactly the same servers under next.
func (g *Gateway) Keeps(next *Gateway, op Operation) bool {
	if g == next {
		return true
	}
	return g.keeps(next, &op, g.visible(&op))
}

// rebind moves the listen to next: its targets now name next's servers
// (the same clients), and its delivery reads views through next's policy
// and catalog, checking each against the last one delivered.
func (r *listenRun) rebind(next *Gateway) {
	_, old := r.current()
	multi := len(r.servers) > 1
	targets := make([]listenTarget, len(old))
	for i, t := range old {
		s := next.servers[t.server.Name]
		t.server, t.opts = s, next.options(s, &r.op, multi)
		targets[i] = t
	}
	r.mu.Lock()
	r.g, r.targets = next, targets
	r.mu.Unlock()
	r.d.rebind(next, next.query(&r.op, r.servers), targets)
}

// currentOr is the newest gateway to TakeOver, else g.
func (ls *Listens) currentOr(g *Gateway) *Gateway {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if ls.current != nil {
		return ls.current
	}
	return g
}

// register records a listen that is starting; false once End was called.
// A listen that began on a gateway a newer one has taken over from moves
// to it now, or ends.
func (ls *Listens) register(r *listenRun) bool {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if ls.closed {
		return false
	}
	if ls.current != nil {
		ls.moveLocked(r, ls.current)
	}
	if ls.runs == nil {
		ls.runs = map[*listenRun]struct{}{}
	}
	ls.runs[r] = struct{}{}
	return true
}

// unregister forgets a listen that ended.
func (ls *Listens) unregister(r *listenRun) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	delete(ls.runs, r)
}

// moveLocked moves r to next when next keeps it (listenRun.keptBy), else
// ends it; it reports whether r goes on.
func (ls *Listens) moveLocked(r *listenRun, next *Gateway) bool {
	if g, _ := r.current(); g == next {
		return true
	}
	if !r.keptBy(next) {
		r.cancel()
		return false
	}
	r.rebind(next)
	return true
}

// TakeOver makes g, built for a newer config over the same Listens, the
// gateway every listen runs on. A listen whose followed servers g serves
// with the same upstream clients, and whose caller sees the same servers,
// moves to g: its upstream listeners stay open and its views are checked
// against the last ones delivered, so a change of what the caller sees
// (a tool filter) is told as a list change and nothing else is. Every other
// listen ends (its caller may listen again, on g). It reports how many
// listens moved and how many ended.
func (g *Gateway) TakeOver() (kept, ended int) {
	ls := g.ls
	ls.mu.Lock()
	defer ls.mu.Unlock()
	ls.current = g
	for r := range ls.runs {
		if ls.moveLocked(r, g) {
			kept++
		} else {
			ended++
		}
	}
	return kept, ended
}

// End ends every listen, on every gateway over ls, and refuses new ones:
// the gateway is shutting down.
func (ls *Listens) End() {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	ls.closed = true
	for r := range ls.runs {
		r.cancel()
	}
}
