package app

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/mcpgw/mcpgw/internal/config"
	"github.com/mcpgw/mcpgw/internal/front"
	"github.com/mcpgw/mcpgw/internal/panics"
	"github.com/mcpgw/mcpgw/internal/upstream"
)

// Health prober bounds.
const (
	// healthConcurrency bounds the checks running at once, background and
	// on-demand together.
	healthConcurrency = 8
	// healthFresh is how long a check's result answers an on-demand check
	// instead of a new one, so callers of /v1/mcp/server/health cannot make
	// the gateway ping an upstream more often than this.
	healthFresh = 2 * time.Second
)

// pinger is what the prober asks: an upstream client.
type pinger interface {
	Ping(ctx context.Context) error
}

// healthTarget is one server as the prober knows it.
type healthTarget struct {
	client pinger
	// skip, when set, is why the server is never checked (its credential
	// comes from each caller, so the gateway has none to check it with).
	skip string
	// ownCredential says the config gives the gateway a credential for the
	// server; without one, an upstream asking for authentication says
	// nothing about its health.
	ownCredential bool
	last          front.ServerHealth
	// running is closed when the check in flight ends; nil when none is.
	running chan struct{}
}

// prober checks every configured server in the background, every interval,
// each check bounded by timeout and at most healthConcurrency at once, and
// remembers each one's last result. A check runs on the server's own
// upstream client (Client.Ping), so it never starts a process: a stdio
// server whose child is not running is reported unknown.
type prober struct {
	log      *slog.Logger
	interval time.Duration // 0: no background checks
	timeout  time.Duration
	now      func() time.Time
	sem      chan struct{}

	mu      sync.Mutex
	targets map[string]*healthTarget // by server name
	closed  bool
	started bool

	ctx    context.Context // ends at close; every check runs within it
	cancel context.CancelFunc
	kick   chan struct{} // one slot: run a round now
	wg     sync.WaitGroup
}

// newProber returns a prober with no server; start begins the background
// rounds, close ends them and every check.
func newProber(log *slog.Logger, hs config.HealthSettings) *prober {
	if hs.Timeout <= 0 {
		hs.Timeout = config.DefaultHealthCheckTimeout
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &prober{log: log, interval: hs.Interval, timeout: hs.Timeout, now: time.Now,
		sem: make(chan struct{}, healthConcurrency), targets: map[string]*healthTarget{},
		ctx: ctx, cancel: cancel, kick: make(chan struct{}, 1)}
}

// set makes servers (with their clients) the prober's targets: a server
// whose client is unchanged keeps its last result; a new or changed one
// starts unknown and is checked at the next round, which set brings
// forward; a removed one is forgotten (a check of it still running is
// ignored when it ends).
func (p *prober) set(servers []config.Server, clients map[string]*upstream.Client) {
	p.mu.Lock()
	next := make(map[string]*healthTarget, len(servers))
	changed := false
	for _, s := range servers {
		c := clients[s.Name]
		if c == nil {
			continue
		}
		if t := p.targets[s.Name]; t != nil && t.client == pinger(c) {
			next[s.Name] = t
			continue
		}
		t := &healthTarget{client: c, last: front.ServerHealth{Status: front.HealthUnknown},
			ownCredential: s.AuthType != "" && s.AuthType != config.AuthNone || len(s.StaticHeaders) > 0}
		if s.AuthType == config.AuthOAuthDelegate {
			t.skip = "not checked: the server's credential comes from each caller"
		}
		next[s.Name] = t
		changed = true
	}
	p.targets = next
	started := p.started
	p.mu.Unlock()
	if changed && started {
		p.poke()
	}
}

// poke schedules a round now.
func (p *prober) poke() {
	select {
	case p.kick <- struct{}{}:
	default:
	}
}

// start runs the background rounds until close: one every interval,
// the first one interval after start (so a gateway starting does not open
// a session with every upstream at the moment its first callers do), and
// one as soon as set changed the targets. Nothing runs when the interval
// is 0; until the first round, servers are unknown (an on-demand check
// answers at once).
func (p *prober) start() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.interval <= 0 || p.started || p.closed {
		return
	}
	p.started = true
	p.wg.Add(1)
	panics.Go(p.log, "health prober", func() {
		defer p.wg.Done()
		t := time.NewTicker(p.interval)
		defer t.Stop()
		for {
			select {
			case <-p.ctx.Done():
				return
			case <-t.C:
			case <-p.kick:
			}
			p.round()
		}
	}, nil)
}

// round starts a check of every target that has none running.
func (p *prober) round() {
	p.mu.Lock()
	names := make([]string, 0, len(p.targets))
	for n := range p.targets {
		names = append(names, n)
	}
	p.mu.Unlock()
	for _, n := range names {
		p.begin(n)
	}
}

