package fault

import (
	"encoding/json"
	"strconv"
	"time"

	"github.com/mcpgw/mcpgw/internal/jsonrpc"
	"github.com/mcpgw/mcpgw/internal/mcp"
)

// Surface is one way the gateway answers callers.
type Surface uint8

// The surfaces.
const (
	// Legacy is a ≤2025-11-25 caller on POST /mcp (JSON or SSE reply).
	Legacy Surface = iota
	// LegacySSE is a legacy caller on the HTTP+SSE transport: the answer
	// rides the session's stream, so it has no HTTP status or headers.
	LegacySSE
	// Modern is a 2026-07-28 caller on POST /mcp.
	Modern
	// REST is the LiteLLM REST routes (/mcp-rest/...).
	REST

	numSurfaces = iota
)

// Shape is the form of an answer.
type Shape uint8

// The shapes.
const (
	// AsError is a JSON-RPC error (on REST: {"error": code, "message": …}).
	AsError Shape = iota
	// InBand is a tools/call result with isError set, for callers that
	// expect failures of a call in-band.
	InBand
	// AsDetail is LiteLLM's refusal body {"detail": message}.
	AsDetail
)

// Encoding is how one class is answered on one surface. Status 0 means no
// HTTP status of its own (LegacySSE), or for UpstreamRPC the status its
// code has (see Encode); Code 0 for UpstreamRPC means the upstream's code.
type Encoding struct {
	Status int
	Code   int64
	Shape  Shape
}

const (
	codeInvalidParams  = jsonrpc.CodeInvalidParams
	codeMethodNotFound = jsonrpc.CodeMethodNotFound
	codeInternal       = jsonrpc.CodeInternalError
)

// table maps every class, once, to its encoding on every surface.
var table = [numClasses][numSurfaces]Encoding{
	InvalidParams:     {{200, codeInvalidParams, AsError}, {0, codeInvalidParams, AsError}, {400, codeInvalidParams, AsError}, {400, codeInvalidParams, AsError}},
	MethodNotFound:    {{200, codeMethodNotFound, AsError}, {0, codeMethodNotFound, AsError}, {404, codeMethodNotFound, AsError}, {404, codeMethodNotFound, AsError}},
	HeaderMismatch:    {{200, mcp.CodeHeaderMismatch, AsError}, {0, mcp.CodeHeaderMismatch, AsError}, {400, mcp.CodeHeaderMismatch, AsError}, {400, mcp.CodeHeaderMismatch, AsError}},
	UnknownTool:       {{200, 0, InBand}, {0, 0, InBand}, {400, codeInvalidParams, AsError}, {400, codeInvalidParams, AsError}},
	UnknownPrompt:     {{200, codeInvalidParams, AsError}, {0, codeInvalidParams, AsError}, {400, codeInvalidParams, AsError}, {400, codeInvalidParams, AsError}},
	ResourceNotFound:  {{200, mcp.CodeResourceNotFoundLegacy, AsError}, {0, mcp.CodeResourceNotFoundLegacy, AsError}, {400, codeInvalidParams, AsError}, {400, mcp.CodeResourceNotFoundLegacy, AsError}},
	MissingCapability: {{200, 0, InBand}, {0, 0, InBand}, {400, mcp.CodeMissingClientCapability, AsError}, {200, 0, InBand}},
	TargetRevoked:     {{403, jsonrpc.CodeInvalidRequest, AsError}, {0, jsonrpc.CodeInvalidRequest, AsError}, {403, 0, AsDetail}, {403, 0, AsDetail}},
	AuthRequired:      {{401, codeInternal, AsError}, {0, codeInternal, AsError}, {401, codeInternal, AsError}, {401, codeInternal, AsError}},
	Forbidden:         {{403, codeInternal, AsError}, {0, codeInternal, AsError}, {403, codeInternal, AsError}, {403, codeInternal, AsError}},
	Timeout:           {{200, codeInternal, AsError}, {0, codeInternal, AsError}, {200, codeInternal, AsError}, {504, codeInternal, AsError}},
	Unreachable:       {{200, codeInternal, AsError}, {0, codeInternal, AsError}, {200, codeInternal, AsError}, {502, codeInternal, AsError}},
	UpstreamError:     {{200, codeInternal, AsError}, {0, codeInternal, AsError}, {200, codeInternal, AsError}, {502, codeInternal, AsError}},
	RateLimited:       {{200, codeInternal, AsError}, {0, codeInternal, AsError}, {200, codeInternal, AsError}, {429, codeInternal, AsError}},
	Unavailable:       {{200, codeInternal, AsError}, {0, codeInternal, AsError}, {200, codeInternal, AsError}, {503, codeInternal, AsError}},
	UpstreamInternal:  {{200, codeInternal, AsError}, {0, codeInternal, AsError}, {200, codeInternal, AsError}, {500, codeInternal, AsError}},
	UpstreamRPC:       {{200, 0, AsError}, {0, 0, AsError}, {0, 0, AsError}, {502, 0, AsError}},
	Relay:             {{200, codeInternal, AsError}, {0, codeInternal, AsError}, {200, codeInternal, AsError}, {502, codeInternal, AsError}},
	Internal:          {{200, codeInternal, AsError}, {0, codeInternal, AsError}, {500, codeInternal, AsError}, {500, codeInternal, AsError}},
	LimitExceeded:     {{429, codeInternal, AsError}, {0, codeInternal, AsError}, {429, codeInternal, AsError}, {429, codeInternal, AsError}},
	LimitsUnavailable: {{503, codeInternal, AsError}, {0, codeInternal, AsError}, {503, codeInternal, AsError}, {503, codeInternal, AsError}},
}

