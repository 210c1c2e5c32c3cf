package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpgw/mcpgw/internal/mcp"
)

// cleanupBudget bounds the work done after a request was abandoned (telling
// the upstream, ending a session).
const cleanupBudget = 5 * time.Second

// errSessionGone is what setup answers on a session that was released (its
// setup failed, the upstream ended it, or the client was closed): the caller
// looks the session up again and gets a new one, or ErrClosed.
var errSessionGone = errors.New("upstream session was released")

// sessionEnv is what every session of a Client shares: the env, the
// dialer that opens its transports, what is known of the upstream's era,
// the credentials and the request settings. New builds one; sessions hold it
// instead of the Client.
type sessionEnv struct {
	*env
	dial   dialer
	era    *eraMemory
	creds  *credentials
	params *paramHeaders // x-mcp-header annotations, mirrored into headers
	ids    atomic.Int64  // the JSON-RPC ids of requests to the upstream
	pinned string        // Config.ProtocolVersion: VersionAuto or one revision
	// legacyEra: Options.LegacyCaller selects a legacy-era session (stdio
	// in auto mode).
	legacyEra bool
	// legacyRefused: a child refused the legacy handshake (it speaks only
	// the modern era); legacy callers then share the modern sessions
	// instead of starting a child to be refused again.
	legacyRefused atomic.Bool
	clientInfo    mcp.Implementation
	listTimeout   time.Duration
}

// legacyCallerSession reports whether opts select a legacy-era session (see
// Options.LegacyCaller).
func (e *sessionEnv) legacyCallerSession(opts Options) bool {
	return opts.LegacyCaller && e.legacyEra && !e.legacyRefused.Load()
}

// answered notes that the upstream answered a request: the failure causes
// warned about are forgotten and a restart backoff ends.
func (e *sessionEnv) answered() {
	e.causes.reset()
	e.dial.answered()
}

// session is one conversation with the upstream: a transport plus what was
// negotiated on it. Legacy sessions carry a handshake; modern ones only the
// request _meta.
//
// A session is set up at most once and never reused after it is released:
// new → ready → gone, or new → gone. Setup is serialised by turn, which
// waiters acquire honouring their own context; close takes the turn too, so
// it never races a setup that is publishing its transport, and ending life
// first makes such a setup give up at once.
type session struct {
	e        *sessionEnv
	key      string
	caps     json.RawMessage // ClientCapabilities offered
	injected http.Header     // per-caller headers
	token    string          // the caller's delegated credential, if any
	cred     string          // names the credentials (see CredentialKey)
	notify   string          // names the session for its notifications (see OwnerKey)
	// ephemeral sessions serve one operation and are ended by it; nothing
	// else is told about an abandoned request on them.
	ephemeral bool
	// legacy sessions serve legacy callers: they start with the legacy
	// handshake, whatever the era verdict (see Options.LegacyCaller).
	legacy bool

	life context.Context // ends when the session is released
	end  context.CancelFunc
	turn chan struct{} // capacity 1: held while setting up or closing

	// info and meta are written only by setup, before ready is set; after
	// that they never change, so requests read them without locking.
	info  Info
	metas [len(capSets)]atomic.Pointer[json.RawMessage] // modern request _meta by capability set (capBits)

	pool poolState // guarded by Client.mu

	mu        sync.Mutex
	ready     bool
	tr        transport // nil before setup and after release
	abandoned time.Time // when a request on it was last abandoned
}

func newSession(e *sessionEnv, key string, caps json.RawMessage, opts Options, ephemeral bool) *session {
	life, end := context.WithCancel(context.Background())
	cred := credentialDigest(opts.Header, opts.Token)
	return &session{e: e, key: key, caps: caps, injected: opts.Header, token: opts.Token, ephemeral: ephemeral,
		legacy: e.legacyCallerSession(opts), cred: cred, notify: OwnerKey(cred, ownerOf(opts)), life: life, end: end,
		turn: make(chan struct{}, 1)}
}

// owned reports whether this is the session of one caller
// (Interactions.Owner), not one shared by callers with its credentials.
func (s *session) owned() bool { return s.notify != s.cred }

