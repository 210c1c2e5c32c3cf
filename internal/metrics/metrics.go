package metrics

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/mcpgw/mcpgw/internal/fault"
	"github.com/mcpgw/mcpgw/internal/jsonrpc"
	"github.com/mcpgw/mcpgw/internal/mcp"
	"github.com/mcpgw/mcpgw/internal/observe"
)

// Defaults of Config's caps.
const (
	DefaultMaxNames   = 2000
	DefaultMaxCallers = 1000
)

// Other is the label value of a caller-supplied value that is not
// exported as sent (see the package doc).
const Other = "_OTHER"

// Buckets are the semantic convention's boundaries for both MCP operation
// duration histograms, in seconds.
var Buckets = []float64{0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300}

// ToolLabels are LiteLLM's labels of its two MCP tool metrics, in order.
var ToolLabels = []string{"mcp_tool_name", "mcp_server_name", "hashed_api_key", "api_key_alias", "team", "team_alias", "user", "end_user"}

// Config sets the sink's label sets and caps.
type Config struct {
	// Labels, when set, are the labels of the LiteLLM tool metrics (a
	// subset of ToolLabels); nil means all of them.
	Labels []string
	// Separator joins a server's prefix and a tool's name (default "-").
	Separator  string
	MaxNames   int
	MaxCallers int
}

// Metrics is the registry and the sink feeding it.
type Metrics struct {
	observe.Base
	cfg      Config
	reg      *prometheus.Registry
	labels   []string // the tool metrics' labels, in ToolLabels order
	calls    *prometheus.CounterVec
	spend    *prometheus.CounterVec
	server   *prometheus.HistogramVec
	client   *prometheus.HistogramVec
	faults   *prometheus.CounterVec
	rejected *prometheus.CounterVec
	webhook  *prometheus.HistogramVec
	names    *capped[nameKey]
	callers  *capped[observe.Caller]
	// endUsers caps the end_user label apart from callers: end-user ids come
	// from a header any key may set, so one key must not fill callers.
	endUsers *capped[string]
	// labelIdx maps each exported tool-metric label to its ToolLabels index.
	labelIdx []int
	// resolved holds the tool counters' children per tool, server and caller, so a
	// repeated call pays one map read instead of the caps' locks and two label
	// lookups; at most maxResolved entries, a new one evicting an arbitrary one (see toolSeries).
	resolvedMu sync.RWMutex
	resolved   map[toolKey]*toolSeries
	// serverObs and clientObs hold the two duration histograms' children by the record's
	// fields their label values derive from (see observers).
	serverObs observers[serverKey]
	clientObs observers[clientKey]
}

// serverKey is what a downstream request's mcp_server_operation_duration_seconds labels are
// derived from.
type serverKey struct {
	method, target, server, protocol, transport string
	fault                                       fault.Class
	code                                        int64
	status                                      int // 0 below 400: only a failing status is a label
	inBand                                      bool
}

// clientKey is what an upstream call's mcp_client_operation_duration_seconds labels are
// derived from.
type clientKey struct {
	method, target, server string
	fault                  fault.Class
}

// observers remembers a histogram's children by the fields of a record their label values
// are derived from, so a repeated request pays one read-locked map lookup instead of the
// label derivation (the names cap's lock, UTF-8 checks) and the registry's hashing and
// validation of every label value. The derivation is stable for equal keys (a name admitted
// by the cap stays admitted; one refused stays refused), so a cached child is the one the
// full path would find. At most maxResolved entries; a new key past that evicts an arbitrary one.
type observers[K comparable] struct {
	mu sync.RWMutex
	m  map[K]prometheus.Observer
}

func (o *observers[K]) get(k K) prometheus.Observer {
	o.mu.RLock()
	obs := o.m[k]
	o.mu.RUnlock()
	return obs
}

func (o *observers[K]) put(k K, obs prometheus.Observer) {
	o.mu.Lock()
	if o.m == nil {
		o.m = make(map[K]prometheus.Observer)
	}
	if _, ok := o.m[k]; !ok && len(o.m) >= maxResolved {
		evictOne(o.m)
	}
	o.m[k] = obs
	o.mu.Unlock()
}

