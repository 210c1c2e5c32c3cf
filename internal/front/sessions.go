package front

import (
	"container/list"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
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
	DefaultMaxLiveSessions      = 10000
	DefaultMaxDeletedSessions   = 100000
	DefaultSessionIdle          = 30 * time.Minute
	DefaultRecheckInterval      = 10 * time.Second
	DefaultAuthUnavailableGrace = 60 * time.Second
	DefaultMaxSSEPending        = 32
	DefaultMaxSSEConns          = 10000
	DefaultMaxLivePerCaller     = 1000
	DefaultMaxSSEConnsPerCaller = 1000
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
	// Tombstones remembers the ids of ended sessions (default: a
	// MemoryTombstones of MaxDeleted ids); share one between replicas so
	// that a session ended on one is not revived on another.
	Tombstones Tombstones
	// Relay hands a caller's answer that matches no request waiting here to
	// the replica holding that request (nil: answers are delivered only on
	// the replica receiving them).
	Relay Relay
	// IdleTimeout ends a legacy session that had no request and no open
	// GET stream for this long (default DefaultSessionIdle).
	IdleTimeout time.Duration
	// RecheckInterval is how often a long-lived stream (GET stream,
	// /mcp/sse, subscriptions/listen) re-authenticates its caller (default
	// DefaultRecheckInterval).
	RecheckInterval time.Duration
	// AuthUnavailableGrace is how long a long-lived stream outlives an
	// authentication service that cannot answer (503) in a row before it
	// ends (default DefaultAuthUnavailableGrace); a refusal ends it at once.
	AuthUnavailableGrace time.Duration
	// MaxSSEPending caps the requests of one /mcp/sse connection being
	// answered at once (default DefaultMaxSSEPending); beyond it a POST is
	// refused with 503. Each also holds its place in the in-flight bound
	// until answered.
	MaxSSEPending int
	// MaxSSEConns caps open /mcp/sse connections (default
	// DefaultMaxSSEConns); beyond it /mcp/sse answers 503.
	MaxSSEConns int
	// MaxLivePerCaller caps one caller's live legacy sessions (default
	// DefaultMaxLivePerCaller); opening one more ends that caller's least
	// recently used.
	MaxLivePerCaller int
	// MaxSSEConnsPerCaller caps one caller's open /mcp/sse connections
	// (default DefaultMaxSSEConnsPerCaller); beyond it /mcp/sse answers 503.
	MaxSSEConnsPerCaller int
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
	if c.AuthUnavailableGrace <= 0 {
		c.AuthUnavailableGrace = DefaultAuthUnavailableGrace
	}
	if c.MaxSSEPending <= 0 {
		c.MaxSSEPending = DefaultMaxSSEPending
	}
	if c.MaxSSEConns <= 0 {
		c.MaxSSEConns = DefaultMaxSSEConns
	}
	if c.MaxLivePerCaller <= 0 {
		c.MaxLivePerCaller = DefaultMaxLivePerCaller
	}
	if c.MaxSSEConnsPerCaller <= 0 {
		c.MaxSSEConnsPerCaller = DefaultMaxSSEConnsPerCaller
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
	Expires int64           `json:"e"` // unix seconds; the seal enforces it too
}

// live is the part of a session only the replica serving it holds: requests
// in flight and notifications being dispatched.
type live struct {
	id       string
	claims   claims
	expires  int64         // unix nanoseconds: the sealed id's expiry
	elem     *list.Element // in sessions.lru
	inflight inflight
	notifs   sync.WaitGroup // notifications accepted and still dispatching
	stream   *streamSink    // the standalone GET stream, if open here
	done     chan struct{}  // closed by end
	used     atomic.Int64   // unix nanoseconds of the last request or GET stream
	// view is the caller and scope of the latest request (see HandOver).
	view atomic.Pointer[sessionView]
	// logLevel is the level the caller last set with logging/setLevel on
	// this replica ("" until then: every level is relayed).
	logLevel atomic.Pointer[string]
	// ownState is set once the caller keeps per-session state upstream (it
	// declared roots, elicitation or sampling at initialize, or sent
	// logging/setLevel): its calls then run on upstream sessions of its own
	// (see upstreamOwner).
	ownState atomic.Bool

	// Background listens following the session (list changes on its GET
	// stream, resources/subscribe), ended with the session; none starts
	// once it ended (over).
	wmu   sync.Mutex
	over  bool
	work  sync.WaitGroup
	subMu sync.Mutex
	subs  map[string]*subscription // subscribed URI → its follow

	// Requests this gateway sent to the caller, waiting for its answers.
	pmu     sync.Mutex
	pending map[string]chan *jsonrpc.Message
	seq     atomic.Int64
	replica string // names this replica in request ids (see askID); "" without a relay
	// relayKey names the session on the relay (see relayKey); "" without one.
	relayKey string
}

// end ends the session here: its requests waiting on the caller and its
// background listens stop. It may be called more than once.
func (l *live) end() {
	l.wmu.Lock()
	defer l.wmu.Unlock()
	if !l.over {
		l.over = true
		close(l.done)
	}
}

// ended reports whether the session has ended here.
func (l *live) ended() bool {
	select {
	case <-l.done:
		return true
	default:
		return false
	}
}

// startWork counts one background listen of the session; false once the
// session ended, so that waiting for work after end is safe.
func (l *live) startWork() bool {
	l.wmu.Lock()
	defer l.wmu.Unlock()
	if l.over {
		return false
	}
	l.work.Add(1)
	return true
}

// ask sends a server→client request to the caller through out (the stream
// of the request being served) and waits for the caller's answer, which
// arrives as a POSTed response on the session.
func (l *live) ask(ctx context.Context, out sink, method string, params json.RawMessage) (json.RawMessage, error) {
	id := askID(l.replica, l.seq.Add(1))
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

// idle reports whether nothing holds the session here: no open GET stream,
// no request in flight, and no use since cutoff. Subscriptions do not hold
// a session: they only deliver on a stream.
func (l *live) idle(cutoff int64) bool {
	l.inflight.mu.Lock()
	defer l.inflight.mu.Unlock()
	return l.stream == nil && len(l.inflight.cancels) == 0 && l.used.Load() < cutoff
}

// sessions holds this replica's live legacy sessions, least recently used
// last; tombs remembers the ids of ended sessions.
type sessions struct {
	sealer *seal.Sealer
	cfg    SessionConfig
	log    *slog.Logger
	now    func() time.Time

	mu       sync.Mutex
	live     map[string]*list.Element // id → element of lru (a *live)
	relayed  map[string]*list.Element // relayKey(id) → element of lru; nil without a relay
	lru      list.List
	perCall  map[string]int // binding → live sessions
	tombs    Tombstones
	burials  burials // burials decided under mu, stored without it
	replica  string  // the relay's name for this replica ("" without one)
	sweeping bool    // a sweeper runs while sessions are live
	closed   bool
	sweepers sync.WaitGroup
	stop     chan struct{}
}

func newSessions(s *seal.Sealer, cfg SessionConfig, log *slog.Logger) *sessions {
	ss := &sessions{sealer: s, cfg: cfg, log: log, now: time.Now, live: map[string]*list.Element{},
		perCall: map[string]int{}, tombs: cfg.Tombstones, stop: make(chan struct{})}
	if cfg.Relay != nil {
		ss.replica = cfg.Relay.Replica()
		ss.relayed = map[string]*list.Element{}
	}
	if ss.tombs == nil {
		ss.tombs = newMemoryTombstones(cfg.MaxDeleted, func() time.Time { return ss.now() })
	}
	return ss
}

var (
	errNoSession      = errors.New("session not found")
	errSessionForeign = errors.New("session belongs to another caller")
)

// mint seals a new session id.
func (ss *sessions) mint(c claims) (string, error) {
	c.Nonce = make([]byte, 8)
	_, _ = rand.Read(c.Nonce)
	c.Expires = ss.now().Add(sessionTTL).Unix()
	b, err := json.Marshal(c)
	if err != nil {
		return "", err
	}
	return ss.sealer.Seal(SessionPurpose, b, sessionTTL)
}

// open returns the live state of session id for this caller and scope,
// recording view as whom and what it serves now. A session ended here
// (deleted, idle, evicted) or past its sealed expiry is not found. The
// tombstones are asked without the session lock (see doc.go).
func (ss *sessions) open(ctx context.Context, id, binding, scope string, view *sessionView) (*live, error) {
	for range 3 {
		l, err := ss.openOnce(ctx, id, binding, scope, view)
		if !errors.Is(err, errAskAgain) {
			return l, err
		}
	}
	return nil, errNoSession
}

// errAskAgain is openOnce's answer when too many sessions were buried while
// it asked the tombstones to tell whether id was among them.
var errAskAgain = errors.New("tombstones changed meanwhile")

func (ss *sessions) openOnce(ctx context.Context, id, binding, scope string, view *sessionView) (*live, error) {
	now := ss.now()
	seq, err := ss.notBuried(ctx, id)
	if err != nil {
		return nil, err
	}
	var later []burial
	defer func() { ss.buryAll(ctx, later) }() // after the lock is released
	ss.mu.Lock()
	if l, ok, err := ss.liveLocked(id, binding, scope, now, seq, &later); ok {
		if l != nil {
			l.view.Store(view)
		}
		ss.mu.Unlock()
		return l, err
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
	c.Nonce = nil // it made the id unique; the live session needs it no more
	expires := now.Add(sessionTTL).UnixNano()
	if c.Expires > 0 {
		expires = time.Unix(c.Expires, 0).UnixNano()
	}
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if l, ok, err := ss.liveLocked(id, binding, scope, now, seq, &later); ok {
		if l != nil {
			l.view.Store(view)
		}
		return l, err // opened, deleted or expired meanwhile
	}
	// The id is copied: a slice of the request's head would keep that
	// whole head for the session's life.
	l := &live{id: strings.Clone(id), claims: c, expires: expires, done: make(chan struct{}), replica: ss.replica}
	l.view.Store(view)
	l.ownState.Store(asksCaller(c.Caps))
	l.used.Store(now.UnixNano())
	later = append(later, ss.admitLocked(l)...)
	return l, nil
}

// notBuried asks the tombstones, without the session lock, whether id
// ended; seq is the count of burials stored before it asked, for
// liveLocked to tell those stored since.
func (ss *sessions) notBuried(ctx context.Context, id string) (seq uint64, err error) {
	ss.mu.Lock()
	seq = ss.burials.seq
	ss.mu.Unlock()
	gone, err := ss.tombs.Buried(ctx, id)
	if err != nil {
		ss.log.Warn("legacy session tombstones cannot be read; the session is treated as ended", "error", err.Error())
	}
	if gone || err != nil {
		return 0, errNoSession
	}
	return seq, nil
}

// liveLocked answers open from this replica's state, given that the
// tombstones did not hold id before burial seq; ok is false when the sealed
// id must be opened. Burials it decides are appended to later.
func (ss *sessions) liveLocked(id, binding, scope string, now time.Time, seq uint64, later *[]burial) (l *live, ok bool, err error) {
	if buried, known := ss.buriedSinceLocked(id, seq); !known {
		return nil, true, errAskAgain
	} else if buried {
		return nil, true, errNoSession
	}
	e, found := ss.live[id]
	if !found {
		return nil, false, nil
	}
	l = e.Value.(*live)
	if l.claims.Binding != binding || l.claims.Scope != scope {
		return nil, true, errSessionForeign
	}
	if now.UnixNano() >= l.expires {
		*later = append(*later, ss.retireLocked(l, false))
		return nil, true, errNoSession
	}
	ss.lru.MoveToFront(e)
	l.used.Store(now.UnixNano())
	return l, true, nil
}

// admitLocked adds a live session, ending the caller's least recently used
// one when the caller is at MaxLivePerCaller, else the least recently used
// of all when MaxLive are live; it starts the sweeper. It returns the
// burials of the sessions it ended.
func (ss *sessions) admitLocked(l *live) []burial {
	var ended []burial
	b := l.claims.Binding
	if ss.perCall[b] >= ss.cfg.MaxLivePerCaller {
		for e := ss.lru.Back(); e != nil; e = e.Prev() {
			if old := e.Value.(*live); old.claims.Binding == b {
				ended = append(ended, ss.retireLocked(old, false))
				break
			}
		}
	}
	if len(ss.live) >= ss.cfg.MaxLive {
		ended = append(ended, ss.retireLocked(ss.lru.Back().Value.(*live), false))
	}
	l.elem = ss.lru.PushFront(l)
	ss.live[l.id] = l.elem
	if ss.relayed != nil {
		l.relayKey = relayKey(l.id)
		ss.relayed[l.relayKey] = l.elem
	}
	ss.perCall[b]++
	if !ss.sweeping && !ss.closed {
		ss.sweeping = true
		ss.sweepers.Add(1)
		go ss.sweepLoop()
	}
	return ended
}

// retireLocked ends a live session and returns its burial, for every
// replica when everywhere, else here (see LocalTombstones); until the
// burial is stored, open finds the id pending.
func (ss *sessions) retireLocked(l *live, everywhere bool) burial {
	l.end()
	if _, ok := ss.live[l.id]; ok {
		ss.lru.Remove(l.elem)
		delete(ss.live, l.id)
		if l.relayKey != "" {
			delete(ss.relayed, l.relayKey)
		}
		if ss.perCall[l.claims.Binding]--; ss.perCall[l.claims.Binding] <= 0 {
			delete(ss.perCall, l.claims.Binding)
		}
	}
	return ss.pendLocked(l.id, l.expires, everywhere)
}

// sweepEvery is how often idle sessions and expired tombstones are swept.
func (ss *sessions) sweepEvery() time.Duration {
	return min(time.Minute, ss.cfg.IdleTimeout/2)
}

// sweepLoop sweeps while sessions are live; it ends when none is left or
// at closeAll.
func (ss *sessions) sweepLoop() {
	defer ss.sweepers.Done()
	defer recoverPanic(ss.log, "legacy session sweeper", func() {
		ss.mu.Lock()
		ss.sweeping = false
		ss.mu.Unlock()
	})
	t := time.NewTicker(ss.sweepEvery())
	defer t.Stop()
	for {
		select {
		case <-ss.stop:
			return
		case <-t.C:
		}
		ss.mu.Lock()
		ended := ss.sweepLocked(ss.now())
		last := len(ss.live) == 0
		if last {
			ss.sweeping = false
		}
		ss.mu.Unlock()
		ss.buryAll(context.Background(), ended)
		if last {
			return
		}
	}
}

// sweepLocked ends idle and expired sessions and returns their burials;
// the tombstones drop the ids whose sealed ids have expired themselves.
func (ss *sessions) sweepLocked(now time.Time) []burial {
	var ended []burial
	cutoff := now.Add(-ss.cfg.IdleTimeout).UnixNano()
	for e := ss.lru.Back(); e != nil; {
		l := e.Value.(*live)
		e = e.Prev()
		if l.idle(cutoff) || now.UnixNano() >= l.expires {
			ended = append(ended, ss.retireLocked(l, false))
		}
	}
	return ended
}

// remove ends a session on this replica and buries it for every replica:
// later requests with its id get 404.
func (ss *sessions) remove(ctx context.Context, id string) {
	until := ss.now().Add(sessionTTL).UnixNano()
	ss.mu.Lock()
	var b burial
	if e, ok := ss.live[id]; ok {
		b = ss.retireLocked(e.Value.(*live), true)
	} else {
		b = ss.pendLocked(id, until, true)
	}
	ss.mu.Unlock()
	ss.buryAll(ctx, []burial{b})
}

// closeAll ends every live session and waits for their background work.
// A session holding state its sealed id cannot carry (resource
// subscriptions, a log level) is also buried: reopened elsewhere it would
// silently lack that state, so its caller gets 404 and starts a new session
// instead. A session without such state reopens from its id as it was.
func (ss *sessions) closeAll() {
	ss.mu.Lock()
	var ended []*live
	var stateful []burial
	for e := ss.lru.Front(); e != nil; e = e.Next() {
		l := e.Value.(*live)
		if l.holdsState() {
			stateful = append(stateful, ss.pendLocked(l.id, l.expires, true))
		}
		l.end()
		ended = append(ended, l)
	}
	ss.live = map[string]*list.Element{}
	ss.lru.Init()
	ss.perCall = map[string]int{}
	if !ss.closed {
		ss.closed = true
		close(ss.stop)
	}
	ss.mu.Unlock()
	ss.buryAll(context.Background(), stateful)
	ss.sweepers.Wait()
	for _, l := range ended {
		l.work.Wait()
	}
}

// holdsState reports whether the session holds state only this replica
// knows: resource subscriptions or a log level set by the caller.
func (l *live) holdsState() bool {
	if l.logLevel.Load() != nil {
		return true
	}
	l.subMu.Lock()
	defer l.subMu.Unlock()
	return len(l.subs) > 0
}

// minLogLevel is the least severe log level relayed to the session's
// stream ("" for every level).
func (l *live) minLogLevel() string {
	if p := l.logLevel.Load(); p != nil {
		return *p
	}
	return ""
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
