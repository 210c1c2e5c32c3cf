package config

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"time"

	"github.com/mcpgw/mcpgw/internal/mcp"
)

// Transport is how the gateway talks to one upstream server.
type Transport string

// The transports a server may name in `transport`.
const (
	TransportHTTP  Transport = "http"
	TransportSSE   Transport = "sse"
	TransportStdio Transport = "stdio"
)

// AuthType is the kind of credential the gateway sends to an upstream server.
type AuthType string

// The auth types a server may name in `auth_type`.
const (
	AuthNone          AuthType = "none"
	AuthBearerToken   AuthType = "bearer_token"
	AuthToken         AuthType = "token"
	AuthBasic         AuthType = "basic"
	AuthAPIKey        AuthType = "api_key"
	AuthAuthorization AuthType = "authorization"
	AuthOAuth2        AuthType = "oauth2"
	AuthOAuthDelegate AuthType = "oauth_delegate"
)

// The OAuth2 flows a server may name in `oauth2_flow`.
const (
	OAuth2ClientCredentials = "client_credentials"
	OAuth2AuthorizationCode = "authorization_code"
)

// ProtocolAuto is the `protocol_version` that lets the gateway negotiate the upstream's revision.
const ProtocolAuto = "auto"

// DefaultToolPrefixSeparator joins a server name and a tool name (`<server>-<tool>`).
const DefaultToolPrefixSeparator = "-"

// maxMergeNodes bounds the YAML nodes that merge keys may pull into mappings, in all.
const maxMergeNodes = 1 << 20

// maxConfigBytes bounds the size of a config file Load reads.
const maxConfigBytes = 16 << 20

// KnownRevisions returns the MCP protocol revisions the config accepts, oldest first.
func KnownRevisions() []string {
	r := mcp.Revisions()
	slices.Reverse(r)
	return r
}

// DefaultAdvertisedVersions returns the default of general_settings.mcp_advertised_versions:
// every revision the gateway speaks, oldest first, so a client pinned to an older revision is
// answered with its own.
func DefaultAdvertisedVersions() []string {
	return KnownRevisions()
}

func isKnownRevision(v string) bool { return slices.Contains(KnownRevisions(), v) }

// Config is one loaded, validated configuration file. Treat it as immutable.
type Config struct {
	// Servers are the entries of mcp_servers, in file order.
	Servers []Server
	// General holds general_settings.
	General GeneralSettings
	// LiteLLM holds litellm_settings.
	LiteLLM LiteLLMSettings
	// Models holds model_list.
	Models []Model
	// Redis is the Redis connection named by litellm_settings.cache_params and router_settings.
	Redis Redis
	// EnvironmentVariables holds environment_variables as written (after their own os.environ/ references).
	EnvironmentVariables map[string]string
	// Guardrails holds the top-level guardrails (generic_guardrail_api entries).
	Guardrails []Guardrail
}

// Routes maps every route key (a URL segment of /{server}/mcp, a REST server_id) to the name of
// the server it selects: a server's name wins over any server_id or alias, a server_id over any
// alias, and among equals the earlier server in the file wins. Build it once and look keys up.
func Routes(servers []Server) map[string]string {
	out := make(map[string]string, 3*len(servers))
	for _, key := range []func(*Server) string{
		func(s *Server) string { return s.Name },
		func(s *Server) string { return s.ServerID },
		func(s *Server) string { return s.Alias },
	} {
		for i := range servers {
			k := key(&servers[i])
			if _, taken := out[k]; k != "" && !taken {
				out[k] = servers[i].Name
			}
		}
	}
	return out
}

