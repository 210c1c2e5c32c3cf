package upstream

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpgw/mcpgw/internal/jsonrpc"
	"github.com/mcpgw/mcpgw/internal/mcp"
	"github.com/mcpgw/mcpgw/internal/upstream/auth"
)

// Client talks to one configured upstream server, in whatever transport and
// protocol era it speaks. It is safe for concurrent use.
type Client struct {
	cfg    Config
	ids    atomic.Int64
	params paramHeaders            // x-mcp-header annotations of the tools
	policy *auth.Policy            // credential and static headers
	creds  *auth.ClientCredentials // mints the credential; nil for static ones

	where string // the upstream for logs: redactURL of the URL, or the command

	mu       sync.Mutex
	closed   bool
	sessions map[string]*session   // pooled, by options key; at most MaxSessions
	own      map[*session]struct{} // ephemeral sessions in use, so Close can end them
	sweep    *time.Timer           // evicts idle sessions; nil when none is idle

	retiring chan struct{} // one token per evicted session being ended in the background

	vmu     sync.Mutex
	verdict verdict // auto mode: what the upstream turned out to speak

	serverReqs chan struct{} // one token per server→client request being served
	budget     *ByteBudget   // upstream answer bytes buffered

	msgLog    *lineLimiter // per-message warnings (see msgWarn)
	dbgLog    *lineLimiter // per-message debug lines (see msgDebug)
	causes    causeLog     // failure causes warned about (see noteCause)
	stderrLog *lineLimiter // stdio children's stderr lines

	freshOnce sync.Once
	fresh     *http.Client // see freshHTTP

	bmu       sync.Mutex // stdio restart backoff
	failures  int
	notBefore time.Time
}

// verdict is what an auto-mode probe found the upstream to speak.
type verdict uint8

const (
	verdictUnknown verdict = iota
	verdictModern
	verdictLegacy
	verdictSSE // legacy HTTP+SSE transport at the configured URL
)

// era is the protocol era a verdict means.
func (v verdict) era() mcp.Era {
	if v == verdictModern {
		return mcp.EraModern
	}
	return mcp.EraLegacy
}

// Options are the per-operation inputs that shape the upstream conversation.
type Options struct {
	// Header holds per-caller headers forwarded to this upstream (the
	// server's extra_headers). Sessions are never shared between different
	// headers.
	Header http.Header
	// Token is the caller's own credential for this upstream (auth_type
	// oauth_delegate), written into the server's credential slot. Sessions
	// are never shared between different tokens.
	Token string
	// Interactions answers server→client requests made during the operation.
	Interactions *Interactions
	// LogErrors says the caller will not report a failure itself, so the
	// client logs it at error level; otherwise failures are logged at debug
	// (the caller owns the error). Timeouts always log one warning.
	LogErrors bool
	// Ephemeral runs the operation on a session of its own, ended (DELETE)
	// before the operation returns; when the operation is abandoned, the
	// DELETE goes over a fresh connection. A list walk (List and its
	// shorthands) is one operation: one session for every page. Info does not
	// pool the session either. Use it for credentials that must not outlive
	// one request.
	Ephemeral bool
}

// Result is an upstream answer, kept as the upstream's bytes.
type Result struct {
	Raw           json.RawMessage // the JSON-RPC result object
	InputRequired bool            // resultType "input_required" (modern upstreams)
}

// Info is what the upstream told about itself when the conversation started.
type Info struct {
	Era               mcp.Era
	Version           string // negotiated (legacy) or spoken (modern) revision
	SupportedVersions []string
	Capabilities      mcp.ServerCapabilities
	ServerInfo        mcp.Implementation
	Instructions      string // trimmed
}

