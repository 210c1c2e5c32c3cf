package front

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"

	"github.com/mcpgw/mcpgw/internal/fault"
	"github.com/mcpgw/mcpgw/internal/gateway"
	"github.com/mcpgw/mcpgw/internal/handoff"
	"github.com/mcpgw/mcpgw/internal/identity"
	"github.com/mcpgw/mcpgw/internal/jsonrpc"
	"github.com/mcpgw/mcpgw/internal/later"
	"github.com/mcpgw/mcpgw/internal/mcp"
	"github.com/mcpgw/mcpgw/internal/observe"
	"github.com/mcpgw/mcpgw/internal/reqscope"
	"github.com/mcpgw/mcpgw/internal/seal"
)

// DefaultMaxBodyBytes bounds one POSTed message when MCPConfig.MaxBodyBytes is zero.
const DefaultMaxBodyBytes = 4 << 20

// MCPConfig builds the MCP endpoints.
type MCPConfig struct {
	Gateway *gateway.Gateway
	Auth    *identity.Authenticator
	// Sealer seals legacy session ids; it must know SessionPurpose.
	Sealer *seal.Sealer
	// Advertised are the revisions served downstream.
	Advertised []string
	Info       mcp.Implementation
	// ScopedPrefix keeps tool/prompt prefixes on /{server}/mcp
	// (mcp_scoped_prefix, default true).
	ScopedPrefix bool
	// Resolve maps a URL server segment (name, alias or id) to the server
	// name; false means 404.
	Resolve func(segment string) (string, bool)
	// Expand maps a narrowing entry (a scoped URL item, an X-Mcp-Servers or
	// X-Mcp-Access-Groups item) to the servers it names: one server (by name,
	// id, alias or mcp_aliases) or an access group's; nil means Resolve alone.
	Expand       func(entry string) (servers []string, group, ok bool)
	MaxBodyBytes int64
	Logger       *slog.Logger
	// Sessions bounds legacy sessions and long-lived streams.
	Sessions SessionConfig
	// Detach, when set, is called with the request of a long-lived stream
	// once it is open (an acknowledged subscriptions/listen, a legacy
	// session's GET stream, an /mcp/sse stream): from then on it is a
	// stream, not a request in flight (internal/app then stops waiting for
	// it when it retires this front; the stream itself goes on under the
	// next front, see HandOver).
	Detach func(r *http.Request)
	// Observer receives a record of every downstream request (nil: none).
	Observer *observe.Observer
	// Hold, when set, is called with a POST to /mcp/sse/messages whose
	// answer is written after the POST returns; the request counts as in
	// flight until release is called (internal/app then waits for it
	// before closing the upstream clients this front's gateway used).
	Hold func(r *http.Request) (release func())
	// Legacy is the legacy session state this front serves, shared by the
	// fronts of one process so that sessions outlive a new config (see
	// HandOver); nil: the front holds its own, bounded by Sessions. When
	// set, its SessionConfig applies and Sessions is ignored.
	Legacy *Legacy
	// Metadata, when set, is the OAuth protected-resource metadata a 401 names in its
	// WWW-Authenticate (resource_metadata); nil: none.
	Metadata *ResourceMetadata
	// PublicBase is the gateway's public base URL for a request, which
	// the gateway names in authorize links; nil means the request's own
	// scheme and Host.
	PublicBase func(r *http.Request) string
}

// MCP serves /mcp (both eras), /{server}/mcp and the legacy HTTP+SSE
// transport.
type MCP struct {
	cfg      MCPConfig
	legacy   *Legacy
	sessions *sessions
	sseConns *sseConns
	// ctx is the legacy state's: legacy sessions' streams and follows end
	// with it (Close); listenCtx ends at this front's Close:
	// subscriptions/listen end with it.
	ctx          context.Context
	listenCtx    context.Context
	listenCancel context.CancelFunc
	// serverInfo is cfg.Info encoded once, for every modern result's _meta.
	serverInfo json.RawMessage
}

// NewMCP returns the MCP endpoints.
func NewMCP(cfg MCPConfig) *MCP {
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	lg := cfg.Legacy
	if lg == nil {
		lg = NewLegacy(cfg.Sealer, cfg.Sessions, cfg.Logger)
	}
	cfg.Sessions = lg.cfg
	listenCtx, listenCancel := context.WithCancel(context.Background())
	info, _ := json.Marshal(cfg.Info)
	h := &MCP{cfg: cfg, legacy: lg, sessions: lg.sessions, sseConns: &lg.sseConns, ctx: lg.ctx,
		listenCtx: listenCtx, listenCancel: listenCancel, serverInfo: info}
	lg.cur.CompareAndSwap(nil, h)
	return h
}

