package gateway

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"log/slog"
	"net/textproto"
	"strings"
	"time"

	"github.com/mcpgw/mcpgw/internal/catalog"
	"github.com/mcpgw/mcpgw/internal/fault"
	"github.com/mcpgw/mcpgw/internal/identity"
	"github.com/mcpgw/mcpgw/internal/jsonrpc"
	"github.com/mcpgw/mcpgw/internal/mcp"
	"github.com/mcpgw/mcpgw/internal/panics"
	"github.com/mcpgw/mcpgw/internal/policy"
	"github.com/mcpgw/mcpgw/internal/seal"
	"github.com/mcpgw/mcpgw/internal/upstream"
	"github.com/mcpgw/mcpgw/internal/upstream/auth"
)

// Server is one configured upstream as the gateway routes to it.
type Server struct {
	Name   string // served prefix; unique
	ID     string
	Alias  string
	Client *upstream.Client
	// ExtraHeaders are caller header names forwarded to this server.
	ExtraHeaders []string
	// Delegate forwards the caller's own bearer token as the credential
	// (auth_type oauth_delegate).
	Delegate         bool
	AllowElicitation bool
	AllowSampling    bool
	// CallerToken says the server's credential is the caller's own OAuth
	// token (auth_type oauth2 with oauth2_flow authorization_code): a caller
	// that holds none cannot use it, and discovery does not contact it.
	CallerToken bool
	// Identity, when set, names the caller to the server: the header and
	// value sent on every request for caller (a signed identity token); ""
	// sends none. It must be cheap: it runs for every request.
	Identity func(caller *identity.Caller) (header, value string)
	// TargetDigest names the server's configuration (see TargetDigest);
	// continuations minted for it die when it changes.
	TargetDigest string
}

// Config builds a Gateway.
type Config struct {
	Servers     []*Server
	Policy      *policy.Policy
	Catalog     *catalog.Catalog
	Info        mcp.Implementation // the gateway's serverInfo
	Advertised  []string           // revisions served downstream
	ListTimeout time.Duration      // bounds discovery probes
	Logger      *slog.Logger
	// Continuations seals MRTR continuations; nil (no LITELLM_SALT_KEY)
	// refuses them.
	Continuations *seal.Sealer
	// Sampler fulfils upstream sampling requests; nil when no model is
	// configured.
	Sampler Sampler
	// Limit counts one discovery of server against the server's request
	// limit (rpm): an error means the limit is spent, and the discovery
	// does not contact the server. nil counts nothing.
	Limit func(ctx context.Context, server string) error
	// AdmitCall admits one tools/call by caller to server (by name) before
	// it is sent, within the caller's own limits: it returns the context
	// the call is sent with (it may note what was admitted, for the
	// upstream client's middleware) and the release to call once the call
	// is done, or the fault that refuses it. nil admits every call.
	AdmitCall func(ctx context.Context, caller *identity.Caller, server string) (admitted context.Context, release func(), refused *fault.Fault)
	// MaxListenersPerCaller bounds the upstream listeners one caller (its
	// user, else its binding) holds at once across its listens; zero means
	// DefaultMaxListenersPerCaller. A listen that would pass it is refused.
	MaxListenersPerCaller int
	// Middleware wraps Do, outermost first: each sees every operation and
	// its outcome, and may answer without calling the next.
	Middleware []Middleware
	// Guard runs guardrails around tool calls; nil runs none.
	Guard CallGuard
	// Listens is the listen state shared by the gateways built over
	// successive configs (see Listens and TakeOver); nil means a Listens
	// of this gateway's own.
	Listens *Listens
	// CallerTokens supplies callers' own tokens for CallerToken servers;
	// nil: no caller holds one.
	CallerTokens CallerTokens
	// ListenTokenCheck is how often a held listen checks the caller tokens
	// its upstream listeners were opened with (listen_callertoken.go);
	// zero means DefaultListenTokenCheck.
	ListenTokenCheck time.Duration
	// Rules are the mcp_policies rules; they narrow what Policy allows, at
	// listing and calling alike (rules.go). nil means none.
	Rules *policy.Rules
}

// Handler runs one operation: Do's shape, for middleware.
type Handler func(ctx context.Context, op Operation) Outcome