// New returns a client for one upstream. Nothing is contacted until the
// first operation.
func New(cfg Config) (*Client, error) {
	full, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	policy, err := auth.NewPolicy(full.Auth)
	if err != nil {
		return nil, fmt.Errorf("server %q: %w", full.Name, err)
	}
	c := &Client{
		cfg:        full,
		sessions:   map[string]*session{},
		own:        map[*session]struct{}{},
		policy:     policy,
		where:      full.Command,
		serverReqs: make(chan struct{}, full.MaxServerRequests),
		budget:     full.AnswerBudget,
		retiring:   make(chan struct{}, maxRetiring),
		msgLog:     newLineLimiter(msgLinesPerMin, time.Minute, nil),
		dbgLog:     newLineLimiter(msgLinesPerMin, time.Minute, nil),
		stderrLog:  newLineLimiter(stderrLinesPerMin, time.Minute, nil),
	}
	if full.URL != "" {
		c.where = redactURL(full.URL)
	}
	if full.OAuth2 != nil {
		occ := *full.OAuth2
		if occ.HTTPClient == nil {
			occ.HTTPClient = full.HTTPClient
		}
		if c.creds, err = auth.NewClientCredentials(occ); err != nil {
			return nil, fmt.Errorf("server %q: %w", full.Name, err)
		}
	}
	switch {
	case full.Transport == TransportSSE:
		c.verdict = verdictSSE
	case full.ProtocolVersion == VersionAuto:
		c.verdict = verdictUnknown
	case mcp.IsModern(full.ProtocolVersion):
		c.verdict = verdictModern
	default:
		c.verdict = verdictLegacy
	}
	return c, nil
}

// Name returns the configured server name.
func (c *Client) Name() string { return c.cfg.Name }

func (c *Client) auto() bool { return c.cfg.ProtocolVersion == VersionAuto }

func (c *Client) currentVerdict() verdict {
	c.vmu.Lock()
	defer c.vmu.Unlock()
	return c.verdict
}

func (c *Client) setVerdict(v verdict) {
	c.vmu.Lock()
	c.verdict = v
	c.vmu.Unlock()
}

// forgetVerdict makes the next operation probe the upstream's era again.
func (c *Client) forgetVerdict() {
	if c.auto() && c.cfg.Transport != TransportSSE {
		c.setVerdict(verdictUnknown)
	}
}

// Info starts (or reuses) the conversation and reports what the upstream said
// about itself. With opts.Ephemeral the conversation is started for this
// call alone and ended before it returns.
func (c *Client) Info(ctx context.Context, opts Options) (Info, error) {
	if opts.Ephemeral {
		var info Info
		err := c.ownSession(ctx, opts, func(s *session) error {
			info = s.info
			return nil
		})
		return info, err
	}
	s, err := c.session(ctx, opts)
	if err != nil {
		c.noteCause(failureCause(err))
		return Info{}, err
	}
	c.unuse(s)
	return s.info, nil
}

// Call sends one request and returns its result. params is the caller's
// params object (it may carry its own _meta, e.g. a progress token); the
// protocol's own _meta keys are set or removed to suit the upstream's era.
func (c *Client) Call(ctx context.Context, method string, params json.RawMessage, opts Options) (Result, error) {
	name := c.logStart(method, params)
	var (
		res Result
		err error
	)
	if opts.Ephemeral {
		err = c.ownSession(ctx, opts, func(s *session) (err error) {
			res, err = s.request(ctx, method, params, opts.Interactions)
			return err
		})
	} else {
		res, err = c.pooledCall(ctx, method, params, opts)
	}
	if err != nil {
		c.logFailure(ctx, method, name, opts, err)
	}
	return res, err
}

// logStart logs an operation's method and name (never its arguments,
// cursors or tokens) and returns the name.
func (c *Client) logStart(method string, params json.RawMessage) string {
	name := ""
	if method == mcp.MethodToolsCall || method == mcp.MethodPromptsGet {
		name = nameParam(method, params)
	}
	c.cfg.Logger.Debug("upstream call", "method", method, "name", name)
	return name
}

// logFailure logs a failed operation: at error level when the caller will
// not report it itself, else at debug.
func (c *Client) logFailure(ctx context.Context, method, name string, opts Options, err error) {
	level := slog.LevelDebug
	if opts.LogErrors {
		level = slog.LevelError
	}
	cl := Classify(err)
	cause := failureCause(err)
	c.cfg.Logger.Log(ctx, level, method+" failed", "name", name, "fault", string(cl.Fault), "reason", cl.Message, "cause", cause)
	c.noteCause(cause)
}

