package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpgw/mcpgw/internal/jsonrpc"
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
	dial        dialer
	era         *eraMemory
	creds       *credentials
	params      *paramHeaders // x-mcp-header annotations, mirrored into headers
	ids         atomic.Int64  // the JSON-RPC ids of requests to the upstream
	pinned      string        // Config.ProtocolVersion: VersionAuto or one revision
	clientInfo  mcp.Implementation
	listTimeout time.Duration
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

	life context.Context // ends when the session is released
	end  context.CancelFunc
	turn chan struct{} // capacity 1: held while setting up or closing

	// info and meta are written only by setup, before ready is set; after
	// that they never change, so requests read them without locking.
	info  Info
	metas sync.Map // capability key → modern request _meta, built once per set

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
		cred: cred, notify: OwnerKey(cred, ownerOf(opts)), life: life, end: end, turn: make(chan struct{}, 1)}
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

// handshake starts the transport and runs what the era needs. On failure
// the transport it leaves in s.tr is closed by setup, once.
func (s *session) handshake(ctx context.Context) error {
	e := s.e
	v := e.era.get()
	if err := s.open(ctx, v, false); err != nil {
		return err
	}
	if v == verdictUnknown {
		var err error
		if v, err = s.probe(ctx); err != nil {
			return err
		}
		e.era.set(v)
		e.log.Info("upstream protocol era found", "era", v.era().String())
	}
	if v == verdictModern {
		return s.startModern(ctx)
	}
	err := s.initialize(ctx)
	// Only an HTTP answer carries the fallback signal (a status).
	if err != nil && v == verdictLegacy && e.era.auto && sseFallbackSignal(err) {
		s.replaceTransport(nil)
		if err = s.open(ctx, verdictSSE, false); err == nil {
			if err = s.initialize(ctx); err == nil {
				e.era.set(verdictSSE)
			}
		}
	}
	return err
}

// open starts the transport for verdict v (see dialer for again).
func (s *session) open(ctx context.Context, v verdict, again bool) error {
	t, err := s.e.dial.dial(ctx, v, peer{hdr: s.headers, notify: s.notify}, again)
	if err != nil {
		return err
	}
	s.replaceTransport(t)
	return nil
}

// headers computes one request's headers: the credential (the caller's
// delegated token, a minted token, or the static auth_value), per-caller
// headers and static headers, by the server's policy.
func (s *session) headers(ctx context.Context) (http.Header, string, error) {
	return s.e.creds.headers(ctx, s.injected, s.token)
}

// probe sends server/discover and decides the era from the answer, following
// the spec's dual-era client rules.
func (s *session) probe(ctx context.Context) (verdict, error) {
	e := s.e
	// The probe is bounded by the listing budget; never by more than one
	// request's, so the request's own timeout cannot fire first and this
	// probe's budget is the one reported.
	budget := min(e.listTimeout, e.requestTimeout)
	// On a shared stream (stdio: the probe never runs on HTTP+SSE) no status
	// refuses an unknown method.
	quiet := s.transport().sharedStream()
	if quiet {
		// A legacy stdio server may ignore an unknown method; do not wait
		// long for it.
		budget = min(budget, 5*time.Second)
	}
	pctx, cancel := context.WithTimeout(ctx, budget)
	defer cancel()
	raw, err := s.rawRequest(pctx, mcp.MethodDiscover, nil, nil, true)
	if re := rpcErr(err); re != nil && re.Code() == mcp.CodeUnsupportedProtocolVersion && offersModern(re.Err.Data) && ctx.Err() == nil {
		// The upstream names a modern revision it does support: the spec
		// says to retry with it rather than fall back.
		raw, err = s.rawRequest(pctx, mcp.MethodDiscover, nil, nil, true)
	}
	if err == nil {
		var d mcp.DiscoverResult
		if jerr := json.Unmarshal(raw, &d); jerr != nil {
			return verdictLegacy, nil
		}
		if slices.Contains(d.SupportedVersions, mcp.Latest) {
			s.info = discoverInfo(d)
			return verdictModern, nil
		}
		return verdictLegacy, nil
	}
	if ctx.Err() != nil {
		return 0, ctx.Err()
	}
	if re := rpcErr(err); re != nil {
		switch {
		case re.Code() == mcp.CodeUnsupportedProtocolVersion:
			return verdictLegacy, nil // it does not speak our modern revision
		case mcp.IsModernErrorCode(re.Code()),
			re.Code() == jsonrpc.CodeMethodNotFound && re.HTTPStatus == http.StatusNotFound:
			return verdictModern, nil
		}
		return verdictLegacy, nil
	}
	var se *StatusError
	if errors.As(err, &se) {
		switch se.Status {
		case http.StatusBadRequest, http.StatusNotFound, http.StatusMethodNotAllowed:
			return verdictLegacy, nil
		}
		return 0, err
	}
	if quiet {
		if s.transport().expired() {
			// The child could not stand the probe; a fresh one gets the
			// handshake.
			if serr := s.open(ctx, verdictLegacy, true); serr != nil {
				return 0, serr
			}
		}
		return verdictLegacy, nil // no answer in time, or a non-modern one
	}
	if pctx.Err() != nil {
		return 0, e.timedOut(mcp.MethodDiscover, budget)
	}
	var pe *ProtocolError
	if errors.As(err, &pe) {
		return verdictLegacy, nil
	}
	return 0, err
}