// begin starts a check of the target named name unless one is running, and
// returns the channel closed when the running check ends; nil when there is
// no such target or the prober is closed.
func (p *prober) begin(name string) chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	t := p.targets[name]
	if t == nil || p.closed {
		return nil
	}
	if t.running != nil {
		return t.running
	}
	done := make(chan struct{})
	t.running = done
	p.wg.Add(1)
	finish := func(h front.ServerHealth, verdict bool) {
		p.mu.Lock()
		if verdict && p.targets[name] == t { // not replaced or removed meanwhile
			t.last = h
		}
		t.running = nil
		p.mu.Unlock()
		close(done)
		p.wg.Done()
	}
	panics.Go(p.log, "health check", func() { finish(p.check(t)) }, func() {
		finish(front.ServerHealth{Status: front.HealthUnknown, LastCheck: p.now(), Error: "internal error while checking"}, true)
	})
	return done
}

// check runs one check of t, waiting for a concurrency slot first; verdict
// is false when the prober closed meanwhile (the result says nothing about
// the server and is not kept).
func (p *prober) check(t *healthTarget) (h front.ServerHealth, verdict bool) {
	if t.skip != "" {
		return front.ServerHealth{Status: front.HealthUnknown, Error: t.skip}, true
	}
	select {
	case p.sem <- struct{}{}:
	case <-p.ctx.Done():
		return front.ServerHealth{}, false
	}
	defer func() { <-p.sem }()
	ctx, cancel := context.WithTimeout(p.ctx, p.timeout)
	defer cancel()
	err := t.client.Ping(ctx)
	h = front.ServerHealth{Status: front.HealthHealthy, LastCheck: p.now()}
	switch {
	case err == nil:
	case errors.Is(err, upstream.ErrNotStarted): // nothing was asked: no check to date, ask again at will
		h = front.ServerHealth{Status: front.HealthUnknown}
	case p.ctx.Err() != nil: // closing: not the server's fault
		return front.ServerHealth{}, false
	default:
		cl := upstream.Classify(err)
		h.Status, h.Error = front.HealthUnhealthy, string(cl.Fault)+": "+cl.Message
		if !t.ownCredential && (cl.Fault == upstream.FaultAuthRequired || cl.Fault == upstream.FaultForbidden) {
			h.Status, h.Error = front.HealthUnknown, h.Error+"; the gateway has no credential of its own to check it with"
		}
	}
	return h, true
}

// health returns the last result for the server named name (unknown when
// it was never checked or is not configured).
func (p *prober) health(name string) front.ServerHealth {
	p.mu.Lock()
	defer p.mu.Unlock()
	if t := p.targets[name]; t != nil {
		return t.last
	}
	return front.ServerHealth{Status: front.HealthUnknown}
}

// statuses returns every target's last status, by server name.
func (p *prober) statuses() map[string]string {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make(map[string]string, len(p.targets))
	for n, t := range p.targets {
		out[n] = t.last.Status
	}
	return out
}

// checkNow checks the named servers now, each unless a check of it ended
// within healthFresh, whatever its verdict (a skipped one, which costs
// nothing, has no LastCheck and is asked again;
// a check already running is waited for rather than doubled), and returns their results once all ended or ctx ends (then the
// unfinished ones answer with their previous result).
func (p *prober) checkNow(ctx context.Context, names []string) map[string]front.ServerHealth {
	var waits []chan struct{}
	for _, n := range names {
		p.mu.Lock()
		t := p.targets[n]
		fresh := t != nil && t.running == nil && !t.last.LastCheck.IsZero() && p.now().Sub(t.last.LastCheck) < healthFresh
		p.mu.Unlock()
		if t == nil || fresh {
			continue
		}
		if done := p.begin(n); done != nil {
			waits = append(waits, done)
		}
	}
	for _, done := range waits {
		select {
		case <-done:
		case <-ctx.Done():
		}
	}
	out := make(map[string]front.ServerHealth, len(names))
	for _, n := range names {
		out[n] = p.health(n)
	}
	return out
}

// close ends the background rounds and every check, and waits for them.
func (p *prober) close() {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	p.cancel()
	p.wg.Wait()
}

// healthOf is the health prober's last result for the server a route key
// (its name, server_id or alias) selects in the running config; unknown
// when it names no server or the server was never checked. It is the
// /v1/mcp/server routes' shared.serverHealth.
func (a *App) healthOf(key string) front.ServerHealth {
	name, ok := a.cur.Load().reg.resolve(key)
	if !ok {
		return front.ServerHealth{Status: front.HealthUnknown}
	}
	return a.prober.health(name)
}