// Server is one entry of mcp_servers; Name is its YAML key.
type Server struct {
	// Name is the YAML key; tool and prompt names are served as <Name><separator><tool>.
	Name string
	// ServerID is the stable id permissions refer to; it defaults to Name.
	ServerID string
	// Alias is a display name with spaces replaced by "_"; empty when unset.
	Alias string
	// Description is free text for listings.
	Description string

	// URL is the upstream endpoint for the http and sse transports.
	URL string
	// Transport is how to reach the server; it defaults to TransportHTTP.
	Transport Transport
	// Command is the program a stdio server runs.
	Command string
	// Args are Command's arguments.
	Args []string
	// Env is extra environment for Command.
	Env map[string]string
	// SpecPath (spec_path) is a file path or http(s) URL of an OpenAPI 3 document whose
	// operations the server serves as tools, called against URL; "" for an MCP server.
	SpecPath string
	// SpecPathLine is the line of spec_path (0 when absent).
	SpecPathLine int

	// ProtocolVersion is ProtocolAuto or one of KnownRevisions (protocol_version, else
	// mcp_info.protocol_version).
	ProtocolVersion string

	// AuthType is the credential kind sent upstream; empty when unset.
	AuthType AuthType
	// AuthValue is the static credential (auth_value, or its alias authentication_token).
	AuthValue Secret
	// AuthHeaderName is the header that carries the credential instead of the type's default.
	AuthHeaderName string
	// OAuth2Flow is OAuth2ClientCredentials or OAuth2AuthorizationCode for auth_type oauth2.
	OAuth2Flow string
	// ClientID is the OAuth2 client id.
	ClientID string
	// ClientSecret is the OAuth2 client secret.
	ClientSecret Secret
	// TokenURL is the OAuth2 token endpoint.
	TokenURL string
	// Scopes are the OAuth2 scopes (a YAML list or one space-separated string).
	Scopes []string
	// AuthorizationURL is the OAuth2 authorization endpoint.
	AuthorizationURL string

	// StaticHeaders are always sent upstream; names and values are trimmed.
	StaticHeaders map[string]string
	// ExtraHeaders are caller header names forwarded to this server.
	ExtraHeaders []string

	// AllowedTools, when set, are the only upstream tool names served (it wins over DisallowedTools).
	AllowedTools []string
	// DisallowedTools are upstream tool names never served.
	DisallowedTools []string
	// AllowElicitation lets the server's elicitation requests through.
	AllowElicitation bool
	// AllowSampling lets the server's sampling requests through.
	AllowSampling bool
	// ForwardIdentity is ForwardIdentityJWT to send the caller's signed identity on every
	// request (forward_identity); empty sends none.
	ForwardIdentity string

	// RPM caps requests per minute to this server; 0 means no limit.
	RPM int
	// MaxConcurrentRequests caps the requests to this server in flight at
	// once (the calls rpm counts); one over it is refused at once, never
	// queued. 0 means no limit.
	MaxConcurrentRequests int
	// Timeout bounds one upstream request; 0 means the gateway's default.
	Timeout time.Duration
	// Cost is mcp_info.mcp_server_cost_info: what the server's tool calls cost.
	Cost ServerCost

	// AccessGroups name the permission groups this server belongs to.
	AccessGroups []string
	// AllowAllKeys makes the server available to every key.
	AllowAllKeys bool

	// PinToolDefinitions pins every tool's definition (pin_tool_definitions): a changed one is
	// quarantined until an admin approves it.
	PinToolDefinitions bool
	// PinnedTools pins the named tools' definitions only (pinned_tools).
	PinnedTools []string
	// Guardrails name guardrails (beyond the default_on ones) applied to this server's tools.
	Guardrails []string

	// Line is the line of the server's name in the file.
	Line int
	// CommandLine is the line of command in the file (0 when absent).
	CommandLine int
}

// GeneralSettings is general_settings.
type GeneralSettings struct {
	// MasterKey is the admin credential.
	MasterKey Secret
	// MasterKeyLine is the line of master_key in the file (0 when absent).
	MasterKeyLine int
	// CustomAuth is the http(s) URL of the auth webhook, or empty.
	CustomAuth string
	// MCPAdvertisedVersions are the revisions served downstream; never empty, defaults to
	// DefaultAdvertisedVersions.
	MCPAdvertisedVersions []string
	// DatabaseURL is the store's URL, or empty for the embedded default.
	DatabaseURL Secret
	// StoreModelInDB lets servers be added at run time through the store.
	StoreModelInDB bool
	// MCPScopedPrefix keeps tool prefixes on /{server}/mcp; defaults to true.
	MCPScopedPrefix bool
	// HTTP bounds what one downstream connection or request may hold; see DefaultHTTPLimits.
	HTTP HTTPLimits
	// AllowedHosts are extra Host names served besides the listener's own (allowed_hosts), for
	// deployments behind a reverse proxy; an entry "*.example.com" matches any subdomain.
	AllowedHosts []string
	// AllowedOrigins are extra browser origins accepted (allowed_origins), as scheme://host[:port];
	// "*" is not accepted.
	AllowedOrigins []string
	// MaxListenersPerCaller bounds the upstream listeners one caller holds at once across its
	// subscriptions (max_listeners_per_caller); defaults to DefaultMaxListenersPerCaller.
	MaxListenersPerCaller int
	// RequireKeyMCPAccessDefined (require_key_mcp_access_defined): a key with no mcp_servers
	// and no mcp_access_groups of its own gets no server instead of inheriting its team's.
	RequireKeyMCPAccessDefined bool
	// RequireEndUserMCPAccessDefined (require_end_user_mcp_access_defined): an end user
	// (x-litellm-end-user-id) without lists of its own gets no server.
	RequireEndUserMCPAccessDefined bool
	// MCPAllowAllKeysRespectsScope (mcp_allow_all_keys_respects_mcp_scope): allow_all_keys
	// servers are not added for a key whose own lists are set.
	MCPAllowAllKeysRespectsScope bool
	// RedisFailureMode (redis_failure_mode) says what limits do while Redis is unreachable:
	// RedisFailOpen (the default when empty) or RedisFailClosed.
	RedisFailureMode RedisFailureMode
	// Health holds the MCP server health checks' and previews' keys; see DefaultHealthSettings.
	Health HealthSettings
	// Identity holds the signed identity's keys (mcp_identity_*); see IdentitySettings.
	Identity IdentitySettings
	// NoAccessLog turns off the one INFO line per downstream request
	// (mcp_access_log: false; on by default).
	NoAccessLog bool
	// SpendLogsRetention (maximum_spend_logs_retention_period, LiteLLM's duration such as
	// "7d") is how long spend_logs rows are kept; "" keeps them forever (LiteLLM's default).
	// SpendLogsRetentionInterval (maximum_spend_logs_retention_interval, default "1d") is
	// how often old rows are deleted. internal/app reads both (store.ParseDuration).
	SpendLogsRetention, SpendLogsRetentionInterval string
	// Public says how the gateway names itself to clients (mcp_public_base_url,
	// mcp_trusted_proxies).
	Public PublicURLSettings
	// JWT is enable_jwt_auth, litellm_jwtauth and the JWT_* environment variables.
	JWT JWTAuth
	// MCPPolicies are the CEL rules of mcp_policies, in file order; they only narrow what
	// object_permission grants.
	MCPPolicies []PolicyRule
}