// offersModern reports whether a -32022 error's data lists a modern
// revision this client speaks.
func offersModern(data json.RawMessage) bool {
	var d mcp.UnsupportedVersionData
	if json.Unmarshal(data, &d) != nil {
		return false
	}
	return slices.Contains(d.Supported, mcp.Latest)
}

func discoverInfo(d mcp.DiscoverResult) Info {
	info := Info{
		Era:               mcp.EraModern,
		Version:           mcp.Latest,
		SupportedVersions: d.SupportedVersions,
		Capabilities:      d.Capabilities,
		Instructions:      strings.TrimSpace(d.Instructions),
	}
	if raw, ok := d.Meta[mcp.MetaServerInfo]; ok {
		_ = json.Unmarshal(raw, &info.ServerInfo)
	}
	return info
}

// startModern prepares per-request _meta and learns the upstream's
// capabilities (server/discover) if the probe did not already.
func (s *session) startModern(ctx context.Context) error {
	e := s.e
	s.transport().negotiated(mcp.Latest)
	if s.info.Era == mcp.EraModern {
		return nil // the probe's discover already told us
	}
	s.info = Info{Era: mcp.EraModern, Version: mcp.Latest}
	budget := min(e.listTimeout, e.requestTimeout) // as for the probe
	dctx, cancel := context.WithTimeout(ctx, budget)
	defer cancel()
	raw, err := s.rawRequest(dctx, mcp.MethodDiscover, nil, nil, true)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if dctx.Err() != nil {
			return e.timedOut(mcp.MethodDiscover, budget)
		}
		var se *StatusError
		if errors.As(err, &se) {
			return err // credentials refused: nothing else will work either
		}
		e.log.Debug("server/discover failed; capabilities unknown", "err", causeText(err))
		return nil
	}
	var d mcp.DiscoverResult
	if err := json.Unmarshal(raw, &d); err != nil {
		return protoErr("invalid MCP response to server/discover", err)
	}
	s.info = discoverInfo(d)
	return nil
}