// Middleware wraps a Handler (metrics, traces, limits, guardrails).
type Middleware func(next Handler) Handler

// Gateway is the era-neutral core: an Operation in, an Outcome out.
type Gateway struct {
	cfg     Config
	servers map[string]*Server
	// ls holds the listens, the hub of listens following legacy upstream
	// sessions and each caller's listener count, shared across configs.
	ls     *Listens
	handle Handler // do wrapped in cfg.Middleware
	// addressed routes callers' x-mcp-{server}-{header} headers.
	addressed *auth.Addressed
}

// New returns a gateway over cfg.
func New(cfg Config) *Gateway {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.ListTimeout <= 0 {
		cfg.ListTimeout = 30 * time.Second
	}
	g := &Gateway{cfg: cfg, servers: map[string]*Server{}, ls: cfg.Listens}
	if g.ls == nil {
		g.ls = NewListens()
	}
	names := make(map[string][]string, len(cfg.Servers))
	for _, s := range cfg.Servers {
		g.servers[s.Name] = s
		names[s.Name] = []string{s.Alias}
	}
	g.addressed = auth.NewAddressed(names)
	g.handle = g.do
	for i := len(cfg.Middleware) - 1; i >= 0; i-- {
		g.handle = cfg.Middleware[i](g.handle)
	}
	return g
}

// Operation is one downstream request, whatever its era.
type Operation struct {
	Method string
	Params json.RawMessage // as the caller sent them, _meta included
	Caller *identity.Caller
	// Scope narrows the request to servers named in the URL; nil means all
	// the caller may use.
	Scope []string
	// Unprefixed serves the scoped server's own names (mcp_scoped_prefix
	// false); only valid with exactly one server in scope.
	Unprefixed bool
	// Credentials are what the caller sent that may be forwarded upstream.
	Credentials Credentials
	// ParamHeaders are the caller's Mcp-Param-* headers (canonical keys),
	// checked against a tools/call's arguments for modern callers.
	ParamHeaders map[string][]string
	// Surface is how the caller is answered; the core uses it only for
	// behaviour (modern callers get continuations, legacy ones are asked on
	// their session, REST lists never answer -32601).
	Surface fault.Surface
	// Revision is the protocol revision the caller speaks ("" when none was
	// negotiated, as on REST).
	Revision string
	// Interactions reach a legacy caller's session for server→client
	// requests; nil when the caller cannot take them.
	Interactions *Interactions
	// Progress receives the upstream's progress notifications for this
	// request, with the caller's own token; nil when none was asked for.
	Progress func(params json.RawMessage)
	// Log relays the upstream's log notifications (notifications/message)
	// to the caller; nil drops them.
	Log func(params json.RawMessage)
	// bound is the caller's binding and scope, computed once (see bound()).
	bound string
	// ClientCaps are the caller's declared ClientCapabilities (modern:
	// from _meta; legacy: from initialize).
	ClientCaps json.RawMessage
	// WholeList asks a list method for the whole list as one page, without
	// a cursor (REST listings); otherwise pages end where the catalog's
	// page size or an upstream's page ends.
	WholeList bool
	// callerTokens are the caller's own tokens for CallerToken servers,
	// by server, resolved once per operation (resolveCallerTokens).
	callerTokens map[string]string
}

// Credentials are the caller's credentials the front allows to be
// forwarded: never the gateway's own credential.
type Credentials struct {
	// header holds the caller's request headers (canonical keys) a server
	// may opt into forwarding (extra_headers), shared with the request
	// rather than copied (a held stream keeps its credentials for its
	// life): Get and All never show the gateway's own credential in it
	// (x-litellm-api-key always, Authorization when omitAuth), nor, when
	// several, a credential meant for one server (Authorization,
	// x-mcp-auth).
	header   map[string][]string
	omitAuth bool
	several  bool
	// Bearer is the caller's own bearer token, for delegating servers; ""
	// when Authorization carried the gateway key or no bearer token.
	Bearer string
}

// Asker asks the caller one server→client request and returns its answer.
type Asker func(ctx context.Context, params json.RawMessage) (json.RawMessage, error)

// Interactions are what a legacy caller's session can be asked mid-call.
type Interactions struct {
	// Owner names the caller's session once it holds per-session state; ""
	// shares upstream sessions with every caller of the same credentials.
	Owner  string
	Elicit Asker // elicitation/create; nil when not declared
	Roots  Asker // roots/list; nil when not declared
	Sample Asker // sampling/createMessage; nil when not declared
}