// Register adds the MCP routes to mux.
func (h *MCP) Register(mux *http.ServeMux) {
	base := h.cfg.PublicBase
	all := WithPublicBase(base, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { h.serve(w, r, "", false) }))
	mux.Handle("/mcp", all)
	mux.Handle("/mcp/{$}", all)
	scoped := WithPublicBase(base, http.HandlerFunc(h.serveScoped))
	mux.Handle("/{server}/mcp", scoped)
	mux.Handle("/{server}/mcp/{$}", scoped)
	mux.Handle("GET /mcp/sse", WithPublicBase(base, http.HandlerFunc(h.serveSSEStream)))
	mux.Handle("POST /mcp/sse/messages", WithPublicBase(base, http.HandlerFunc(h.serveSSEMessage)))
}

// Close ends every long-lived stream this front serves: its listens end
// with their graceful final response, and every legacy session's streams
// and background follows stop (those of the fronts sharing its Legacy too:
// Close is for shutdown).
func (h *MCP) Close() {
	h.listenCancel()
	h.legacy.close()
}

func (h *MCP) serveScoped(w http.ResponseWriter, r *http.Request) {
	h.serve(w, r, r.PathValue("server"), true)
}

// request is one downstream POST on its way through the front.
type request struct {
	w         http.ResponseWriter
	r         *http.Request
	msg       *jsonrpc.Message
	caller    *identity.Caller
	keyInAuth bool
	scope     []string // the servers the request is narrowed to (nil: not narrowed)
	urlScope  string   // the scoped URL's servers, joined: what a legacy session is bound to
	unprefix  bool
	obs       *observe.Request // the record being observed; nil when none
	handedOff bool             // the rest of the answer runs after the handler returned (internal/handoff)
}