// initialize runs the legacy handshake.
func (s *session) initialize(ctx context.Context) error {
	e := s.e
	offer := e.pinned
	if offer == VersionAuto {
		offer = mcp.LatestLegacy
	}
	params, err := json.Marshal(struct {
		ProtocolVersion string             `json:"protocolVersion"`
		Capabilities    json.RawMessage    `json:"capabilities"`
		ClientInfo      mcp.Implementation `json:"clientInfo"`
	}{offer, s.caps, e.clientInfo})
	if err != nil {
		return err
	}
	// rawRequest applies the request timeout; on any failure below, setup
	// closes the transport (and so ends a session the upstream opened), once.
	raw, err := s.rawRequest(ctx, mcp.MethodInitialize, params, nil, false)
	if err != nil {
		return err
	}
	var res mcp.InitializeResult
	if err := json.Unmarshal(raw, &res); err != nil {
		return protoErr("invalid MCP response to initialize", err)
	}
	switch {
	case e.pinned != VersionAuto && res.ProtocolVersion != offer:
		return protoErr(fmt.Sprintf("upstream answered protocol version %q but %q is pinned", clip(res.ProtocolVersion), offer), nil)
	case !slices.Contains(mcp.LegacyRevisions(), res.ProtocolVersion):
		return protoErr(fmt.Sprintf("upstream answered unsupported protocol version %q", clip(res.ProtocolVersion)), nil)
	}
	s.info = Info{
		Era:          mcp.EraLegacy,
		Version:      res.ProtocolVersion,
		Capabilities: res.Capabilities,
		ServerInfo:   res.ServerInfo,
		Instructions: strings.TrimSpace(res.Instructions),
	}
	tr := s.transport()
	tr.negotiated(res.ProtocolVersion)
	nctx, cancel := context.WithTimeout(ctx, e.requestTimeout)
	defer cancel()
	if err := tr.send(nctx, jsonrpc.EncodeNotification(mcp.MethodInitialized, nil)); err != nil {
		if ctx.Err() == nil && nctx.Err() != nil {
			return e.timedOut(mcp.MethodInitialized, e.requestTimeout)
		}
		return err
	}
	if s.cred == "" && !s.ephemeral && !s.owned() {
		// The session shared by callers without credentials of their own
		// (at most one per capability set) always follows the upstream's
		// notifications; others (a caller's own among them) follow them
		// when a call or a follower needs it (Client.Follow).
		tr.follow(ctx, true)
	}
	return nil
}

func clip(s string) string {
	if len(s) > 32 {
		return s[:32] + "…"
	}
	return s
}

// request runs one operation on the ready session, under the per-request
// timeout.
func (s *session) request(ctx context.Context, method string, params json.RawMessage, in *Interactions) (Result, error) {
	raw, err := s.rawRequest(ctx, method, params, in, s.info.Era == mcp.EraModern)
	if err != nil {
		return Result{}, err
	}
	s.e.answered()
	res := Result{Raw: raw}
	if s.info.Era == mcp.EraModern {
		switch rt := jsonrpc.Member(raw, "resultType"); string(rt) {
		case "", `"` + mcp.ResultTypeComplete + `"`:
		case `"` + mcp.ResultTypeInputRequired + `"`:
			res.InputRequired = true
		default:
			return Result{}, protoErr("invalid MCP response: unknown resultType", nil)
		}
	}
	return res, nil
}

// rawRequest sends one request and returns the raw result.
func (s *session) rawRequest(ctx context.Context, method string, params json.RawMessage, in *Interactions, modern bool) (json.RawMessage, error) {
	tr := s.transport()
	if tr == nil {
		return nil, connErr("upstream session was closed", nil)
	}
	budget := s.e.requestTimeout
	if method == mcp.MethodSubscriptionsListen {
		budget = 1<<63 - 1 // a listen lasts until the caller ends it
	}
	rctx, cancel := context.WithTimeout(ctx, budget)
	defer cancel()
	resp, err := s.send(ctx, rctx, tr, method, params, in, modern)
	var se *StatusError
	if errors.As(err, &se) && se.Status == http.StatusUnauthorized && se.minted != "" {
		// A minted token the upstream no longer accepts: refresh it once
		// and retry once.
		s.e.creds.refused(se.minted)
		resp, err = s.send(ctx, rctx, tr, method, params, in, modern)
	}
	if err != nil {
		return nil, err
	}
	return resultOf(resp, 0)
}

