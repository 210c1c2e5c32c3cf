package catalog

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/mcpgw/mcpgw/internal/upstream"
)

// Defaults of the per-server listing breaker and of aggregate patience.
const (
	// DefaultBreakerThreshold is how many consecutive listing or probe
	// failures (timeouts, unreachable) open a server's breaker.
	DefaultBreakerThreshold = 1
	// DefaultBreakerCoolOff is how long an opened breaker skips its server
	// before one request probes it again; it doubles on every failed probe.
	DefaultBreakerCoolOff = 30 * time.Second
	// DefaultBreakerMaxCoolOff caps the doubling cool-off.
	DefaultBreakerMaxCoolOff = 5 * time.Minute
	// DefaultPatience is how long an aggregate waits for one server's list
	// before answering without it; the fetch finishes in the background.
	DefaultPatience = 5 * time.Second
	// DefaultMaxBackground bounds the fetches left running in the background
	// after an aggregate stopped waiting for them.
	DefaultMaxBackground = 64
)

// OutcomeSkipped is the outcome status of a server whose breaker is open:
// the aggregate did not ask it, because it recently failed or timed out.
const OutcomeSkipped = "skipped"

// ErrSkipped is a listing or probe a server's open breaker did not let through.
var ErrSkipped = errors.New("server skipped: it recently failed or timed out")

// errImpatient is a listing the aggregate stopped waiting for.
var errImpatient = errors.New("server did not answer within the aggregate's patience")

// breakers holds one breaker per configured server; the map only ever holds
// configured server names, so it is bounded by the configuration.
type breakers struct {
	mu        sync.Mutex
	m         map[string]*breaker
	threshold int
	coolOff   time.Duration
	maxCool   time.Duration
}

// breaker is one server's state: closed (openUntil zero), open until
// openUntil, or half-open while probing.
type breaker struct {
	fails     int
	openUntil time.Time
	cool      time.Duration // the current cool-off, doubled by each failed probe
	probing   bool
	// slowOK: the server answered after an aggregate stopped waiting for it;
	// aggregates wait for it until it fails.
	slowOK bool
	// answered: the server has answered at least once; until then it may be
	// starting (a stdio process, a package download) and is waited for.
	answered bool
}

func newBreakers(threshold int, coolOff, maxCool time.Duration) *breakers {
	return &breakers{m: map[string]*breaker{}, threshold: threshold, coolOff: coolOff, maxCool: maxCool}
}

// admit says whether a listing or probe may go to server now. When the
// breaker's cool-off has passed, exactly one caller is admitted as the probe
// (probe true) while the others keep being skipped.
func (b *breakers) admit(server string, now time.Time) (ok, probe bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	br := b.m[server]
	if br == nil || br.openUntil.IsZero() {
		return true, false
	}
	if br.probing || now.Before(br.openUntil) {
		return false, false
	}
	br.probing = true
	return true, true
}

// open reports whether server's breaker is open or half-open: a caller it
// would not admit now is skipped rather than made to wait for the probe.
func (b *breakers) open(server string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	br := b.m[server]
	return br != nil && !br.openUntil.IsZero()
}

// record reports how an admitted listing or probe went. Only faults of the
// server itself count (timeout, unreachable); an answer of any kind, even an
// error or a refusal of the caller's credentials, shows the server is alive.
// A caller that went away (ctx done) tells nothing.
func (b *breakers) record(ctx context.Context, server string, probe bool, err error, now time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	br := b.m[server]
	if br == nil {
		br = &breaker{}
		b.m[server] = br
	}
	if probe {
		br.probing = false
	}
	switch {
	case errors.Is(ctx.Err(), context.Canceled) || errors.Is(err, errImpatient):
		// no verdict; an interrupted probe lets the next one try
	case err == nil || !serverFault(err):
		*br = breaker{slowOK: br.slowOK, answered: true}
	case probe:
		br.slowOK = false
		br.cool = min(2*br.cool, b.maxCool)
		br.openUntil = now.Add(br.cool)
	default:
		br.slowOK = false
		br.fails++
		if br.fails >= b.threshold && br.openUntil.IsZero() {
			br.cool = b.coolOff
			br.openUntil = now.Add(br.cool)
		}
	}
}

// markSlow records that server answered, but only after an aggregate had
// stopped waiting for it: later aggregates wait for it (up to the listing
// timeout) until it fails.
func (b *breakers) markSlow(server string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if br := b.m[server]; br != nil && br.openUntil.IsZero() {
		br.slowOK = true
	}
}

// impatient reports whether an aggregate may stop waiting for server after
// its patience: the server has answered before (so it is not merely
// starting) and is not known to be slow but alive.
func (b *breakers) impatient(server string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	br := b.m[server]
	return br != nil && br.answered && !br.slowOK
}

// serverFault reports whether err says the server itself is not answering.
func serverFault(err error) bool {
	switch upstream.Classify(err).Fault {
	case upstream.FaultTimeout, upstream.FaultUnreachable:
		return true
	}
	return false
}

// Admit asks server's breaker whether a listing or discovery probe may go to
// it now. When ok, done must be called with the probe's outcome (ctx is the
// probe's context); when not, the server recently failed or timed out and is
// skipped until its cool-off passes.
func (c *Catalog) Admit(server string) (done func(ctx context.Context, err error), ok bool) {
	ok, probe := c.breakers.admit(server, c.now())
	if !ok {
		return nil, false
	}
	return func(ctx context.Context, err error) { c.breakers.record(ctx, server, probe, err, c.now()) }, true
}