// EncodingOf is the table's entry for class c on surface s.
func EncodingOf(c Class, s Surface) Encoding {
	if int(c) >= len(table) || s >= numSurfaces {
		return table[Internal][s%numSurfaces]
	}
	return table[c][s]
}

// Answer is a fault as one surface answers it: exactly one of Err, Result
// and Detail is set.
type Answer struct {
	Status     int             // HTTP status; 0 when the answer rides a stream
	Err        *jsonrpc.Error  // a JSON-RPC error
	Result     json.RawMessage // an in-band isError result
	Detail     string          // the body {"detail": Detail}
	Challenge  string          // WWW-Authenticate to send with Status
	RetryAfter int             // Retry-After seconds to send with Status; 0 for none
	// RateLimit are the x-ratelimit-* headers to send with Status, in order;
	// nil for none.
	RateLimit [][2]string
}

// Encode answers f on surface s for a request of method. It is the table
// plus the rules that look inside an upstream's own error: a modern caller
// sees the legacy resource-not-found code as -32602 and never sees the
// legacy URL-elicitation-required code; REST answers the upstream's error
// with 502 (400 for -32602).
func Encode(s Surface, method string, f *Fault) Answer {
	if f == nil {
		f = New(Internal, "internal error")
	}
	enc := EncodingOf(f.Class, s)
	a := Answer{Status: enc.Status}
	if f.Class == AuthRequired || f.Class == Forbidden {
		a.Challenge = f.Challenge
	}
	if (f.Class == LimitExceeded || f.Class == LimitsUnavailable) && a.Status != 0 {
		a.RetryAfter = retrySeconds(f.RetryAfter)
		a.RateLimit = rateLimitHeaders(f.Limit, a.RetryAfter)
	}
	if f.Class == UpstreamRPC {
		return encodeRPC(s, method, f, a)
	}
	switch enc.Shape {
	case InBand:
		a.Result = ToolError(inBandText(f))
	case AsDetail:
		a.Detail = f.Message
	default:
		a.Err = &jsonrpc.Error{Code: enc.Code, Message: f.Message, Data: f.Data}
	}
	return a
}