// send encodes and sends one request under a fresh id.
func (s *session) send(ctx, rctx context.Context, tr transport, method string, params json.RawMessage, in *Interactions, modern bool) (*jsonrpc.Message, error) {
	e := s.e
	id := jsonrpc.IntID(e.ids.Add(1))
	var rewrite json.RawMessage
	if tr.sharedStream() {
		rewrite = json.RawMessage(`"mcpgw-` + id.String() + `"`)
	}
	var meta json.RawMessage
	if modern {
		var err error
		if meta, err = s.metaFor(in); err != nil {
			return nil, err
		}
	}
	p, err := prepareParams(params, meta, rewrite)
	if err != nil {
		return nil, &RPCError{Err: jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "%v", err)}
	}
	out := outgoing{id: id, method: method, body: jsonrpc.EncodeRequest(id, method, p.params), modern: modern}
	if modern {
		out.name = nameParam(method, params)
		if method == mcp.MethodToolsCall {
			out.header = e.params.headersFor(out.name, jsonrpc.Member(params, "arguments"))
		}
	}
	out.handshake = method == mcp.MethodInitialize
	ex := &exchange{env: e.env, in: in, method: method, token: p.callerToken, upToken: p.upToken, cred: s.notify}
	resp, err := tr.call(rctx, ex, out)
	if err != nil {
		return nil, s.callFailed(ctx, rctx, tr, out, err)
	}
	return resp, nil
}

// callFailed classifies a failed call and, when it was abandoned, tells the
// upstream so it can stop the work.
func (s *session) callFailed(ctx, rctx context.Context, tr transport, out outgoing, err error) error {
	e := s.e
	var nd *undeliveredError
	undelivered := errors.As(err, &nd)
	if undelivered {
		err = nd.err
	}
	abandoned := errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
	if !abandoned {
		return err
	}
	s.noteAbandoned(ctx, rctx)
	// A modern HTTP request is cancelled by closing its stream, which has
	// happened; everywhere else the upstream must be told, unless it never
	// received the whole request.
	if !undelivered && !s.ephemeral && !(out.modern && !tr.sharedStream()) && out.method != mcp.MethodInitialize {
		sendCancelled(tr, out.id, e.env)
	}
	if ctx.Err() == nil && rctx.Err() != nil {
		return e.timedOut(out.method, e.requestTimeout)
	}
	return err
}

func sendCancelled(tr transport, id jsonrpc.ID, e *env) {
	ctx, cancel := context.WithTimeout(context.Background(), cleanupBudget)
	defer cancel()
	params := append(append([]byte(`{"requestId":`), id.Raw()...), `,"reason":"request cancelled by the gateway"}`...)
	if err := tr.send(ctx, jsonrpc.EncodeNotification(mcp.NotifCancelled, params)); err != nil {
		e.log.Debug("could not send notifications/cancelled", "err", causeText(err))
	}
}

// nameParam returns the Mcp-Name value of a request (tool or prompt name,
// resource URI), or "".
func nameParam(method string, params json.RawMessage) string {
	key := mcp.NameParam(method)
	if key == "" || len(params) == 0 {
		return ""
	}
	raw := jsonrpc.Member(params, key)
	var name string
	if raw == nil || json.Unmarshal(raw, &name) != nil {
		return ""
	}
	return name
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

// follow opens the channel on which the upstream sends what belongs to no
// request, when the session has one and did not open it yet (see
// transport.follow).
func (s *session) follow(ctx context.Context) {
	if tr := s.transport(); tr != nil {
		tr.follow(ctx, false)
	}
}

// expired reports whether the session's conversation has ended.
func (s *session) expired() bool {
	tr := s.transport()
	return tr == nil || tr.expired()
}

// metaFor returns the modern request _meta for a call with these
// interactions: what the caller of this call can answer is what the upstream
// is told, request by request.
func (s *session) metaFor(in *Interactions) (json.RawMessage, error) {
	caps, key := in.capabilities(Offer{})
	if m, ok := s.metas.Load(key); ok {
		return m.(json.RawMessage), nil
	}
	m, err := mcp.RequestMeta(mcp.Latest, caps, s.e.clientInfo)
	if err != nil {
		return nil, err
	}
	s.metas.Store(key, m)
	return m, nil
}
