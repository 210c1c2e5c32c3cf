package upstream

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"time"

	"github.com/mcpgw/mcpgw/internal/mcp"
	"github.com/mcpgw/mcpgw/internal/upstream/auth"
)

// Transport names as they appear in config.
const (
	TransportHTTP  = "http"
	TransportSSE   = "sse"
	TransportStdio = "stdio"
)

// VersionAuto asks the client to find the upstream's era itself.
const VersionAuto = "auto"

// Config describes one upstream server. It is a value: build it once.
type Config struct {
	Name      string // server name, for logs and errors
	Transport string // TransportHTTP (default), TransportSSE or TransportStdio
	URL       string // http and sse transports

	Command string   // stdio: executable
	Args    []string // stdio: arguments
	Env     []string // stdio: KEY=VALUE entries added to the child's minimal environment (see childEnv)
	Dir     string   // stdio: working directory ("" = the gateway's)

	// Local answers a TransportLocal upstream in process (see LocalServer).
	Local LocalServer

	// ProtocolVersion is VersionAuto ("" means auto) or one revision to pin.
	ProtocolVersion string

	// Auth is the credential and the static headers sent on every HTTP
	// request to this upstream.
	Auth auth.PolicyConfig
	// OAuth2, when set, mints the credential with the client-credentials
	// grant (auth_type oauth2, oauth2_flow client_credentials).
	OAuth2 *auth.ClientCredentialsConfig

	RequestTimeout  time.Duration // per request; default 60s
	ListTimeout     time.Duration // whole paginated walk or probe; default 30s
	MaxPages        int           // page cap for a list walk; default 100
	MaxMessageBytes int64         // largest message read from the upstream; default 32 MiB

	// AnswerBudget bounds the upstream answer bytes buffered at once; give
	// every client the same one to bound them process-wide. Nil means a
	// budget of DefaultAnswerBudget for this client alone.
	AnswerBudget *ByteBudget

	// MaxSessions caps the pooled sessions (one per credential and
	// capability set); a full pool evicts its least recently used idle
	// session. Default DefaultMaxSessions.
	MaxSessions int
	// MaxOwnedSessions caps, within MaxSessions, the sessions of single
	// callers (Interactions.Owner); a new one evicts the least recently
	// used idle one among them. Default DefaultMaxOwnedSessions, or
	// DefaultMaxOwnedStdio for stdio (each session is a child process).
	MaxOwnedSessions int
	// SessionIdle is how long a pooled session nobody uses is kept before
	// it is ended (DELETE). Default DefaultSessionIdle.
	SessionIdle time.Duration

	// MaxServerRequestsPerCall bounds the server→client requests
	// (elicitation, sampling, roots) served at once for one call; more are
	// refused at once with a JSON-RPC error. Default 8.
	MaxServerRequestsPerCall int
	// MaxServerRequests bounds them across the whole client; default 256.
	MaxServerRequests int

	// HTTPClient carries every HTTP request (connections are pooled in its
	// transport). Nil means a client built for this upstream.
	HTTPClient *http.Client
	Logger     *slog.Logger
	ClientInfo mcp.Implementation // how the gateway introduces itself

	// Offer is advertised by every legacy session (see Offer).
	Offer Offer

	// OnLog receives notifications/message params not tied to an operation.
	OnLog func(params json.RawMessage)
	// OnNotification receives server notifications not tied to an
	// operation (list_changed, resources/updated, and notifications/message,
	// which OnLog gets too).
	// session names the upstream session it came on (see
	// OwnerKey): a shared session's notifications belong to callers
	// with those credentials, an owner's session's to that owner alone.
	OnNotification func(session, method string, params json.RawMessage)

	// Middleware wraps every request sent through Call (see Middleware),
	// the first entry outermost.
	Middleware []Middleware

	ownHTTP bool // HTTPClient was built here, so Close releases its connections
}