// serve answers /mcp and, when scoped, /{segment}/mcp. The caller is
// established from the headers before anything else: who is refused learns
// nothing about which servers exist, and costs no body read.
func (h *MCP) serve(w http.ResponseWriter, r *http.Request, segment string, scoped bool) {
	modernHeader := mcp.IsModern(strings.TrimSpace(r.Header.Get(mcp.HeaderProtocolVersion)))
	switch r.Method {
	case http.MethodPost:
	case http.MethodGet, http.MethodDelete:
		if modernHeader || r.Header.Get(mcp.HeaderSessionID) == "" {
			w.Header().Set("Allow", "POST")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
	default:
		w.Header().Set("Allow", "GET, POST, DELETE")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	caller, ok := h.authenticate(w, r, r.Method == http.MethodPost)
	if !ok {
		return
	}
	if name := mcp.RepeatedHeader(r.Header); name != "" {
		writeRPCError(w, http.StatusBadRequest, jsonrpc.ID{}, jsonrpc.Errorf(mcp.CodeHeaderMismatch, "Header mismatch: %s must be sent once", name))
		return
	}
	nar, bad, ok := h.narrow(r, segment, scoped)
	if !ok {
		writeRPCError(w, http.StatusNotFound, jsonrpc.ID{}, jsonrpc.Errorf(jsonrpc.CodeInvalidRequest, "no MCP server or access group named %q", clip(bad)))
		return
	}
	if r.Method != http.MethodPost {
		h.serveLegacySession(w, r, caller, nar)
		return
	}
	req, ok := h.readMessage(w, r, caller)
	if !ok {
		return
	}
	req.scope, req.urlScope, req.unprefix = nar.scope, nar.url, nar.single && !h.cfg.ScopedPrefix
	span := h.observeRequest(req, observe.TransportStreamable)
	defer func() { endObserved(w, &span, req.handedOff) }()
	if req.msg.Method != mcp.MethodSubscriptionsListen {
		// Upstream answers keep their share of the byte budget until this
		// answer is written (a listen is a stream: its events are not held).
		ctx, done := later.With(req.r.Context())
		defer done()
		req.r = reqscope.Request(ctx, req.r)
	}
	if modernHeader || hasModernMeta(req.msg) {
		h.serveModern(req)
		return
	}
	h.serveLegacy(req)
}

// endObserved ends the record of a request when its answer ends: for one
// handed to the server (a listen, internal/handoff), when its stream
// ends, so the access log, metrics and live counters see its real end and
// duration; otherwise now. Only a handed-off record is moved to the heap.
func endObserved(w http.ResponseWriter, span *observe.RequestSpan, handedOff bool) {
	if handedOff {
		held := *span
		handoff.Finally(w, held.End)
		return
	}
	span.End()
}

// admit authenticates the sender of a POSTed message from the headers, then
// reads the message; on failure it has answered.
func (h *MCP) admit(w http.ResponseWriter, r *http.Request) (*request, bool) {
	caller, ok := h.authenticate(w, r, true)
	if !ok {
		return nil, false
	}
	return h.readMessage(w, r, caller)
}

// errBodyTooLarge is a body over MaxBodyBytes, announced or read.
var errBodyTooLarge = errors.New("request body too large")

// readBody reads r's body, at most MaxBodyBytes: errBodyTooLarge beyond
// that (before reading when Content-Length announces more), another error
// when it could not be read (in time).
func (h *MCP) readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	if r.ContentLength > h.cfg.MaxBodyBytes {
		return nil, errBodyTooLarge
	}
	body, err := readAllSized(http.MaxBytesReader(w, r.Body, h.cfg.MaxBodyBytes), r.ContentLength)
	if mbe := (*http.MaxBytesError)(nil); errors.As(err, &mbe) {
		return nil, errBodyTooLarge
	}
	return body, err
}

// maxSizedBody bounds the Content-Length readAllSized allocates for before
// the body arrives (io.ReadAll's first buffer is 512 bytes): what a client
// that announces a body and sends nothing makes the gateway hold.
const maxSizedBody = 4 << 10

// readAllSized is io.ReadAll for a body that announced its length n: one
// buffer of exactly n bytes when n is at most maxSizedBody, so that a
// message a held stream keeps (a listen's, decoded into slices of it)
// keeps no slack. A body longer than announced is read on to its end.
func readAllSized(r io.Reader, n int64) ([]byte, error) {
	if n <= 0 || n > maxSizedBody {
		return io.ReadAll(r)
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(r, b); err != nil {
		return nil, err
	}
	var one [1]byte
	m, err := r.Read(one[:])
	if m == 0 && err == io.EOF {
		return b, nil
	}
	if err != nil && err != io.EOF {
		return nil, err
	}
	rest, err := io.ReadAll(r)
	return append(append(b, one[:m]...), rest...), err
}

// readMessage reads and decodes the POSTed message of an established caller.
func (h *MCP) readMessage(w http.ResponseWriter, r *http.Request, caller *identity.Caller) (*request, bool) {
	body, err := h.readBody(w, r)
	if errors.Is(err, errBodyTooLarge) {
		writeRPCError(w, http.StatusRequestEntityTooLarge, jsonrpc.ID{}, jsonrpc.Errorf(jsonrpc.CodeInvalidRequest, "message larger than %d bytes", h.cfg.MaxBodyBytes))
		return nil, false
	}
	if err != nil {
		writeRPCError(w, http.StatusBadRequest, jsonrpc.ID{}, jsonrpc.Errorf(jsonrpc.CodeParseError, "could not read the request body in time"))
		return nil, false
	}
	msg, err := jsonrpc.Decode(body)
	if err != nil {
		var de *jsonrpc.DecodeError
		errors.As(err, &de)
		writeRPCError(w, http.StatusBadRequest, de.ID, de.RPCError())
		return nil, false
	}
	// The caller was established for the method its Mcp-Method header names;
	// the message must be that method, in either era.
	if hm := headerMethod(r); hm != "" && hm != msg.Method {
		writeRPCError(w, http.StatusBadRequest, msg.ID, jsonrpc.Errorf(mcp.CodeHeaderMismatch, "Header mismatch: Mcp-Method '%s' != method '%s'", clip(hm), clip(msg.Method)))
		return nil, false
	}
	if problem := nameMismatch(r, msg); problem != "" {
		writeRPCError(w, http.StatusBadRequest, msg.ID, jsonrpc.Errorf(mcp.CodeHeaderMismatch, "Header mismatch: %s", problem))
		return nil, false
	}
	_, fromAuth := identity.Credential(r)
	return &request{w: w, r: r, msg: msg, caller: caller, keyInAuth: fromAuth}, true
}

// nameMismatch reports, for a message sent with an Mcp-Name header (which
// the webhook saw), how the header differs from the name or uri the message
// acts on; "" when it matches or is absent.
func nameMismatch(r *http.Request, msg *jsonrpc.Message) string {
	v := r.Header.Values(mcp.HeaderName)
	if len(v) == 0 {
		return ""
	}
	name, err := mcp.DecodeHeaderValue(v[0])
	if err != nil {
		return "Mcp-Name header is malformed"
	}
	key := mcp.NameParam(msg.Method)
	if key == "" {
		// A method the revision gives no Mcp-Name (resources/subscribe,
		// say) may still act on a uri or name: a header naming exactly
		// that is consistent, anything else is not.
		if name == "" {
			return ""
		}
		for _, k := range [...]string{"uri", "name"} {
			if body, ok := stringMember(msg.Params, k); ok {
				if body == name {
					return ""
				}
				return "Mcp-Name '" + clip(name) + "' != params." + k + " '" + clip(body) + "'"
			}
		}
		return "Mcp-Name '" + clip(name) + "' sent for method '" + clip(msg.Method) + "', which names nothing"
	}
	return paramMismatch(msg.Params, key, name)
}

// headerMethod returns the method the Mcp-Method header names, or "" when
// it is absent, repeated or malformed.
func headerMethod(r *http.Request) string {
	v := r.Header.Values(mcp.HeaderMethod)
	if len(v) != 1 {
		return ""
	}
	m, err := mcp.DecodeHeaderValue(v[0])
	if err != nil {
		return ""
	}
	return m
}

// authenticate establishes the caller from the request's headers, or
// answers the refusal. bound says the request is a POSTed message whose method and name
// are then checked against Mcp-Method and Mcp-Name (readMessage): only then
// is the webhook told the method from Mcp-Method. Elsewhere nothing binds
// those headers to what the request does, so the webhook is told the HTTP
// route and does not see them.
func (h *MCP) authenticate(w http.ResponseWriter, r *http.Request, bound bool) (*identity.Caller, bool) {
	method := ""
	if bound {
		method = headerMethod(r)
	} else {
		r = withoutBindingHeaders(r)
	}
	if method == "" {
		method = r.URL.Path
	}
	caller, err := h.cfg.Auth.Authenticate(r.Context(), r, method)
	if err == nil {
		return caller, true
	}
	var ae *identity.Error
	status, text := http.StatusUnauthorized, "authentication required"
	if errors.As(err, &ae) {
		status, text = ae.Status, ae.Message
		if ae.Challenge != "" {
			w.Header().Set("WWW-Authenticate", ae.Challenge)
		}
	}
	if status == http.StatusUnauthorized && h.cfg.Metadata != nil {
		w.Header().Set("WWW-Authenticate", h.cfg.Metadata.challenge(r, w.Header().Get("WWW-Authenticate")))
	}
	code := int64(jsonrpc.CodeInvalidRequest)
	if status == http.StatusServiceUnavailable {
		code = jsonrpc.CodeInternalError
	}
	writeRPCError(w, status, jsonrpc.ID{}, jsonrpc.Errorf(code, "%s", text))
	return nil, false
}

// withoutBindingHeaders returns r, or a shallow copy of it without
// Mcp-Method and Mcp-Name when it carries either: on a route that does not
// check them against a message they must not sway authentication.
func withoutBindingHeaders(r *http.Request) *http.Request {
	if len(r.Header.Values(mcp.HeaderMethod))+len(r.Header.Values(mcp.HeaderName)) == 0 {
		return r
	}
	c := *r
	c.Header = r.Header.Clone()
	c.Header.Del(mcp.HeaderMethod)
	c.Header.Del(mcp.HeaderName)
	return &c
}

// hasModernMeta reports a request whose params._meta names a protocol
// version: a modern request even without the header.
func hasModernMeta(msg *jsonrpc.Message) bool {
	if msg.Params == nil || msg.Params[0] != '{' {
		return false
	}
	meta := jsonrpc.Member(msg.Params, "_meta")
	return meta != nil && meta[0] == '{' && jsonrpc.Member(meta, mcp.MetaProtocolVersion) != nil
}

// operation builds the core's view of a request of one era (revision
// when negotiated): the credentials it may forward, and for a modern caller
// its Mcp-Param-* headers.
func (h *MCP) operation(req *request, surface fault.Surface, revision string) gateway.Operation {
	op := gateway.Operation{
		Method:      req.msg.Method,
		Params:      req.msg.Params,
		Caller:      req.caller,
		Scope:       req.scope,
		Unprefixed:  req.unprefix,
		Credentials: credentials(req.r.Header, req.keyInAuth),
		Surface:     surface,
		Revision:    revision,
	}
	if surface == fault.Modern {
		op.ParamHeaders = paramHeaders(req.r.Header)
	}
	if req.obs != nil {
		req.obs.Protocol = revision
	}
	return op
}

// advertisedIn returns the advertised revisions of one era, newest first.
func (h *MCP) advertisedIn(era mcp.Era) []string {
	var out []string
	for _, v := range h.cfg.Advertised {
		if mcp.EraOf(v) == era {
			out = append(out, v)
		}
	}
	slices.SortFunc(out, func(a, b string) int { return strings.Compare(b, a) })
	return out
}

// inflight tracks the requests of one legacy session, so that
// notifications/cancelled can stop them.
type inflight struct {
	mu      sync.Mutex
	cancels map[string]context.CancelFunc
}

func (f *inflight) add(id jsonrpc.ID, cancel context.CancelFunc) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.cancels == nil {
		f.cancels = map[string]context.CancelFunc{}
	}
	f.cancels[id.String()] = cancel
}

func (f *inflight) remove(id jsonrpc.ID) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.cancels, id.String())
}

func (f *inflight) cancel(raw []byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if c, ok := f.cancels[string(raw)]; ok {
		c()
	}
}