// gone reports whether the session was released.
func (s *session) gone() bool { return s.life.Err() != nil }

func (s *session) isReady() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ready
}

// setup makes the session usable: starts the transport and runs the probe or
// handshake the era needs. Concurrent callers wait for one setup, each only
// as long as its own ctx allows; if that setup fails, they get
// errSessionGone and try a new session under their own ctx.
func (s *session) setup(ctx context.Context) error {
	if s.gone() {
		return errSessionGone
	}
	if s.isReady() {
		return nil
	}
	select {
	case s.turn <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	case <-s.life.Done():
		return errSessionGone
	}
	defer func() { <-s.turn }()
	if s.gone() {
		return errSessionGone
	}
	if s.isReady() {
		return nil
	}
	// Releasing the session (Close) abandons its setup.
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(s.life, cancel)()
	err := s.handshake(sctx)
	if err == nil && !s.gone() {
		s.mu.Lock()
		s.ready = true
		s.mu.Unlock()
		return nil
	}
	if s.gone() {
		err = errSessionGone // closed meanwhile: its transport is ours to close
	}
	s.end()
	cctx, ccancel := context.WithDeadline(context.Background(), s.cleanupDeadline())
	defer ccancel()
	if tr := s.setTransport(nil); tr != nil {
		_ = tr.close(cctx)
	}
	return err
}

// noteAbandoned records when a request was abandoned: the caller's deadline
// when that is what passed, our own request deadline when that did, else
// now. Cleanup of an own session is bounded from that moment.
func (s *session) noteAbandoned(ctx, rctx context.Context) {
	at := time.Now()
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		if d, ok := ctx.Deadline(); ok {
			at = d
		}
	} else if ctx.Err() == nil {
		if d, ok := rctx.Deadline(); ok && rctx.Err() != nil {
			at = d
		}
	}
	s.mu.Lock()
	s.abandoned = at
	s.mu.Unlock()
}

// cleanupDeadline is when the cleanup of this session must be over: one
// budget from the moment a request on it was abandoned, or from now.
func (s *session) cleanupDeadline() time.Time {
	now := time.Now()
	s.mu.Lock()
	at := s.abandoned
	s.mu.Unlock()
	if at.IsZero() || at.After(now) {
		at = now
	}
	return at.Add(cleanupBudget)
}

// close releases the session for good: a setup in progress is abandoned and
// waited for (within ctx), then the transport is closed, once.
func (s *session) close(ctx context.Context) error {
	s.end()
	select {
	case s.turn <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-s.turn }()
	s.mu.Lock()
	s.ready = false
	s.mu.Unlock()
	if tr := s.setTransport(nil); tr != nil {
		return tr.close(ctx)
	}
	return nil
}

// terminate ends an ephemeral session; after an abandoned request the
// DELETE goes over a fresh connection.
func (s *session) terminate(ctx context.Context, fresh bool) error {
	if tr := s.transport(); tr != nil && fresh {
		tr.abandoned()
	}
	return s.close(ctx)
}

func (s *session) transport() transport {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tr
}

// setTransport installs tr and returns the one it replaces.
func (s *session) setTransport(tr transport) transport {
	s.mu.Lock()
	defer s.mu.Unlock()
	old := s.tr
	s.tr = tr
	return old
}

// replaceTransport installs tr (during setup) and stops the one it replaces.
func (s *session) replaceTransport(tr transport) {
	if old := s.setTransport(tr); old != nil {
		ctx, cancel := context.WithTimeout(context.Background(), cleanupBudget)
		defer cancel()
		_ = old.close(ctx)
	}
}

// follow holds the channel on which the upstream sends what belongs to no
// request, when the session has one (see transport.follow), and reports
// whether the session's one connection is that channel (transport.standing).
func (s *session) follow(ctx context.Context) (lost context.Context, release func(), standing bool) {
	if tr := s.transport(); tr != nil {
		lost, release = tr.follow(ctx)
		return lost, release, tr.standing()
	}
	return nil, func() {}, false
}

// expired reports whether the session's conversation has ended.
func (s *session) expired() bool {
	tr := s.transport()
	return tr == nil || tr.expired()
}