func (c *Client) pooledCall(ctx context.Context, method string, params json.RawMessage, opts Options) (Result, error) {
	for attempt := 0; ; attempt++ {
		s, err := c.session(ctx, opts)
		if err != nil {
			return Result{}, err
		}
		res, err := s.request(ctx, method, params, opts.Interactions)
		c.unuse(s)
		if err == nil {
			return res, nil
		}
		if s.expired() {
			c.drop(s)
			if attempt == 0 && sessionEnded(err) {
				// The upstream ended the session or restarted and forgot
				// it; it refused the request unread. One new session, one
				// retry.
				c.cfg.Logger.Info("upstream " + c.where + " ended the session; starting a new one")
				continue
			}
		}
		if attempt == 0 && method == mcp.MethodToolsCall && s.info.Era == mcp.EraModern {
			if re := rpcErr(err); re != nil && re.Code() == mcp.CodeHeaderMismatch {
				// Mcp-Param-* headers may be missing or stale: the spec says
				// to re-fetch tools/list and retry.
				if _, lerr := c.ListTools(ctx, opts); lerr == nil {
					continue
				}
			}
		}
		if attempt == 0 && c.auto() && eraMismatch(s.info.Era, err) {
			c.cfg.Logger.Info("upstream changed protocol era; probing again")
			c.drop(s)
			c.forgetVerdict()
			continue
		}
		return Result{}, err
	}
}

// ownSession runs op on a session opened for this operation alone, and ends
// that session before returning. The cleanup (closing the session, its
// DELETE) is bounded by one deadline, counted from the moment the operation
// was abandoned when it was; after an abandoned request the DELETE goes over
// a fresh connection. Cleanup never turns a failure into success, and a
// cleanup failure after success is only logged.
func (c *Client) ownSession(ctx context.Context, opts Options, op func(*session) error) error {
	caps, _ := opts.Interactions.capabilities(c.cfg.Offer)
	s := newSession(c, "", caps, opts, true)
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return ErrClosed
	}
	c.own[s] = struct{}{}
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		delete(c.own, s)
		c.mu.Unlock()
	}()
	err := s.setup(ctx)
	if errors.Is(err, errSessionGone) {
		return ErrClosed // only Close ends another's own session
	}
	if err == nil {
		err = op(s)
	}
	abandoned := errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) || errors.As(err, new(*TimeoutError))
	cctx, cancel := context.WithDeadline(context.Background(), s.cleanupDeadline())
	defer cancel()
	if cerr := s.terminate(cctx, abandoned); cerr != nil {
		c.cfg.Logger.Debug("ending the operation's own session failed", "err", causeText(cerr))
	}
	return err
}

// freshHTTP returns a client that opens a new connection for every request,
// for cleanup that must not wait behind a connection the abandoned request
// may still hold.
func (c *Client) freshHTTP() *http.Client {
	c.freshOnce.Do(func() {
		c.fresh = c.cfg.HTTPClient
		if tr, ok := c.cfg.HTTPClient.Transport.(*http.Transport); ok {
			ft := tr.Clone()
			ft.DisableKeepAlives = true
			c.fresh = &http.Client{Transport: ft, CheckRedirect: c.cfg.HTTPClient.CheckRedirect}
		}
	})
	return c.fresh
}

// eraMismatch reports an answer that says the remembered era is wrong.
func eraMismatch(era mcp.Era, err error) bool {
	re := rpcErr(err)
	if re == nil {
		return false
	}
	if era == mcp.EraModern {
		return re.Code() == mcp.CodeUnsupportedProtocolVersion
	}
	return re.Code() == mcp.CodeUnsupportedProtocolVersion || re.Code() == mcp.CodeHeaderMismatch
}

// CallTool calls a tool. An input_required result is returned as is.
func (c *Client) CallTool(ctx context.Context, name string, args json.RawMessage, opts Options) (Result, error) {
	return c.Call(ctx, mcp.MethodToolsCall, namedParams("name", name, "arguments", args), opts)
}

// GetPrompt gets a prompt.
func (c *Client) GetPrompt(ctx context.Context, name string, args json.RawMessage, opts Options) (Result, error) {
	return c.Call(ctx, mcp.MethodPromptsGet, namedParams("name", name, "arguments", args), opts)
}

// ReadResource reads a resource.
func (c *Client) ReadResource(ctx context.Context, uri string, opts Options) (Result, error) {
	return c.Call(ctx, mcp.MethodResourcesRead, namedParams("uri", uri, "", nil), opts)
}

