package jsonrpc

import (
	"encoding/json"
	"unicode/utf8"
)

// AppendRequest appends a request envelope to dst. params is spliced in as is
// (it must be valid JSON); nil params are omitted.
func AppendRequest(dst []byte, id ID, method string, params json.RawMessage) []byte {
	dst = append(dst, `{"jsonrpc":"2.0","id":`...)
	dst = append(dst, id.Raw()...)
	dst = append(dst, `,"method":`...)
	dst = AppendString(dst, method)
	if params != nil {
		dst = append(dst, `,"params":`...)
		dst = append(dst, params...)
	}
	return append(dst, '}')
}

// AppendNotification appends a notification envelope to dst.
func AppendNotification(dst []byte, method string, params json.RawMessage) []byte {
	dst = append(dst, `{"jsonrpc":"2.0","method":`...)
	dst = AppendString(dst, method)
	if params != nil {
		dst = append(dst, `,"params":`...)
		dst = append(dst, params...)
	}
	return append(dst, '}')
}

// AppendResult appends a success response envelope to dst.
func AppendResult(dst []byte, id ID, result json.RawMessage) []byte {
	dst = AppendResultHead(dst, id)
	if result == nil {
		result = json.RawMessage("{}")
	}
	dst = append(dst, result...)
	return append(dst, '}')
}

// AppendResultHead appends the start of a success response envelope to dst,
// up to its result: the result and a closing '}' are the caller's to append
// (for a result written straight into the envelope's buffer).
func AppendResultHead(dst []byte, id ID) []byte {
	dst = append(dst, `{"jsonrpc":"2.0","id":`...)
	dst = append(dst, id.Raw()...)
	return append(dst, `,"result":`...)
}

// AppendError appends an error response envelope to dst. A zero id is encoded
// as null, as JSON-RPC requires when the request's id could not be read.
func AppendError(dst []byte, id ID, e *Error) []byte {
	dst = append(dst, `{"jsonrpc":"2.0","id":`...)
	dst = append(dst, id.Raw()...)
	dst = append(dst, `,"error":`...)
	b, _ := json.Marshal(e) // Error has only marshalable fields
	dst = append(dst, b...)
	return append(dst, '}')
}

// EncodeRequest returns a request envelope.
func EncodeRequest(id ID, method string, params json.RawMessage) []byte {
	return AppendRequest(make([]byte, 0, 64+len(method)+len(params)), id, method, params)
}

// EncodeNotification returns a notification envelope.
func EncodeNotification(method string, params json.RawMessage) []byte {
	return AppendNotification(make([]byte, 0, 48+len(method)+len(params)), method, params)
}

// EncodeResult returns a success response envelope.
func EncodeResult(id ID, result json.RawMessage) []byte {
	return AppendResult(make([]byte, 0, 40+len(result)), id, result)
}

// EncodeError returns an error response envelope.
func EncodeError(id ID, e *Error) []byte {
	return AppendError(make([]byte, 0, 96+len(e.Message)+len(e.Data)), id, e)
}

// AppendString appends s as a JSON string.
func AppendString(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' || c >= utf8.RuneSelf || c == '<' || c == '>' || c == '&' {
			b, _ := json.Marshal(s)
			return append(dst, b...)
		}
	}
	dst = append(dst, '"')
	dst = append(dst, s...)
	return append(dst, '"')
}
