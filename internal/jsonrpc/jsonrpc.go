package jsonrpc

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
)

// Version is the only JSON-RPC version this package speaks.
const Version = "2.0"

// Standard JSON-RPC error codes.
const (
	CodeParseError     = -32700
	CodeInvalidRequest = -32600
	CodeMethodNotFound = -32601
	CodeInvalidParams  = -32602
	CodeInternalError  = -32603
)

// ID is a JSON-RPC id kept as its raw JSON bytes: a string stays a string and an
// integer keeps every digit. The zero ID means "absent".
type ID struct{ raw string }

// StringID returns the ID for a JSON string value.
func StringID(s string) ID {
	b, _ := json.Marshal(s) // a Go string always marshals
	return ID{raw: string(b)}
}

// IntID returns the ID for an integer value.
func IntID(n int64) ID { return ID{raw: strconv.FormatInt(n, 10)} }

// ParseID validates raw JSON as an id: a JSON string or a JSON integer.
func ParseID(raw []byte) (ID, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return ID{}, errors.New("empty id")
	}
	switch c := raw[0]; {
	case c == '"':
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return ID{}, fmt.Errorf("id is not a valid JSON string: %w", err)
		}
		return ID{raw: string(raw)}, nil
	case c == '-' || (c >= '0' && c <= '9'):
		if !isJSONInteger(raw) {
			return ID{}, fmt.Errorf("id %s is not an integer", truncate(raw))
		}
		return ID{raw: string(raw)}, nil
	case bytes.Equal(raw, []byte("null")):
		return ID{}, errors.New("id is null")
	default:
		return ID{}, fmt.Errorf("id must be a string or an integer, got %s", truncate(raw))
	}
}

// isJSONInteger reports whether b is an integer in JSON number grammar.
func isJSONInteger(b []byte) bool {
	if len(b) > 0 && b[0] == '-' {
		b = b[1:]
	}
	if len(b) == 0 || (b[0] == '0' && len(b) > 1) {
		return false
	}
	for _, c := range b {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// IsZero reports whether the id is absent.
func (id ID) IsZero() bool { return id.raw == "" }

// Raw returns the id's JSON encoding ("null" when absent).
func (id ID) Raw() json.RawMessage {
	if id.raw == "" {
		return json.RawMessage("null")
	}
	return json.RawMessage(id.raw)
}

// String returns the id's JSON text, for logs and map keys.
func (id ID) String() string { return id.raw }

// MarshalJSON encodes the id as its raw bytes.
func (id ID) MarshalJSON() ([]byte, error) { return id.Raw(), nil }

// UnmarshalJSON accepts a JSON string or integer (null leaves the id absent).
func (id *ID) UnmarshalJSON(b []byte) error {
	if bytes.Equal(bytes.TrimSpace(b), []byte("null")) {
		*id = ID{}
		return nil
	}
	v, err := ParseID(b)
	if err != nil {
		return err
	}
	*id = v
	return nil
}

// Error is a JSON-RPC error object.
type Error struct {
	Code    int64           `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

// Error formats the error as "message (code N)".
func (e *Error) Error() string {
	return fmt.Sprintf("%s (code %d)", e.Message, e.Code)
}

// Errorf builds an Error with a formatted message.
func Errorf(code int64, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Kind says which of the four JSON-RPC message shapes a Message has.
type Kind uint8

// The four message shapes.
const (
	KindRequest Kind = iota + 1
	KindNotification
	KindResponse
	KindErrorResponse
)

// String names the kind.
func (k Kind) String() string {
	switch k {
	case KindRequest:
		return "request"
	case KindNotification:
		return "notification"
	case KindResponse:
		return "response"
	case KindErrorResponse:
		return "error response"
	}
	return "unknown"
}

// Message is one decoded JSON-RPC message. Params and Result are the sender's
// bytes, not re-encoded.
type Message struct {
	ID     ID
	Method string
	Params json.RawMessage
	Result json.RawMessage
	Error  *Error
}

// Kind returns the message's shape.
func (m *Message) Kind() Kind {
	switch {
	case m.Method != "" && m.ID.IsZero():
		return KindNotification
	case m.Method != "":
		return KindRequest
	case m.Error != nil:
		return KindErrorResponse
	default:
		return KindResponse
	}
}

// IsResponse reports whether the message answers a request (result or error).
func (m *Message) IsResponse() bool { return m.Method == "" }