// retrySeconds is d as a Retry-After value: whole seconds, rounded up, at
// least 1 (0 would invite an immediate retry that is refused again).
func retrySeconds(d time.Duration) int {
	s := int((d + time.Second - 1) / time.Second)
	return max(s, 1)
}

// rateLimitHeaders are LiteLLM's x-ratelimit-* headers for the limit that
// refused a request: its value, what is left of it (0) and the seconds until
// it admits a request again (x-ratelimit-reset-*, the same as Retry-After).
func rateLimitHeaders(l *Limit, retry int) [][2]string {
	if l == nil || l.Kind == "" {
		return nil
	}
	reset := strconv.Itoa(retry)
	return [][2]string{
		{"x-ratelimit-limit-" + l.Kind, strconv.Itoa(l.Limit)},
		{"x-ratelimit-remaining-" + l.Kind, strconv.Itoa(max(l.Remaining, 0))},
		{"x-ratelimit-reset-" + l.Kind, reset},
	}
}

// inBandText is the text of a fault answered as an isError result.
func inBandText(f *Fault) string {
	switch f.Class {
	case UnknownTool:
		return "Tool '" + f.Subject + "' not found"
	case MissingCapability:
		return "The upstream needs the client capability " + f.Subject + ", which this client did not declare."
	}
	return f.Message
}

// encodeRPC answers an upstream's own JSON-RPC error.
func encodeRPC(s Surface, method string, f *Fault, a Answer) Answer {
	e := &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: f.Message}
	if f.RPC != nil {
		c := *f.RPC
		e = &c
	}
	switch s {
	case Modern:
		switch {
		case e.Code == mcp.CodeResourceNotFoundLegacy:
			e.Code = jsonrpc.CodeInvalidParams
		case e.Code == mcp.CodeURLElicitationRequiredLegacy && mcp.MayReturnInputRequired(method):
			text := urlElicitationText(e.Data)
			if method == mcp.MethodToolsCall { // only a tool result carries it in-band
				a.Status, a.Result = 200, ToolError(text)
				return a
			}
			e = &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: text}
		}
		a.Status = ModernErrorStatus(e.Code)
	case REST:
		if e.Code == jsonrpc.CodeInvalidParams {
			a.Status = 400
		}
	}
	a.Err = e
	return a
}

// ModernErrorStatus is the HTTP status of a JSON-RPC error code answered to
// a modern caller's POST.
func ModernErrorStatus(code int64) int {
	switch code {
	case jsonrpc.CodeInvalidParams, jsonrpc.CodeInvalidRequest, jsonrpc.CodeParseError,
		mcp.CodeHeaderMismatch, mcp.CodeMissingClientCapability, mcp.CodeUnsupportedProtocolVersion:
		return 400
	case jsonrpc.CodeMethodNotFound:
		return 404
	}
	return 200
}

// urlElicitationText tells a modern caller which URLs a legacy upstream's
// -32042 asks the user to open before retrying.
func urlElicitationText(data json.RawMessage) string {
	var d struct {
		Elicitations []struct {
			Mode    string `json:"mode"`
			URL     string `json:"url"`
			Message string `json:"message"`
		} `json:"elicitations"`
	}
	_ = json.Unmarshal(data, &d)
	text := "The server needs the user to complete a step in a browser before this request can proceed; open the URL(s) below, then retry the same request."
	for _, e := range d.Elicitations {
		if e.Mode == "url" && e.URL != "" {
			text += "\n" + e.URL
			if e.Message != "" {
				text += " (" + e.Message + ")"
			}
		}
	}
	return text
}

// ToolError is an in-band tool failure with a fixed text.
func ToolError(text string) json.RawMessage {
	b := []byte(`{"content":[{"type":"text","text":`)
	b = jsonrpc.AppendString(b, text)
	return append(b, `}],"isError":true}`...)
}
