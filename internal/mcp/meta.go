package mcp

import (
	"bytes"
	"encoding/json"
	"errors"

	"github.com/mcpgw/mcpgw/internal/jsonrpc"
)

// _meta keys defined by the specification.
const (
	// MetaProtocolVersion is the required request _meta key carrying the revision (modern era).
	MetaProtocolVersion = "io.modelcontextprotocol/protocolVersion"
	// MetaClientCapabilities is the required request _meta key carrying ClientCapabilities (modern era).
	MetaClientCapabilities = "io.modelcontextprotocol/clientCapabilities"
	// MetaClientInfo is the optional request _meta key carrying the client's Implementation.
	MetaClientInfo = "io.modelcontextprotocol/clientInfo"
	// MetaLogLevel is the optional request _meta key opting into notifications/message at a level.
	MetaLogLevel = "io.modelcontextprotocol/logLevel"
	// MetaServerInfo is the result _meta key carrying the server's Implementation.
	MetaServerInfo = "io.modelcontextprotocol/serverInfo"
	// MetaServerOutcomes is the result _meta key carrying per-server outcomes of an aggregated
	// list (LiteLLM's name, so its dashboards keep working).
	MetaServerOutcomes = "litellm.ai/server_outcomes"
	// MetaSubscriptionID is the notification _meta key naming the listen request a notification belongs to.
	MetaSubscriptionID = "io.modelcontextprotocol/subscriptionId"
	// MetaProgressToken is the request _meta key opting into notifications/progress.
	MetaProgressToken = "progressToken"
	// MetaTraceParent is the W3C Trace Context traceparent key (reserved, unprefixed).
	MetaTraceParent = "traceparent"
	// MetaTraceState is the W3C Trace Context tracestate key (reserved, unprefixed).
	MetaTraceState = "tracestate"
	// MetaBaggage is the W3C Baggage key (reserved, unprefixed).
	MetaBaggage = "baggage"
)

// Log levels accepted in MetaLogLevel and logging/setLevel, least severe first.
const (
	// LogLevelDebug is severity 0.
	LogLevelDebug = "debug"
	// LogLevelInfo is severity 1.
	LogLevelInfo = "info"
	// LogLevelNotice is severity 2.
	LogLevelNotice = "notice"
	// LogLevelWarning is severity 3.
	LogLevelWarning = "warning"
	// LogLevelError is severity 4.
	LogLevelError = "error"
	// LogLevelCritical is severity 5.
	LogLevelCritical = "critical"
	// LogLevelAlert is severity 6.
	LogLevelAlert = "alert"
	// LogLevelEmergency is severity 7.
	LogLevelEmergency = "emergency"
)

// LogLevelSeverity returns 0 (debug) … 7 (emergency) for a valid level and -1 otherwise.
func LogLevelSeverity(level string) int {
	switch level {
	case LogLevelDebug:
		return 0
	case LogLevelInfo:
		return 1
	case LogLevelNotice:
		return 2
	case LogLevelWarning:
		return 3
	case LogLevelError:
		return 4
	case LogLevelCritical:
		return 5
	case LogLevelAlert:
		return 6
	case LogLevelEmergency:
		return 7
	}
	return -1
}

// ValidLogLevel reports whether level is one of the eight syslog level names.
func ValidLogLevel(level string) bool { return LogLevelSeverity(level) >= 0 }

func isASCIILetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

func isASCIIAlnum(c byte) bool { return isASCIILetter(c) || c >= '0' && c <= '9' }

