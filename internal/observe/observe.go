package observe

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/mcpgw/mcpgw/internal/fault"
	"github.com/mcpgw/mcpgw/internal/reqscope"
)

// The transports a downstream request arrives on.
const (
	// TransportStreamable is POST /mcp and /{server}/mcp, both eras.
	TransportStreamable = "streamable_http"
	// TransportSSE is the legacy HTTP+SSE transport (/mcp/sse/messages).
	TransportSSE = "sse"
	// TransportREST is /mcp-rest.
	TransportREST = "rest"
)

// Caller names who sent a downstream request, as LiteLLM labels it.
type Caller struct {
	KeyHash   string // hex SHA-256 of the gateway credential ("" for none)
	KeyAlias  string
	Team      string
	TeamAlias string
	User      string
	EndUser   string
	Org       string
}

// Request is one downstream request, from its decoded message to its answer.
type Request struct {
	Method string // JSON-RPC method (REST: the MCP method it stands for)
	// Target is the tool or prompt name or resource URI the request acts
	// on, as the caller sent it; "" when it names none.
	Target string
	// Server is the upstream server that served it, when exactly one did
	// (set by the core).
	Server    string
	Protocol  string // the caller's protocol revision ("" when none, as on REST)
	Transport string // one of the Transport constants
	Session   string // the legacy session id, when any
	RequestID string // the JSON-RPC id as sent ("" for REST)
	Caller    Caller
	// Status is the HTTP status of the answer (a legacy SSE answer rides
	// the stream: the status of the POST that carried it).
	Status int
	// Fault is the class of the core's failed outcome; 0 when the core
	// answered a result, or did not run.
	Fault fault.Class
	// ErrorCode is the JSON-RPC error code of an error answer (0 for none).
	ErrorCode int64
	// InBandError is a tools/call result with isError set.
	InBandError bool
	// Cost is what the request cost, in LiteLLM's spend units; a sink
	// computing it sets it in EndRequest, before later sinks read it.
	Cost     float64
	Start    time.Time
	Duration time.Duration
	// Header is the downstream HTTP request's header and Meta its
	// params._meta object as sent (Meta is filled only when a sink reads it,
	// see ContextReader): read-only, for a sink extracting the context the
	// caller propagates (trace context), never recorded.
	Header map[string][]string
	Meta   json.RawMessage
}

// Failed reports a request answered with an error of any kind.
func (r *Request) Failed() bool {
	return r.Fault != 0 || r.ErrorCode != 0 || r.InBandError || r.Status >= 400
}

// ErrorType names a failed request's error for metrics and traces: its
// fault class, else its JSON-RPC code, else its HTTP status; "" when it
// did not fail.
func (r *Request) ErrorType() string {
	return errorType(r.Fault, r.ErrorCode, r.Status, r.InBandError)
}

// Call is one request the gateway sent to an upstream server.
type Call struct {
	Server   string
	Method   string
	Target   string // tool or prompt name or resource URI; "" when none
	Protocol string // the upstream's revision, when known
	// Fault is the class of its failure; 0 when it succeeded.
	Fault    fault.Class
	Start    time.Time
	Duration time.Duration
}

// ErrorType names a failed call's error: its fault class; "" when it
// succeeded.
func (c *Call) ErrorType() string { return errorType(c.Fault, 0, 0, false) }

func errorType(f fault.Class, code int64, status int, inBand bool) string {
	switch {
	case f != 0:
		return f.String()
	case code != 0:
		return itoa(code)
	case status >= 400:
		return itoa(int64(status))
	case inBand:
		return "tool_error"
	}
	return ""
}

// Sink receives records. StartX may return a derived context (a span) for
// the work; EndX gets the finished record with that context.
type Sink interface {
	StartRequest(ctx context.Context, r *Request) context.Context
	EndRequest(ctx context.Context, r *Request)
	StartCall(ctx context.Context, c *Call) context.Context
	EndCall(ctx context.Context, c *Call)
}

// Observer fans records out to its sinks. A nil Observer observes nothing.
type Observer struct {
	sinks     []Sink
	readsMeta bool // a sink is a ContextReader
}

