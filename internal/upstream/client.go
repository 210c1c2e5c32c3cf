package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/mcpgw/mcpgw/internal/jsonrpc"
	"github.com/mcpgw/mcpgw/internal/mcp"
	"github.com/mcpgw/mcpgw/internal/upstream/auth"
)

// Client talks to one configured upstream server, in whatever transport and
// protocol era it speaks. It is safe for concurrent use.
type Client struct {
	*env // the log, limits and callbacks the layers below share

	cfg    Config
	params paramHeaders     // x-mcp-header annotations of the tools
	pages  pageMemo         // the last list walk's pages, parsed
	deps   *sessionEnv      // what every session of this client shares
	call   CallFunc         // Config.Middleware around roundTrip; nil without any
	watch  *credentialWatch // renews a minted credential while anyone follows

	mu       sync.Mutex
	closed   bool
	sessions map[string]*session   // pooled, by options key; at most MaxSessions
	own      map[*session]struct{} // ephemeral sessions in use, so Close can end them
	sweep    *time.Timer           // evicts idle sessions; nil when none is idle

	retiring chan struct{} // one token per evicted session being ended in the background
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
	// Retry marks a request that repeats an operation the caller already
	// made: the retry of a tools/call after an input round, or a modern
	// caller's resumed continuation. The client sends it like any other;
	// middleware that counts the caller's operations (a server's rpm) counts
	// only the first.
	Retry bool
	// LegacyCaller marks an operation of a caller that speaks a legacy
	// revision (2025-11-25 or earlier). On a stdio upstream in auto mode it
	// runs on a session in the legacy era (a child process of its own, so
	// never on the modern-era child), which costs a dual-era child less per
	// call and loses such a caller nothing: it cannot take input_required.
	// Elsewhere it changes nothing.
	LegacyCaller bool

	// held is the session the operation already holds (the pages of an
	// ephemeral list walk); nil lets the options select one.
	held *session
	// same is the result this page had in the last walk (pageMemo), which
	// the answer is likely to repeat (see outgoing.same); nil for none.
	same json.RawMessage
}

// Result is an upstream answer, kept as the upstream's bytes.
type Result struct {
	Raw           json.RawMessage // the JSON-RPC result object; shared, never written into (see Middleware)
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
	creds := &credentials{policy: policy}
	if full.OAuth2 != nil {
		occ := *full.OAuth2
		if occ.HTTPClient == nil {
			occ.HTTPClient = full.HTTPClient
		}
		if creds.mint, err = auth.NewClientCredentials(occ); err != nil {
			return nil, fmt.Errorf("server %q: %w", full.Name, err)
		}
	}
	e := newEnv(&full)
	c := &Client{
		env:      e,
		cfg:      full,
		sessions: map[string]*session{},
		own:      map[*session]struct{}{},
		retiring: make(chan struct{}, maxRetiring),
	}
	c.deps = &sessionEnv{
		env:         e,
		dial:        newDialer(e, &full, creds),
		era:         newEraMemory(&full),
		creds:       creds,
		params:      &c.params,
		pinned:      full.ProtocolVersion,
		legacyEra:   full.Transport == TransportStdio && full.ProtocolVersion == VersionAuto,
		clientInfo:  full.ClientInfo,
		listTimeout: full.ListTimeout,
	}
	c.call = chain(full.Middleware, c.roundTrip)
	c.watch = &credentialWatch{env: e, mint: creds.mint}
	return c, nil
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
// The request passes through Config.Middleware.
func (c *Client) Call(ctx context.Context, method string, params json.RawMessage, opts Options) (Result, error) {
	c.logStart(ctx, method, params)
	var (
		res Result
		err error
	)
	if c.call != nil {
		res, err = c.call(ctx, method, params, opts)
	} else {
		res, err = c.roundTrip(ctx, method, params, opts)
	}
	if err != nil {
		c.logFailure(ctx, method, nameOf(method, params), opts, err)
	}
	return res, err
}

// roundTrip is the CallFunc at the end of the middleware chain: the request
// on the session the options select.
func (c *Client) roundTrip(ctx context.Context, method string, params json.RawMessage, opts Options) (Result, error) {
	switch {
	case opts.held != nil:
		return opts.held.request(ctx, method, params, opts.Interactions, opts.same)
	case opts.Ephemeral:
		var res Result
		err := c.ownSession(ctx, opts, func(s *session) (err error) {
			res, err = s.request(ctx, method, params, opts.Interactions, opts.same)
			return err
		})
		return res, err
	}
	return c.pooledCall(ctx, method, params, opts)
}

// logStart logs an operation's method and name (never its arguments,
// cursors or tokens) when debug logging is on; otherwise it costs nothing.
func (c *Client) logStart(ctx context.Context, method string, params json.RawMessage) {
	if c.cfg.Logger.Enabled(ctx, slog.LevelDebug) {
		c.cfg.Logger.Debug("upstream call", "method", method, "name", nameOf(method, params))
	}
}

// nameOf is the tool or prompt an operation names, for the log; "" for
// other methods.
func nameOf(method string, params json.RawMessage) string {
	if method == mcp.MethodToolsCall || method == mcp.MethodPromptsGet {
		return nameParam(method, params)
	}
	return ""
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
		res, err := s.request(ctx, method, params, opts.Interactions, opts.same)
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
		if attempt == 0 && c.deps.era.auto && eraMismatch(s.info.Era, err) {
			c.cfg.Logger.Info("upstream changed protocol era; probing again")
			c.drop(s)
			c.deps.era.forget()
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
	s := newSession(c.deps, "", caps, opts, true)
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
	c.closing.Store(true)
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
	c.watch.close()
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