func (c *Config) withDefaults() (Config, error) {
	cfg := *c
	if cfg.Transport == "" {
		cfg.Transport = TransportHTTP
	}
	if cfg.ProtocolVersion == "" {
		cfg.ProtocolVersion = VersionAuto
	}
	if cfg.RequestTimeout <= 0 {
		cfg.RequestTimeout = 60 * time.Second
	}
	if cfg.ListTimeout <= 0 {
		cfg.ListTimeout = 30 * time.Second
	}
	if cfg.MaxPages <= 0 {
		cfg.MaxPages = 100
	}
	if cfg.MaxMessageBytes <= 0 {
		cfg.MaxMessageBytes = 32 << 20
	}
	if cfg.MaxServerRequestsPerCall <= 0 {
		cfg.MaxServerRequestsPerCall = 8
	}
	if cfg.MaxServerRequests <= 0 {
		cfg.MaxServerRequests = 256
	}
	if cfg.MaxSessions <= 0 {
		cfg.MaxSessions = DefaultMaxSessions
	}
	if cfg.MaxOwnedSessions <= 0 {
		cfg.MaxOwnedSessions = DefaultMaxOwnedSessions
		if cfg.Transport == TransportStdio {
			cfg.MaxOwnedSessions = DefaultMaxOwnedStdio
		}
	}
	cfg.MaxOwnedSessions = min(cfg.MaxOwnedSessions, cfg.MaxSessions)
	if cfg.SessionIdle <= 0 {
		cfg.SessionIdle = DefaultSessionIdle
	}
	if cfg.AnswerBudget == nil {
		cfg.AnswerBudget = NewByteBudget(DefaultAnswerBudget)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	cfg.Logger = cfg.Logger.With("server", cfg.Name)
	if cfg.ClientInfo.Name == "" {
		cfg.ClientInfo = mcp.Implementation{Name: "mcpgw", Version: "dev"}
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = newHTTPClient()
		cfg.ownHTTP = true
	}
	if cfg.ProtocolVersion != VersionAuto && !mcp.IsKnownRevision(cfg.ProtocolVersion) {
		return cfg, fmt.Errorf("server %q: unknown protocol_version %q (want auto or one of %v)", cfg.Name, cfg.ProtocolVersion, mcp.Revisions())
	}
	switch cfg.Transport {
	case TransportHTTP, TransportSSE:
		u, err := url.Parse(cfg.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return cfg, fmt.Errorf("server %q: url must be an absolute http(s) URL", cfg.Name)
		}
		if cfg.Transport == TransportSSE && mcp.IsModern(cfg.ProtocolVersion) {
			return cfg, fmt.Errorf("server %q: the sse transport only speaks legacy revisions, not %s", cfg.Name, cfg.ProtocolVersion)
		}
	case TransportStdio:
		if cfg.Command == "" {
			return cfg, fmt.Errorf("server %q: stdio transport needs a command", cfg.Name)
		}
	case TransportLocal:
		if err := localDefaults(&cfg); err != nil {
			return cfg, err
		}
	default:
		return cfg, fmt.Errorf("server %q: unknown transport %q", cfg.Name, cfg.Transport)
	}
	return cfg, nil
}

// newHTTPClient returns a client with a pooled transport sized for a gateway.
func newHTTPClient() *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 64
	tr.MaxIdleConns = 256
	return NewHTTPClient(tr)
}

// NewHTTPClient returns the client an upstream uses when Config.HTTPClient
// is nil, built on tr (its dialer, proxy and TLS settings): plain-HTTP
// requests go over the gateway's own HTTP/1.1 connections (see the package
// doc), the rest through tr. It follows a redirect only where the
// credentials may go too (the rules of auth.CheckRedirect), so a redirect
// never carries them to another origin.
func NewHTTPClient(tr *http.Transport) *http.Client {
	return &http.Client{Transport: newH1Transport(tr), CheckRedirect: auth.CheckRedirect}
}

// sameOrigin compares scheme, host and effective port.
func sameOrigin(a, b *url.URL) bool {
	return a.Scheme == b.Scheme && a.Hostname() == b.Hostname() && effectivePort(a) == effectivePort(b)
}

func effectivePort(u *url.URL) string {
	if p := u.Port(); p != "" {
		return p
	}
	if u.Scheme == "https" {
		return "443"
	}
	return "80"
}
