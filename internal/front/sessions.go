package front

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpgw/mcpgw/internal/jsonrpc"
	"github.com/mcpgw/mcpgw/internal/seal"
)

// SessionPurpose is the seal purpose of legacy session ids.
const SessionPurpose = "mcp-session"

// sessionTTL bounds a legacy session's life.
const sessionTTL = 24 * time.Hour

// Defaults of SessionConfig.
const (
	DefaultMaxLiveSessions    = 10000
	DefaultMaxDeletedSessions = 100000
	DefaultSessionIdle        = 30 * time.Minute
	DefaultRecheckInterval    = 10 * time.Second
	DefaultMaxSSEConns        = 10000
)

// SessionConfig bounds the legacy sessions and long-lived streams one
// replica holds; a zero field takes its default.
type SessionConfig struct {
	// MaxLive caps the legacy sessions live on this replica (default
	// DefaultMaxLiveSessions); opening one more ends the least recently
	// used.
	MaxLive int
	// MaxDeleted caps the remembered ids of ended sessions (default
	// DefaultMaxDeletedSessions); beyond it the oldest is forgotten.
	MaxDeleted int
	// IdleTimeout ends a legacy session that had no request and no open
	// GET stream for this long (default DefaultSessionIdle).
	IdleTimeout time.Duration
	// RecheckInterval is how often a long-lived stream (GET stream,
	// /mcp/sse, subscriptions/listen) re-authenticates its caller (default
	// DefaultRecheckInterval).
	RecheckInterval time.Duration
	// MaxSSEConns caps open /mcp/sse connections (default
	// DefaultMaxSSEConns); beyond it /mcp/sse answers 503.
	MaxSSEConns int
}

func (c SessionConfig) withDefaults() SessionConfig {
	if c.MaxLive <= 0 {
		c.MaxLive = DefaultMaxLiveSessions
	}
	if c.MaxDeleted <= 0 {
		c.MaxDeleted = DefaultMaxDeletedSessions
	}
	if c.IdleTimeout <= 0 {
		c.IdleTimeout = DefaultSessionIdle
	}
	if c.RecheckInterval <= 0 {
		c.RecheckInterval = DefaultRecheckInterval
	}
	if c.MaxSSEConns <= 0 {
		c.MaxSSEConns = DefaultMaxSSEConns
	}
	return c
}

// claims is what a sealed legacy session id carries. Any replica with the
// same salt key can open it, so a session survives landing on another
// replica; a forged or foreign id does not open.
type claims struct {
	Binding string          `json:"b"` // the caller it belongs to
	Scope   string          `json:"s"` // the URL scope it was opened on
	Version string          `json:"v"` // negotiated revision
	Caps    json.RawMessage `json:"c"` // the client's capabilities
	Nonce   []byte          `json:"n"` // makes every id unique
}

// live is the part of a session only the replica serving it holds: requests
// in flight and notifications being dispatched.
type live struct {
	claims   claims
	inflight inflight
	notifs   sync.WaitGroup // notifications accepted and still dispatching
	stream   *streamSink    // the standalone GET stream, if open here
	done     chan struct{}  // closed by end
	ended    sync.Once
	used     atomic.Int64 // unix nanoseconds of the last request

	// Background listens following the session (list changes on its GET
	// stream, resources/subscribe), ended with the session.
	work  sync.WaitGroup
	subMu sync.Mutex
	subs  map[string]*subscription // subscribed URI → its follow

	// Requests this gateway sent to the caller, waiting for its answers.
	pmu     sync.Mutex
	pending map[string]chan *jsonrpc.Message
	seq     atomic.Int64
}

// end ends the session here: its requests waiting on the caller and its
// background listens stop. It may be called more than once.
func (l *live) end() { l.ended.Do(func() { close(l.done) }) }