// Complete asks for argument completions; params is the completion/complete
// params object.
func (c *Client) Complete(ctx context.Context, params json.RawMessage, opts Options) (Result, error) {
	return c.Call(ctx, mcp.MethodCompletionComplete, params, opts)
}

// namedParams builds {"<k1>":"<v1>","<k2>":<raw>} without a reflective encode.
func namedParams(k1, v1, k2 string, raw json.RawMessage) json.RawMessage {
	b := make([]byte, 0, 32+len(v1)+len(raw))
	b = append(b, '{')
	b = jsonrpc.AppendString(b, k1)
	b = append(b, ':')
	b = jsonrpc.AppendString(b, v1)
	if k2 != "" && len(raw) > 0 {
		b = append(b, ',')
		b = jsonrpc.AppendString(b, k2)
		b = append(b, ':')
		b = append(b, raw...)
	}
	return append(b, '}')
}

// session returns the ready session for these options, creating it (and
// running the handshake or probe) when needed, held until the caller calls
// unuse. A session is never set up twice: one that failed, ended or was
// closed is replaced by a new one.
func (c *Client) session(ctx context.Context, opts Options) (*session, error) {
	for {
		s, created, err := c.lookup(opts)
		if err != nil {
			return nil, err
		}
		err = s.setup(ctx)
		if err == nil {
			if !created && s.expired() {
				c.unuse(s)
				c.drop(s) // the upstream ended it since: start another
				continue
			}
			return s, nil
		}
		c.unuse(s)
		if s.gone() {
			c.drop(s)
		}
		if errors.Is(err, errSessionGone) {
			// Another caller's setup failed, or the session was closed,
			// while we waited: look again.
			if cerr := ctx.Err(); cerr != nil {
				return nil, cerr
			}
			continue
		}
		if c.auto() && ctx.Err() == nil {
			// The upstream failed the probe or handshake (not the caller
			// giving up): find its era again next time.
			c.forgetVerdict()
		}
		return nil, err
	}
}

// lookup returns the pooled session for these options, held (see unuse),
// creating it (not yet set up) when there is none. A full pool makes room
// by evicting its least recently used idle session; when every session is
// in use, the call is refused with a PoolFullError rather than evict one a
// call is using.
func (c *Client) lookup(opts Options) (s *session, created bool, err error) {
	caps, capKey := opts.Interactions.capabilities(c.cfg.Offer)
	owner := ownerOf(opts)
	key := capKey + "|" + OwnerKey(credentialDigest(opts.Header, opts.Token), owner)
	var victim *session
	defer func() {
		if victim != nil {
			c.retire(victim)
		}
	}()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, false, ErrClosed
	}
	if s = c.sessions[key]; s != nil {
		c.useLocked(s)
		return s, false, nil
	}
	switch {
	case owner != "" && c.ownedLocked() >= c.cfg.MaxOwnedSessions:
		// Callers' own sessions make room among themselves, so they can
		// never crowd out the shared ones.
		if victim = c.evictLocked(func(s *session) bool { return s.owned() }); victim == nil {
			return nil, false, &PoolFullError{}
		}
	case len(c.sessions) >= c.cfg.MaxSessions:
		if victim = c.evictLocked(nil); victim == nil {
			return nil, false, &PoolFullError{}
		}
	}
	s = newSession(c, key, caps, opts, false)
	c.sessions[key] = s
	c.useLocked(s)
	return s, true, nil
}

// drop forgets a pooled session (it has ended or failed) and releases it.
// Only the one who removes it from the pool releases it: a session already
// replaced, or taken by Close, belongs to someone else.
func (c *Client) drop(s *session) {
	c.mu.Lock()
	removed := c.sessions[s.key] == s
	if removed {
		delete(c.sessions, s.key)
	}
	c.mu.Unlock()
	if removed {
		ctx, cancel := context.WithTimeout(context.Background(), cleanupBudget)
		defer cancel()
		_ = s.close(ctx)
	}
}

// CredentialKey names the per-caller credentials of opts as the sessions
// (and Config.OnNotification) name them: callers with equal keys share an
// upstream session.
func CredentialKey(opts Options) string { return credentialDigest(opts.Header, opts.Token) }