// Outcome is the core's answer, one of: Complete (Result set),
// InputRequired (Result is an input_required result with a sealed
// continuation), or Error (Fault set). Encoding it for the caller's era is
// the front's job.
type Outcome struct {
	Result        json.RawMessage
	InputRequired bool
	Fault         *fault.Fault
}

// Failed is an Error outcome.
func Failed(f *fault.Fault) Outcome { return Outcome{Fault: f} }

func fail(c fault.Class, format string, args ...any) Outcome {
	return Outcome{Fault: fault.New(c, format, args...)}
}

// modern reports a 2026-07-28 caller.
func (op *Operation) modern() bool { return op.Surface == fault.Modern }

// recovered, deferred first thing in a goroutine the gateway starts (or a
// callback that runs on someone else's), turns a panic into an ERROR log
// line and, when cancel is set, ends the work it belongs to. The panic value
// is not logged: it may quote arguments or tokens; the stack names the place.
func (g *Gateway) recovered(where string, cancel context.CancelFunc) {
	if r := recover(); r != nil {
		g.cfg.Logger.Error("recovered from a panic; the gateway keeps serving", append([]any{"in", where}, panics.Attrs(r)...)...)
		if cancel != nil {
			cancel()
		}
	}
}

// visible lists the servers this operation may use, in config order.
func (g *Gateway) visible(op *Operation) []string {
	return g.cfg.Policy.Visible(op.Caller, op.Scope)
}

// Do runs one operation through the configured middleware.
func (g *Gateway) Do(ctx context.Context, op Operation) Outcome {
	return g.handle(ctx, op)
}

func (g *Gateway) do(ctx context.Context, op Operation) Outcome {
	g.resolveCallerTokens(ctx, &op)
	route := mcp.RouteOf(op.Method)
	if mcp.MayReturnInputRequired(op.Method) && resuming(op.Params) {
		return g.resume(ctx, &op)
	}
	switch route {
	case mcp.RouteList:
		return g.list(ctx, &op)
	case mcp.RouteCallTool:
		return g.callNamed(ctx, &op, true)
	case mcp.RouteGetPrompt:
		return g.callNamed(ctx, &op, false)
	case mcp.RouteReadResource:
		return g.readResource(ctx, &op)
	case mcp.RouteComplete:
		return g.complete(ctx, &op)
	case mcp.RouteDiscover:
		return g.discover(ctx, &op)
	case mcp.RouteSetLevel:
		return g.setLevel(ctx, &op)
	}
	return fail(fault.MethodNotFound, "Method not found: %s", op.Method)
}

// resuming reports params that continue an input_required exchange.
func resuming(params json.RawMessage) bool {
	return jsonrpc.Member(params, "requestState") != nil || jsonrpc.Member(params, "inputResponses") != nil
}

// sharedOptions are options for what serves callers of every era alike
// (listings, discovery): on the upstream's own era's session, never a
// legacy caller's (see options).
func (g *Gateway) sharedOptions(s *Server, op *Operation, multi bool) upstream.Options {
	opts := g.options(s, op, multi)
	opts.LegacyCaller = false
	return opts
}

// query builds the catalog view of this operation's caller.
func (g *Gateway) query(op *Operation, servers []string) catalog.Query {
	multi := len(servers) > 1
	return catalog.Query{
		Servers:  servers,
		Prefixed: !op.Unprefixed,
		Binding:  op.binding(),
		Options: func(name string) upstream.Options {
			return g.sharedOptions(g.servers[name], op, multi)
		},
		CredentialKey: func(name string) string {
			return credentialKey(g.options(g.servers[name], op, multi))
		},
		AllowTool: func(server, tool string) bool {
			return g.cfg.Policy.ToolAllowed(op.Caller, server, tool)
		},
		Whole: op.WholeList,

		AllowToolDef: g.ruleFilter(op), // mcp_policies (rules.go)
	}
}