// RequestMeta builds the modern request _meta object once, in a fixed key order:
// {"io.modelcontextprotocol/protocolVersion":…,"io.modelcontextprotocol/clientCapabilities":…,"io.modelcontextprotocol/clientInfo":…}.
// Empty caps mean {}; caps must otherwise be a JSON object. clientInfo is left out when info is the zero Implementation.
func RequestMeta(version string, caps json.RawMessage, info Implementation) (json.RawMessage, error) {
	if version == "" {
		return nil, errors.New("mcp: RequestMeta: empty protocol version")
	}
	var buf bytes.Buffer
	buf.WriteString(`{"` + MetaProtocolVersion + `":`)
	v, err := json.Marshal(version)
	if err != nil {
		return nil, err
	}
	buf.Write(v)
	buf.WriteString(`,"` + MetaClientCapabilities + `":`)
	if len(bytes.TrimSpace(caps)) == 0 {
		buf.WriteString("{}")
	} else {
		if !isJSONObject(caps) {
			return nil, errors.New("mcp: RequestMeta: client capabilities must be a JSON object")
		}
		if err := json.Compact(&buf, caps); err != nil {
			return nil, err
		}
	}
	if !info.isZero() {
		b, err := json.Marshal(info)
		if err != nil {
			return nil, err
		}
		buf.WriteString(`,"` + MetaClientInfo + `":`)
		buf.Write(b)
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
}

// Errors returned by ParseRequestMeta; on HTTP each maps to -32602 with status 400.
var (
	// ErrMetaNotObject means params._meta is absent or not a JSON object.
	ErrMetaNotObject = errors.New("mcp: params._meta must be a JSON object")
	// ErrMetaProtocolVersion means the protocolVersion key is missing or not a non-empty string.
	ErrMetaProtocolVersion = errors.New("mcp: _meta " + MetaProtocolVersion + " missing or not a string")
	// ErrMetaClientCapabilities means the clientCapabilities key is missing or not a JSON object.
	ErrMetaClientCapabilities = errors.New("mcp: _meta " + MetaClientCapabilities + " missing or not an object")
	// ErrMetaLogLevel means the logLevel key is present but not one of the eight level names.
	ErrMetaLogLevel = errors.New("mcp: _meta " + MetaLogLevel + " is not a valid log level")
)

// RequestMetaFields are the protocol-defined members of a modern request's params._meta.
type RequestMetaFields struct {
	// ProtocolVersion is the requested revision.
	ProtocolVersion string
	// ClientCapabilities is the raw ClientCapabilities object, as sent.
	ClientCapabilities json.RawMessage
	// ClientInfo is the raw Implementation object, or nil when absent or null.
	ClientInfo json.RawMessage
	// LogLevel is the requested log level, or "" when absent.
	LogLevel string
	// ProgressToken is the raw progress token (string or number), or nil when absent or null.
	ProgressToken json.RawMessage
}

// ParseRequestMeta extracts the protocol keys of a modern request _meta object. It returns the
// fields it could read together with the first problem found (ErrMeta*), checking protocolVersion,
// then clientCapabilities, then logLevel. Other keys are ignored; of a key given twice the last
// counts, as with encoding/json. meta must be valid JSON (a member of a message jsonrpc.Decode
// accepted): it is scanned in place, not decoded, so the hot path allocates only the strings.
func ParseRequestMeta(meta json.RawMessage) (RequestMetaFields, error) {
	var f RequestMetaFields
	if !isJSONObject(meta) {
		return f, ErrMetaNotObject
	}
	keys := [...]string{MetaProtocolVersion, MetaClientCapabilities, MetaClientInfo, MetaLogLevel, MetaProgressToken}
	var vals [len(keys)][]byte
	if err := jsonrpc.Members(trimJSONSpace(meta), keys[:], vals[:]); err != nil {
		return f, ErrMetaNotObject
	}
	var firstErr error
	note := func(err error) {
		if firstErr == nil {
			firstErr = err
		}
	}
	if v, ok := jsonrpc.Unquote(vals[0]); ok && v != "" {
		f.ProtocolVersion = v
	} else {
		note(ErrMetaProtocolVersion)
	}
	if raw := vals[1]; isJSONObject(raw) {
		f.ClientCapabilities = raw
	} else {
		note(ErrMetaClientCapabilities)
	}
	if raw := vals[2]; present(raw) {
		f.ClientInfo = raw
	}
	if raw := vals[3]; present(raw) {
		if v, ok := jsonrpc.Unquote(raw); ok && ValidLogLevel(v) {
			f.LogLevel = v
		} else {
			note(ErrMetaLogLevel)
		}
	}
	if raw := vals[4]; present(raw) {
		f.ProgressToken = raw
	}
	return f, firstErr
}

// isJSONObject reports whether raw, after JSON whitespace, starts with '{' (the value is assumed valid JSON).
func isJSONObject(raw json.RawMessage) bool {
	t := trimJSONSpace(raw)
	return len(t) > 0 && t[0] == '{'
}

func trimJSONSpace(b []byte) []byte {
	return bytes.Trim(b, " \t\r\n")
}
