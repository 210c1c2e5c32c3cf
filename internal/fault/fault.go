package fault

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/mcpgw/mcpgw/internal/jsonrpc"
)

// Class is one of the closed set of ways a request can fail.
type Class uint8

// The fault classes. Caller faults first, then upstream faults, then the
// gateway's own.
const (
	// InvalidParams: the request's params are malformed or refer to nothing
	// (a bad cursor, a refused continuation, a missing member).
	InvalidParams Class = iota + 1
	// MethodNotFound: no such method here (or the scoped server lacks the
	// feature).
	MethodNotFound
	// HeaderMismatch: an Mcp-Param-* header disagrees with the body.
	HeaderMismatch
	// UnknownTool: tools/call names no tool the caller may see here.
	UnknownTool
	// UnknownPrompt: prompts/get or a prompt completion names no prompt the
	// caller may see here.
	UnknownPrompt
	// ResourceNotFound: no server the caller may see serves the URI.
	ResourceNotFound
	// MissingCapability: the upstream needs input the caller did not declare
	// it can give.
	MissingCapability
	// TargetRevoked: a continuation's target is no longer the caller's to use.
	TargetRevoked
	// AuthRequired: the upstream wants (other) credentials (HTTP 401).
	AuthRequired
	// Forbidden: the upstream refused the credentials (HTTP 403).
	Forbidden
	// Timeout: the upstream did not answer in time.
	Timeout
	// Unreachable: the upstream could not be reached.
	Unreachable
	// UpstreamError: the upstream answered with a failure or nonsense.
	UpstreamError
	// RateLimited: the upstream answered HTTP 429.
	RateLimited
	// Unavailable: the upstream answered HTTP 503, or the gateway has no
	// room to reach it (its budget or session pool is exhausted).
	Unavailable
	// UpstreamInternal: the call to the upstream failed inside the gateway
	// (cancelled, or an error no other class describes).
	UpstreamInternal
	// UpstreamRPC: the upstream's own JSON-RPC error, the caller's to see.
	UpstreamRPC
	// Relay: the gateway could not relay an upstream's answer (it could not
	// decode, encode or seal it).
	Relay
	// Internal: the gateway could not build an answer of its own.
	Internal
	// LimitExceeded: the gateway's own limit on requests to the server was
	// reached; the request was not sent (an upstream's own 429 is
	// RateLimited).
	LimitExceeded
	// LimitsUnavailable: the request is subject to a limit the gateway
	// could not check (its shared counters are unreachable and it is
	// configured to fail closed); the request was not sent.
	LimitsUnavailable

	numClasses = iota + 1
)

// Fault is one failed request: its class and what the caller may be shown.
type Fault struct {
	Class Class
	// Message is shown to the caller: never an upstream body or a secret.
	Message string
	// Subject is what the fault is about, for encodings that name it: the
	// served name of an unknown tool, the missing capabilities.
	Subject string
	// Data is the JSON-RPC error data, when the error carries any.
	Data json.RawMessage
	// Challenge is the upstream's WWW-Authenticate (AuthRequired, Forbidden).
	Challenge string
	// RPC is the upstream's own error, verbatim (UpstreamRPC only).
	RPC *jsonrpc.Error
	// RetryAfter is how long until the request may succeed (LimitExceeded).
	RetryAfter time.Duration
	// Limit describes the limit that refused the request (LimitExceeded),
	// for the x-ratelimit-* headers; nil sends none.
	Limit *Limit
}

// The kinds of limit, as LiteLLM names them in its x-ratelimit-* headers.
const (
	// KindRequests is a requests-per-minute limit.
	KindRequests = "requests"
	// KindParallel is a bound on requests in flight at once.
	KindParallel = "max_parallel_requests"
)

// Limit is the limit that refused a request: its kind, its value and how
// many requests it has left now.
type Limit struct {
	Kind      string
	Limit     int
	Remaining int
}

// Error makes a fault an error, so a layer below the core (an upstream
// middleware: a limit, a guardrail) can answer a request with one, which
// the core passes to the caller as it is.
func (f *Fault) Error() string { return f.Message }

// New returns a fault of class c with a formatted message.
func New(c Class, format string, args ...any) *Fault {
	return &Fault{Class: c, Message: fmt.Sprintf(format, args...)}
}

// FromRPC is an upstream's own JSON-RPC error, passed on as it is.
func FromRPC(e *jsonrpc.Error) *Fault {
	return &Fault{Class: UpstreamRPC, Message: e.Message, RPC: e}
}