// evictOne deletes one arbitrary entry of m (map iteration starts
// anywhere), making room in a full shortcut map: keys a caller can make up
// (tool names) then cannot fill it for good.
func evictOne[K comparable, V any](m map[K]V) {
	for k := range m {
		delete(m, k)
		return
	}
}

// maxResolved bounds Metrics.resolved and the observers' maps: the caps bound distinct label
// sets already, this bounds the memory of the shortcut; a new key past it evicts an arbitrary one.
const maxResolved = 4096

// toolKey is what a tool call's LiteLLM label values are derived from (target: the tool name
// as the caller sent it).
type toolKey struct {
	target, server string
	caller         observe.Caller
}

// toolSeries is one label set's tool counters: calls resolved at once, spend on the first
// call that cost something (a free call must not export a spend series).
type toolSeries struct {
	values []string
	calls  prometheus.Counter
	spend  atomic.Pointer[prometheus.Counter]
}

// nameKey is one server's tool or prompt name.
type nameKey struct{ server, name string }

// New returns the metrics with Go runtime and process collectors.
func New(cfg Config) *Metrics {
	if cfg.MaxNames <= 0 {
		cfg.MaxNames = DefaultMaxNames
	}
	if cfg.MaxCallers <= 0 {
		cfg.MaxCallers = DefaultMaxCallers
	}
	if cfg.Separator == "" {
		cfg.Separator = "-"
	}
	m := &Metrics{cfg: cfg, reg: prometheus.NewRegistry(), names: newCapped[nameKey](cfg.MaxNames), callers: newCapped[observe.Caller](cfg.MaxCallers),
		endUsers: newCapped[string](cfg.MaxCallers), resolved: map[toolKey]*toolSeries{}}
	m.labels = ToolLabels
	if cfg.Labels != nil {
		m.labels = nil
		for _, l := range ToolLabels {
			for _, want := range cfg.Labels {
				if want == l {
					m.labels = append(m.labels, l)
					break
				}
			}
		}
	}
	for _, l := range m.labels {
		for i, all := range ToolLabels {
			if l == all {
				m.labelIdx = append(m.labelIdx, i)
			}
		}
	}
	m.calls = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "litellm_mcp_tool_calls_total",
		Help: "MCP tool calls routed to a server, by tool and server name."}, m.labels)
	m.spend = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "litellm_mcp_tool_call_spend_metric_total",
		Help: "Spend of MCP tool calls; incremented only when a call has a non-zero cost."}, m.labels)
	m.server = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "mcp_server_operation_duration_seconds",
		Help:    "MCP request duration as observed by the gateway from the time it was received until the result was sent (mcp.server.operation.duration).",
		Buckets: Buckets}, []string{"mcp_method_name", "error_type", "gen_ai_tool_name", "gen_ai_prompt_name", "rpc_response_status_code",
		"gen_ai_operation_name", "mcp_protocol_version", "network_protocol_name", "mcp_transport"})
	m.client = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "mcp_client_operation_duration_seconds",
		Help:    "Duration of MCP requests the gateway sent to upstream servers, until their result was received (mcp.client.operation.duration).",
		Buckets: Buckets}, []string{"mcp_method_name", "error_type", "gen_ai_tool_name", "gen_ai_prompt_name", "gen_ai_operation_name", "mcp_server_name"})
	m.faults = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "mcpgw_faults_total",
		Help: "Failed downstream requests by fault class and the server that failed them."}, []string{"fault", "server"})
	m.rejected = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "mcpgw_rate_limit_rejections_total",
		Help: "Requests the gateway's own limits refused (limit_exceeded), by server."}, []string{"server"})
	m.webhook = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "mcpgw_webhook_duration_seconds",
		Help: "Duration of custom_auth webhook calls, by outcome (ok, refused, error).", Buckets: Buckets}, []string{"outcome"})
	m.reg.MustRegister(m.calls, m.spend, m.server, m.client, m.faults, m.rejected, m.webhook,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// MustRegister adds collectors (read at scrape time) to the registry; it
// panics on a duplicate, a programming error.
func (m *Metrics) MustRegister(cs ...prometheus.Collector) { m.reg.MustRegister(cs...) }

// Handler serves the registry in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}

// Gatherer is the registry, for tests and embedding.
func (m *Metrics) Gatherer() prometheus.Gatherer { return m.reg }

// Webhook records one custom_auth webhook call (identity.Config.OnWebhook).
func (m *Metrics) Webhook(d time.Duration, outcome string) {
	m.webhook.WithLabelValues(outcome).Observe(d.Seconds())
}

// EndRequest counts one finished downstream request.
func (m *Metrics) EndRequest(_ context.Context, r *observe.Request) {
	m.serverObserver(r).Observe(r.Duration.Seconds())
	if r.Fault != 0 {
		m.faults.WithLabelValues(r.Fault.String(), r.Server).Inc()
		if r.Fault == fault.LimitExceeded {
			m.rejected.WithLabelValues(r.Server).Inc()
		}
	}
	if r.Method != mcp.MethodToolsCall || r.Server == "" {
		return
	}
	ts := m.series(r.Target, r.Server, r.Caller)
	ts.calls.Inc()
	if r.Cost > 0 {
		sp := ts.spend.Load()
		if sp == nil {
			c := m.spend.WithLabelValues(ts.values...)
			ts.spend.Store(&c)
			sp = &c
		}
		(*sp).Add(r.Cost)
	}
}

// serverObserver is r's child of the server duration histogram.
func (m *Metrics) serverObserver(r *observe.Request) prometheus.Observer {
	k := serverKey{method: r.Method, target: namedTarget(r.Method, r.Target), server: r.Server, protocol: r.Protocol,
		transport: r.Transport, fault: r.Fault, code: r.ErrorCode, inBand: r.InBandError}
	if r.Status >= 400 {
		k.status = r.Status
	}
	if obs := m.serverObs.get(k); obs != nil {
		return obs
	}
	tool, prompt := m.target(r.Method, r.Target, r.Server)
	obs := m.server.WithLabelValues(knownMethod(r.Method), r.ErrorType(), tool, prompt, knownCode(r.ErrorCode),
		operationName(r.Method), knownRevision(r.Protocol), "http", r.Transport)
	m.serverObs.put(k, obs)
	return obs
}

// series returns the tool counters of a call to target (the name as the caller sent it) on
// server by c.
func (m *Metrics) series(target, server string, c observe.Caller) *toolSeries {
	c.Org = "" // not a label
	k := toolKey{target, server, c}
	m.resolvedMu.RLock()
	ts := m.resolved[k]
	m.resolvedMu.RUnlock()
	if ts != nil {
		return ts
	}
	tool, _ := m.target(mcp.MethodToolsCall, target, server)
	values := m.toolValues(tool, server, c)
	ts = &toolSeries{values: values, calls: m.calls.WithLabelValues(values...)}
	m.resolvedMu.Lock()
	if _, ok := m.resolved[k]; !ok && len(m.resolved) >= maxResolved {
		evictOne(m.resolved)
	}
	m.resolved[k] = ts
	m.resolvedMu.Unlock()
	return ts
}

// EndCall counts one finished upstream call.
func (m *Metrics) EndCall(_ context.Context, c *observe.Call) {
	k := clientKey{method: c.Method, target: namedTarget(c.Method, c.Target), server: c.Server, fault: c.Fault}
	obs := m.clientObs.get(k)
	if obs == nil {
		tool, prompt := m.target(c.Method, c.Target, c.Server)
		obs = m.client.WithLabelValues(knownMethod(c.Method), c.ErrorType(), tool, prompt, operationName(c.Method), c.Server)
		m.clientObs.put(k, obs)
	}
	obs.Observe(c.Duration.Seconds())
}

// namedTarget is target when method's labels name it (a tool or prompt), else "": a resource
// URI, which no label carries, must not make an observers key of its own.
func namedTarget(method, target string) string {
	if method == mcp.MethodToolsCall || method == mcp.MethodPromptsGet {
		return target
	}
	return ""
}

// target returns the tool and prompt labels of a request: the server's own
// name once it was routed to server, else Other; "" when the method names
// neither.
func (m *Metrics) target(method, name, server string) (tool, prompt string) {
	var isTool bool
	switch method {
	case mcp.MethodToolsCall:
		isTool = true
	case mcp.MethodPromptsGet:
	default:
		return "", ""
	}
	v := Other
	if server != "" && name != "" {
		own := name
		if len(name) > len(server)+len(m.cfg.Separator) && strings.HasPrefix(name, server) && strings.HasPrefix(name[len(server):], m.cfg.Separator) {
			own = name[len(server)+len(m.cfg.Separator):]
		}
		if m.names.admit(nameKey{server, own}) {
			v = strings.ToValidUTF8(own, "\uFFFD") // a clipped or odd name must not panic the registry
		}
	}
	if isTool {
		return v, ""
	}
	return "", v
}

// toolValues are the LiteLLM tool metrics' label values for a call.
func (m *Metrics) toolValues(tool, server string, c observe.Caller) []string {
	c.Org = "" // not a label: one label set per key, team, user and end user
	endUser := c.EndUser
	c.EndUser = ""
	all := [8]string{tool, server, c.KeyHash, c.KeyAlias, c.Team, c.TeamAlias, c.User, endUser}
	if !m.callers.admit(c) {
		for i := 2; i < len(all)-1; i++ {
			all[i] = Other
		}
	}
	if endUser != "" && !m.endUsers.admit(endUser) {
		all[7] = Other
	}
	for i := 2; i < len(all); i++ {
		all[i] = strings.ToValidUTF8(all[i], "\uFFFD") // header-borne values may be any bytes
	}
	out := make([]string, len(m.labelIdx))
	for i, idx := range m.labelIdx {
		out[i] = all[idx]
	}
	return out
}

// operationName is gen_ai.operation.name: execute_tool for a tool call.
func operationName(method string) string {
	if method == mcp.MethodToolsCall {
		return "execute_tool"
	}
	return ""
}

// knownMethod is method when the protocol defines it, else Other.
func knownMethod(method string) string {
	if mcp.MethodInEra(method, mcp.EraModern) || mcp.MethodInEra(method, mcp.EraLegacy) {
		return method
	}
	return Other
}

// knownCode is the JSON-RPC error code label: "" for none, the code when it
// is one the standard or MCP defines, else Other (an upstream's own codes
// are any integer and must not mint series).
func knownCode(code int64) string {
	switch code {
	case 0:
		return ""
	case jsonrpc.CodeParseError, jsonrpc.CodeInvalidRequest, jsonrpc.CodeMethodNotFound, jsonrpc.CodeInvalidParams,
		jsonrpc.CodeInternalError, mcp.CodeHeaderMismatch, mcp.CodeMissingClientCapability,
		mcp.CodeUnsupportedProtocolVersion, mcp.CodeResourceNotFoundLegacy, mcp.CodeURLElicitationRequiredLegacy:
		return strconv.FormatInt(code, 10)
	}
	return Other
}

// knownRevision is v when it names a protocol revision the gateway knows.
func knownRevision(v string) string {
	if v == "" || mcp.IsKnownRevision(v) {
		return v
	}
	return Other
}

// capped admits at most max distinct values, the first seen; it never
// forgets one.
type capped[K comparable] struct {
	mu   sync.Mutex
	max  int
	seen map[K]struct{}
}

func newCapped[K comparable](max int) *capped[K] { return &capped[K]{max: max, seen: map[K]struct{}{}} }

// admit reports whether v is (now) one of the admitted values.
func (c *capped[K]) admit(v K) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.seen[v]; ok {
		return true
	}
	if len(c.seen) >= c.max {
		return false
	}
	c.seen[v] = struct{}{}
	return true
}