// ask sends a server→client request to the caller through out (the stream
// of the request being served) and waits for the caller's answer, which
// arrives as a POSTed response on the session.
func (l *live) ask(ctx context.Context, out sink, method string, params json.RawMessage) (json.RawMessage, error) {
	id := jsonrpc.StringID("mcpgw-" + strconv.FormatInt(l.seq.Add(1), 10))
	ch := make(chan *jsonrpc.Message, 1)
	l.pmu.Lock()
	if l.pending == nil {
		l.pending = map[string]chan *jsonrpc.Message{}
	}
	l.pending[id.String()] = ch
	l.pmu.Unlock()
	defer func() {
		l.pmu.Lock()
		delete(l.pending, id.String())
		l.pmu.Unlock()
	}()
	if !out.send(jsonrpc.EncodeRequest(id, method, params)) {
		return nil, errors.New("the client's connection cannot carry a request to it (it must accept text/event-stream)")
	}
	select {
	case msg := <-ch:
		if msg.Error != nil {
			return nil, msg.Error
		}
		return msg.Result, nil
	case <-l.done:
		return nil, errors.New("the session ended")
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// deliver hands a caller's response to the request waiting for it.
func (l *live) deliver(msg *jsonrpc.Message) bool {
	l.pmu.Lock()
	ch := l.pending[msg.ID.String()]
	l.pmu.Unlock()
	if ch == nil {
		return false
	}
	select {
	case ch <- msg:
	default:
	}
	return true
}

// idle reports whether nothing holds the session here: no stream, no
// request in flight, and no use since cutoff.
func (l *live) idle(cutoff int64) bool {
	l.inflight.mu.Lock()
	defer l.inflight.mu.Unlock()
	l.pmu.Lock()
	defer l.pmu.Unlock()
	l.subMu.Lock()
	defer l.subMu.Unlock()
	return l.stream == nil && len(l.inflight.cancels) == 0 && len(l.pending) == 0 && len(l.subs) == 0 && l.used.Load() < cutoff
}

// sessions holds this replica's live legacy sessions and the ids deleted
// here.
type sessions struct {
	sealer *seal.Sealer

	mu        sync.Mutex
	live      map[string]*live
	deleted   map[string]time.Time // id → when it would have expired
	lastSweep time.Time
}

// idleAfter is how long an unused session's live state stays in memory; the
// sealed id still opens afterwards, with fresh state.
const idleAfter = 30 * time.Minute

// sweepLocked drops idle live state, at most once a minute.
func (ss *sessions) sweepLocked(now time.Time) {
	if now.Sub(ss.lastSweep) < time.Minute {
		return
	}
	ss.lastSweep = now
	cutoff := now.Add(-idleAfter).UnixNano()
	for id, l := range ss.live {
		if l.idle(cutoff) {
			l.end()
			delete(ss.live, id)
		}
	}
	for k, exp := range ss.deleted {
		if now.After(exp) {
			delete(ss.deleted, k)
		}
	}
}

func newSessions(s *seal.Sealer) *sessions {
	return &sessions{sealer: s, live: map[string]*live{}, deleted: map[string]time.Time{}}
}

var (
	errNoSession      = errors.New("session not found")
	errSessionForeign = errors.New("session belongs to another caller")
)

// mint seals a new session id.
func (ss *sessions) mint(c claims) (string, error) {
	c.Nonce = make([]byte, 8)
	_, _ = rand.Read(c.Nonce)
	b, err := json.Marshal(c)
	if err != nil {
		return "", err
	}
	return ss.sealer.Seal(SessionPurpose, b, sessionTTL)
}

// open returns the live state of session id for this caller and scope.
func (ss *sessions) open(id, binding, scope string) (*live, error) {
	ss.mu.Lock()
	if _, gone := ss.deleted[id]; gone {
		ss.mu.Unlock()
		return nil, errNoSession
	}
	now := time.Now()
	ss.sweepLocked(now)
	if l, ok := ss.live[id]; ok {
		ss.mu.Unlock()
		if l.claims.Binding != binding || l.claims.Scope != scope {
			return nil, errSessionForeign
		}
		l.used.Store(now.UnixNano())
		return l, nil
	}
	ss.mu.Unlock()
	b, err := ss.sealer.Open(SessionPurpose, id)
	if err != nil {
		return nil, errNoSession
	}
	var c claims
	if err := json.Unmarshal(b, &c); err != nil {
		return nil, errNoSession
	}
	if c.Binding != binding || c.Scope != scope {
		return nil, errSessionForeign
	}
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if l, ok := ss.live[id]; ok {
		return l, nil
	}
	l := &live{claims: c, done: make(chan struct{})}
	l.used.Store(now.UnixNano())
	ss.live[id] = l
	return l, nil
}

// remove ends a session on this replica: later requests with its id get 404.
func (ss *sessions) remove(id string) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	ss.deleted[id] = time.Now().Add(sessionTTL)
	if l, ok := ss.live[id]; ok {
		l.end()
		delete(ss.live, id)
	}
}

func (ss *sessions) closeAll() {
	ss.mu.Lock()
	var ended []*live
	for id, l := range ss.live {
		l.end()
		delete(ss.live, id)
		ended = append(ended, l)
	}
	ss.mu.Unlock()
	for _, l := range ended {
		l.work.Wait()
	}
}

// currentStream returns the session's open GET stream, or nil.
func (l *live) currentStream() *streamSink {
	l.inflight.mu.Lock()
	defer l.inflight.mu.Unlock()
	return l.stream
}

// subscription is one resources/subscribe of a session; stop is nil while
// the upstreams are still answering it.
type subscription struct{ stop context.CancelFunc }