func (g *Gateway) list(ctx context.Context, op *Operation) Outcome {
	servers := g.visible(op)
	var p struct {
		Cursor string `json:"cursor"`
	}
	if len(op.Params) > 0 {
		if err := json.Unmarshal(op.Params, &p); err != nil {
			return fail(fault.InvalidParams, "invalid params: %v", err)
		}
	}
	if out, lacking := g.lacksFeature(ctx, op, servers); lacking {
		return out
	}
	res, fail := g.cfg.Catalog.List(ctx, g.query(op, servers), op.Method, p.Cursor)
	if fail != nil {
		return Failed(fail)
	}
	return Outcome{Result: res}
}

// lacksFeature answers a list on a single-server endpoint whose server does
// not offer that feature as the server itself would: -32601. An aggregate
// lists nothing for it instead (it advertises every feature); so does a
// server whose capabilities cannot be learnt now.
func (g *Gateway) lacksFeature(ctx context.Context, op *Operation, servers []string) (Outcome, bool) {
	if op.Surface == fault.REST || !scopedTo(op, servers) {
		return Outcome{}, false
	}
	infos, _ := g.infos(ctx, op, servers) // breakers and the listing timeout apply
	if infos[0] == nil || infos[0].Capabilities.Has(mcp.RequiredServerCapability(op.Method)) {
		return Outcome{}, false
	}
	return fail(fault.MethodNotFound, "Method not found: %s", op.Method), true
}

// options are the upstream options of one server for this operation: the
// caller headers the server opted into, the caller's x-mcp-{server}-{header}
// headers addressed to it, for delegating servers the caller's own token,
// and the signed identity when the server asks for one. The caller's
// Authorization (and the deprecated x-mcp-auth) is never forwarded when more
// than one server is in scope (nor, as the front leaves it out of
// Credentials, when it carried the gateway key); a header addressed to one
// server reaches that server alone, whatever the scope. A legacy caller's
// operation asks for a legacy-era session where the upstream client offers
// one (a stdio child in auto mode: see upstream.Options.LegacyCaller).
func (g *Gateway) options(s *Server, op *Operation, multi bool) upstream.Options {
	var opts upstream.Options
	if s == nil {
		return opts
	}
	opts.LegacyCaller = op.Surface == fault.Legacy || op.Surface == fault.LegacySSE
	set := func(key string, v []string) {
		if opts.Header == nil {
			opts.Header = map[string][]string{}
		}
		opts.Header[key] = v
	}
	for _, name := range s.ExtraHeaders {
		if strings.EqualFold(name, "Authorization") && multi {
			continue
		}
		if strings.EqualFold(name, identity.HeaderAPIKey) || g.addressed.IsAddressed(name) {
			continue // the gateway credential never leaves the gateway; addressed headers go to their server only
		}
		key := textproto.CanonicalMIMEHeaderKey(name)
		if v := op.Credentials.Get(key); len(v) > 0 {
			set(key, v)
		}
	}
	for key, v := range g.addressed.For(op.Credentials.All(), s.Name) {
		set(key, v)
	}
	if s.Delegate && !multi {
		opts.Token = op.Credentials.Bearer
	}
	if !multi && opts.Token == "" && !s.CallerToken {
		if v := op.Credentials.Get(auth.HeaderMCPAuth); len(v) > 0 {
			opts.Token = strings.TrimSpace(v[0])
		}
	}
	if s.Identity != nil {
		if name, value := s.Identity(op.Caller); name != "" {
			set(name, []string{value})
		}
	}
	if s.CallerToken {
		opts.Token = op.callerTokens[s.Name] // the gateway's token for this caller, never the caller's credential
	}
	return opts
}

// credentialKey names the credentials in o for cache keys, without keeping
// them in clear.
func credentialKey(o upstream.Options) string {
	if len(o.Header) == 0 && o.Token == "" {
		return ""
	}
	b, _ := json.Marshal(struct {
		H map[string][]string
		T string
	}{o.Header, o.Token})
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// Visible lists the servers op's caller may use in op's scope, in config
// order.
func (g *Gateway) Visible(op Operation) []string { return g.ls.currentOr(g).visible(&op) }

// binding names the caller and the scope it selected: what cursors, private
// cache entries and continuations are bound to. It is computed once per
// operation.
func (op *Operation) binding() string {
	if op.bound == "" {
		op.bound = op.Caller.Binding() + "|" + strings.Join(op.Scope, ",")
	}
	return op.bound
}