// DefaultMaxListenersPerCaller is the default of GeneralSettings.MaxListenersPerCaller.
const DefaultMaxListenersPerCaller = 64

// HTTPLimits are the downstream server's timeouts and bounds (general_settings keys in brackets).
type HTTPLimits struct {
	// ReadHeaderTimeout bounds reading a request's headers (http_read_header_timeout).
	ReadHeaderTimeout time.Duration
	// ReadTimeout bounds reading a request's body, from when its handler starts (http_read_timeout).
	ReadTimeout time.Duration
	// WriteTimeout bounds writing a response that is not a stream (http_write_timeout).
	WriteTimeout time.Duration
	// IdleTimeout closes a keep-alive connection idle this long (http_idle_timeout).
	IdleTimeout time.Duration
	// MaxHeaderBytes bounds a request's header block (http_max_header_bytes).
	MaxHeaderBytes int
	// MaxRequestBodyBytes bounds one request body (max_request_body_bytes).
	MaxRequestBodyBytes int64
	// MaxConnections bounds open downstream connections (max_connections).
	MaxConnections int
	// MaxInflightRequests bounds requests being served at once, long-lived streams excepted
	// (max_inflight_requests).
	MaxInflightRequests int
}

// DefaultHTTPLimits returns the defaults of HTTPLimits.
func DefaultHTTPLimits() HTTPLimits {
	return HTTPLimits{
		ReadHeaderTimeout:   10 * time.Second,
		ReadTimeout:         30 * time.Second,
		WriteTimeout:        5 * time.Minute,
		IdleTimeout:         60 * time.Second,
		MaxHeaderBytes:      64 << 10,
		MaxRequestBodyBytes: 4 << 20,
		MaxConnections:      4096,
		MaxInflightRequests: 256,
	}
}

// LiteLLMSettings is litellm_settings.
type LiteLLMSettings struct {
	// DefaultMCPSamplingModel names a Models entry, or is empty.
	DefaultMCPSamplingModel string
	// MCPAliases (mcp_aliases) maps extra names to servers (by name, id or alias); a scoped
	// URL or x-mcp-servers may use them. Every target names a server.
	MCPAliases map[string]string
	// Metrics are the /metrics settings (require_auth_for_metrics_endpoint,
	// prometheus_metrics_config).
	Metrics Metrics
	// Callbacks (callbacks) names LiteLLM's logging integrations, lower-cased;
	// mcpgw acts on "otel" (OpenTelemetry traces) and ignores the rest.
	Callbacks []string
}

// Model is one entry of model_list.
type Model struct {
	// ModelName is the name litellm_settings and callers use.
	ModelName string
	// Params is litellm_params.
	Params ModelParams
	// Line is the line of the entry in the file.
	Line int
}

// ModelParams is a model_list entry's litellm_params.
type ModelParams struct {
	// Model is the provider-qualified model, e.g. "openai/gpt-4o-mini".
	Model string
	// APIBase is the OpenAI-compatible base URL, or empty for the provider's default.
	APIBase string
	// APIKey is the provider credential.
	APIKey Secret
}