// OwnerKey names the own session of owner among those of the credentials
// named cred (a CredentialKey); cred itself when owner is "".
func OwnerKey(cred, owner string) string {
	if owner == "" {
		return cred
	}
	return cred + ownerSep + owner
}

// ownerSep separates the credentials from the owner in an OwnerKey.
const ownerSep = "\x00owner\x00"

// SplitNotificationKey is the inverse of OwnerKey: the credentials and the
// owner ("" for a shared session) a session's notification key names.
func SplitNotificationKey(key string) (cred, owner string) {
	cred, owner, _ = strings.Cut(key, ownerSep)
	return cred, owner
}

// OwnSessions names the live sessions of one caller each (their OwnerKeys):
// such an owner hears this upstream's notifications on its own session, not
// on the shared one. One scan of the pool serves a whole notification.
func (c *Client) OwnSessions() map[string]bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	var own map[string]bool
	for _, s := range c.sessions {
		if s.owned() && !s.gone() {
			if own == nil {
				own = map[string]bool{}
			}
			own[s.notify] = true
		}
	}
	return own
}

// credentialDigest names per-caller headers and token without keeping them
// in clear as a map key. It reads the map entries themselves, so a
// non-canonical key (which auth.Policy.Apply forwards under its canonical
// name) is hashed like any other. Keys that differ only in case are merged
// under the canonical name, each spelling's values kept apart and in a
// fixed order: Apply lets one of them win, so callers whose duplicates
// differ in any way never share a session.
func credentialDigest(h http.Header, token string) string {
	if len(h) == 0 && token == "" {
		return ""
	}
	type entry struct{ canon, key string }
	entries := make([]entry, 0, len(h))
	for k := range h {
		entries = append(entries, entry{http.CanonicalHeaderKey(k), k})
	}
	slices.SortFunc(entries, func(a, b entry) int {
		if c := strings.Compare(a.canon, b.canon); c != 0 {
			return c
		}
		return strings.Compare(a.key, b.key)
	})
	sum := sha256.New()
	fmt.Fprintf(sum, "%q\x00", token)
	for i, e := range entries {
		if i == 0 || entries[i-1].canon != e.canon {
			fmt.Fprintf(sum, "\x00%q:", e.canon)
		}
		sum.Write([]byte{'['})
		for _, v := range h[e.key] {
			fmt.Fprintf(sum, "%q,", v)
		}
		sum.Write([]byte{']'})
	}
	return hex.EncodeToString(sum.Sum(nil))
}

// WatchCredentials runs until ctx ends, renewing a minted credential before
// it expires even when no request needs it, and reports renewals that fail
// or narrow the granted scopes. Owners of long-lived streams call it. It
// returns at once for a static credential.
func (c *Client) WatchCredentials(ctx context.Context, report func(auth.Problem)) {
	if c.creds == nil {
		return
	}
	c.creds.Watch(ctx, report)
}

// Close ends every session (DELETE for HTTP sessions, stopping stdio
// children), including those being set up and those of ephemeral operations
// in flight, and refuses further operations.
func (c *Client) Close(ctx context.Context) error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	if c.sweep != nil {
		c.sweep.Stop()
		c.sweep = nil
	}
	all := make([]*session, 0, len(c.sessions)+len(c.own))
	for _, s := range c.sessions {
		all = append(all, s)
	}
	for s := range c.own {
		all = append(all, s)
	}
	c.sessions = map[string]*session{}
	c.mu.Unlock()
	var wg sync.WaitGroup
	errs := make([]error, len(all))
	for i, s := range all {
		wg.Go(func() {
			defer c.recoverPanic("closing a session", nil)
			errs[i] = s.close(ctx)
		})
	}
	wg.Wait()
	// Wait for the evicted sessions being ended in the background by
	// taking every token; later evictions end in their caller.
	for range maxRetiring {
		select {
		case c.retiring <- struct{}{}:
		case <-ctx.Done():
			errs = append(errs, ctx.Err())
		}
		if ctx.Err() != nil {
			break
		}
	}
	if c.cfg.ownHTTP {
		c.cfg.HTTPClient.CloseIdleConnections()
	}
	return errors.Join(errs...)
}