// New returns an Observer over sinks (nil ones dropped), or nil when none
// is left.
func New(sinks ...Sink) *Observer {
	var kept []Sink
	for _, s := range sinks {
		if s != nil {
			kept = append(kept, s)
		}
	}
	if len(kept) == 0 {
		return nil
	}
	return &Observer{sinks: kept, readsMeta: readsMeta(kept)}
}

// Close writes out what the sinks buffer (the access log's lines, see
// NewAccessLogLines); what they record later is written at once. It is
// safe to call more than once, and on a nil Observer.
func (o *Observer) Close() {
	if o == nil {
		return
	}
	for _, s := range o.sinks {
		if a, ok := s.(*AccessLog); ok {
			a.closeLines()
		}
	}
}

// Enabled reports whether anything listens; callers skip building records
// when not.
func (o *Observer) Enabled() bool { return o != nil }

// RequestFrom returns the downstream request in flight on ctx, or nil.
func RequestFrom(ctx context.Context) *Request {
	r, _ := reqscope.Value(ctx, reqscope.Observed).(*Request)
	return r
}

// RequestSpan ends one observed request; the zero RequestSpan ends nothing.
type RequestSpan struct {
	o   *Observer
	ctx context.Context
	r   *Request
}

// Request starts observing r (Start set when zero) and returns the context
// to run it with, which also carries r (RequestFrom).
func (o *Observer) Request(ctx context.Context, r *Request) (context.Context, RequestSpan) {
	if o == nil || r == nil {
		return ctx, RequestSpan{}
	}
	if r.Start.IsZero() {
		r.Start = time.Now()
	}
	ctx = reqscope.With(ctx, reqscope.Observed, r)
	for _, s := range o.sinks {
		ctx = s.StartRequest(ctx, r)
	}
	return ctx, RequestSpan{o: o, ctx: ctx, r: r}
}

// Record is the request being observed, nil when none.
func (s RequestSpan) Record() *Request { return s.r }

// End stamps the duration and hands the record to every sink, once.
func (s *RequestSpan) End() {
	if s.o == nil {
		return
	}
	o := s.o
	s.o = nil
	s.r.Duration = time.Since(s.r.Start)
	for _, sink := range o.sinks {
		sink.EndRequest(s.ctx, s.r)
	}
}

// CallSpan ends one observed upstream call; the zero CallSpan ends nothing.
type CallSpan struct {
	o   *Observer
	ctx context.Context
	c   *Call
}

// Call starts observing c (Start set when zero) and returns the context to
// send it with.
func (o *Observer) Call(ctx context.Context, c *Call) (context.Context, CallSpan) {
	if o == nil || c == nil {
		return ctx, CallSpan{}
	}
	if c.Start.IsZero() {
		c.Start = time.Now()
	}
	for _, s := range o.sinks {
		ctx = s.StartCall(ctx, c)
	}
	return ctx, CallSpan{o: o, ctx: ctx, c: c}
}

// End stamps the duration and hands the record to every sink, once.
func (s *CallSpan) End() {
	if s.o == nil {
		return
	}
	o := s.o
	s.o = nil
	s.c.Duration = time.Since(s.c.Start)
	for _, sink := range o.sinks {
		sink.EndCall(s.ctx, s.c)
	}
}

// Base is a Sink that does nothing: embed it to implement only some hooks.
type Base struct{}

// StartRequest returns ctx.
func (Base) StartRequest(ctx context.Context, _ *Request) context.Context { return ctx }

// EndRequest does nothing.
func (Base) EndRequest(context.Context, *Request) {}

// StartCall returns ctx.
func (Base) StartCall(ctx context.Context, _ *Call) context.Context { return ctx }

// EndCall does nothing.
func (Base) EndCall(context.Context, *Call) {}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// Served notes, on the request in flight on ctx (if any is observed), the
// one server that serves it.
func Served(ctx context.Context, server string) {
	if r := RequestFrom(ctx); r != nil {
		r.Server = server
	}
}

// MaxTarget bounds a record's target (a tool or prompt name, a URI): it
// comes from the caller.
const MaxTarget = 256

// Clip is s as a record may carry it: valid UTF-8 (bad bytes replaced) and
// at most n bytes, cut at a character boundary. Records reach label values
// and span attributes, which must be UTF-8.
func Clip(s string, n int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