// Secret is a credential from the config. It formats, logs and marshals as "[redacted]";
// Reveal returns the value for the one place that must send it.
type Secret string

// Reveal returns the secret's value.
func (s Secret) Reveal() string { return string(s) }

// IsSet reports whether the secret is non-empty.
func (s Secret) IsSet() bool { return s != "" }

// String returns "[redacted]" for a set secret and "" for an empty one.
func (s Secret) String() string {
	if s == "" {
		return ""
	}
	return "[redacted]"
}

// GoString keeps %#v from printing the value.
func (s Secret) GoString() string { return strconv.Quote(s.String()) }

// LogValue keeps log/slog from printing the value.
func (s Secret) LogValue() slog.Value { return slog.StringValue(s.String()) }

// MarshalJSON keeps encoding/json from printing the value.
func (s Secret) MarshalJSON() ([]byte, error) { return json.Marshal(s.String()) }

// Severity says whether a Problem stops the config from loading.
type Severity int

// The severities of a Problem.
const (
	SeverityError Severity = iota + 1
	SeverityWarning
)

// String returns "error" or "warning".
func (s Severity) String() string {
	switch s {
	case SeverityError:
		return "error"
	case SeverityWarning:
		return "warning"
	}
	return "severity(" + strconv.Itoa(int(s)) + ")"
}

// Problem is one finding about the config file, located by its 1-based line.
// Messages never contain secret values.
type Problem struct {
	// Line is the 1-based line the problem concerns.
	Line int
	// Severity says whether the problem stops loading.
	Severity Severity
	// Msg describes the problem.
	Msg string
}

// String formats the problem as "LINE: SEVERITY: MSG".
func (p Problem) String() string { return fmt.Sprintf("%d: %s: %s", p.Line, p.Severity, p.Msg) }

// ValidationError is returned by Load and Parse when the problems include errors.
type ValidationError struct {
	// Errors counts the error-severity problems.
	Errors int
}

// Error summarises the count; the problems themselves are returned beside it.
func (e *ValidationError) Error() string {
	if e.Errors == 1 {
		return "config: 1 error"
	}
	return fmt.Sprintf("config: %d errors", e.Errors)
}

// Options tunes Load and Parse.
type Options struct {
	// LookupEnv resolves os.environ/NAME references that environment_variables does not
	// define (normally os.LookupEnv). Nil means no outside environment.
	LookupEnv func(name string) (string, bool)
	// ToolPrefixSeparator joins server and tool names; empty means DefaultToolPrefixSeparator.
	ToolPrefixSeparator string
	// DenyEnv, when set, refuses os.environ/NAME references to the names it reports true
	// for (the gateway's own secrets, for configs posted through the API), with an error
	// that says so.
	DenyEnv func(name string) bool

	// fileGuardrails, set by ParseServer only, are the guardrails a server parsed alone may
	// name: the running file's (its document has no guardrails list of its own).
	fileGuardrails []Guardrail
	standalone     bool
}

// Load reads and validates the config file at path. The problems (warnings and errors, sorted
// by line) are returned in every case but an unreadable file. The error is non-nil when the
// file cannot be read or parsed, or when any problem is an error (a *ValidationError); the
// Config is nil then.
func Load(path string, opts Options) (*Config, []Problem, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, fmt.Errorf("config: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, nil, fmt.Errorf("config: %w", err)
	}
	if st.IsDir() {
		return nil, nil, fmt.Errorf("config: %s is a directory", path)
	}
	data, err := io.ReadAll(io.LimitReader(f, maxConfigBytes+1))
	if err != nil {
		return nil, nil, fmt.Errorf("config: %w", err)
	}
	if len(data) > maxConfigBytes {
		return nil, nil, fmt.Errorf("config: %s is larger than %d bytes", path, maxConfigBytes)
	}
	return Parse(data, opts)
}

// Parse validates config bytes as Load does.
func Parse(data []byte, opts Options) (*Config, []Problem, error) {
	if opts.ToolPrefixSeparator == "" {
		opts.ToolPrefixSeparator = DefaultToolPrefixSeparator
	}
	l := &loader{opts: opts, mergeBudget: maxMergeNodes}
	cfg := l.parse(data)
	slices.SortStableFunc(l.problems, func(a, b Problem) int { return a.Line - b.Line })
	n := 0
	for _, p := range l.problems {
		if p.Severity == SeverityError {
			n++
		}
	}
	if n > 0 {
		return nil, l.problems, &ValidationError{Errors: n}
	}
	return cfg, l.problems, nil
}
