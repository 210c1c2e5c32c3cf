package jsonrpc

import (
	"bytes"
	"encoding/json"
	"fmt"
	"unicode/utf8"
)

// DecodeError says precisely why bytes are not one valid JSON-RPC message.
type DecodeError struct {
	Code   int64  // CodeParseError for bad JSON, CodeInvalidRequest for a bad shape
	Reason string // what is wrong, without echoing large input
	ID     ID     // the message's id when it could be read, so an error reply can carry it
}

// Error implements error.
func (e *DecodeError) Error() string { return "invalid JSON-RPC message: " + e.Reason }

// RPCError converts the decode failure into the JSON-RPC error to answer with.
func (e *DecodeError) RPCError() *Error { return &Error{Code: e.Code, Message: e.Error()} }

func shapeErr(id ID, format string, args ...any) *DecodeError {
	return &DecodeError{Code: CodeInvalidRequest, Reason: fmt.Sprintf(format, args...), ID: id}
}

// Decode parses exactly one JSON-RPC 2.0 message. Params, Result and Error.Data
// alias data: the caller must not modify data while the message is in use.
//
// The bytes are read once: the pass that validates them also locates the
// message's members.
func Decode(data []byte) (*Message, error) {
	var f fields
	var ferr error // the first member error; reported only for valid JSON
	valid := validMembers(data, func(rawKey []byte, start, end int) {
		if ferr != nil {
			return
		}
		key, ok := memberName(rawKey)
		if !ok {
			ferr = fmt.Errorf("bad object key")
			return
		}
		ferr = f.set(key, data[start:end])
	})
	if !valid {
		return nil, whyInvalid(data)
	}
	switch data[skipWS(data, 0)] {
	case '{':
	case '[':
		return nil, shapeErr(ID{}, "batches are not supported: send one message per request")
	default:
		return nil, shapeErr(ID{}, "a message must be a JSON object")
	}
	if ferr != nil {
		return nil, ferr
	}
	return f.message()
}

// whyInvalid is the error for bytes validMembers refused. json.Valid alone
// lets invalid UTF-8 through inside strings, and a later json.Unmarshal
// silently turns it into U+FFFD, so a name would not survive a round trip:
// the slower checks tell which of the two rules the bytes break.
func whyInvalid(data []byte) *DecodeError {
	if !utf8.Valid(data) && json.Valid(data) {
		return &DecodeError{Code: CodeParseError, Reason: "body is not valid UTF-8"}
	}
	return &DecodeError{Code: CodeParseError, Reason: "body is not valid JSON"}
}

// fields collects the top-level members of a message.
type fields struct {
	version, id, method, params, result, errObj []byte
	seen                                        uint8
}

const (
	seenVersion = 1 << iota
	seenID
	seenMethod
	seenParams
	seenResult
	seenError
)

func (f *fields) set(key string, val []byte) error {
	var bit uint8
	var dst *[]byte
	switch key {
	case "jsonrpc":
		bit, dst = seenVersion, &f.version
	case "id":
		bit, dst = seenID, &f.id
	case "method":
		bit, dst = seenMethod, &f.method
	case "params":
		bit, dst = seenParams, &f.params
	case "result":
		bit, dst = seenResult, &f.result
	case "error":
		bit, dst = seenError, &f.errObj
	default:
		return nil // unknown members are tolerated
	}
	if f.seen&bit != 0 {
		return shapeErr(ID{}, "duplicate member %q", key)
	}
	f.seen |= bit
	*dst = val
	return nil
}

func (f *fields) message() (*Message, error) {
	m := &Message{}
	if f.seen&seenID != 0 && !bytes.Equal(f.id, []byte("null")) {
		id, err := ParseID(f.id)
		if err != nil {
			return nil, shapeErr(ID{}, "%v", err)
		}
		m.ID = id
	}
	if f.seen&seenVersion == 0 {
		return nil, shapeErr(m.ID, `missing "jsonrpc" member`)
	}
	if v, ok := unquote(f.version); !ok || v != Version {
		return nil, shapeErr(m.ID, `"jsonrpc" must be "2.0"`)
	}
	if f.seen&seenMethod != 0 {
		return f.request(m)
	}
	return f.response(m)
}

func (f *fields) request(m *Message) (*Message, error) {
	method, ok := unquote(f.method)
	if !ok {
		return nil, shapeErr(m.ID, `"method" must be a string`)
	}
	if method == "" {
		return nil, shapeErr(m.ID, `"method" must not be empty`)
	}
	if f.seen&(seenResult|seenError) != 0 {
		return nil, shapeErr(m.ID, `a request must not carry "result" or "error"`)
	}
	if f.seen&seenID != 0 && m.ID.IsZero() {
		return nil, shapeErr(m.ID, "request id must not be null")
	}
	if f.seen&seenParams != 0 {
		if c := f.params[0]; c != '{' && c != '[' {
			return nil, shapeErr(m.ID, `"params" must be an object or an array`)
		}
		m.Params = f.params
	}
	m.Method = method
	return m, nil
}

func (f *fields) response(m *Message) (*Message, error) {
	if f.seen&seenID == 0 {
		return nil, shapeErr(m.ID, `message has neither "method" nor "id"`)
	}
	switch f.seen & (seenResult | seenError) {
	case 0:
		return nil, shapeErr(m.ID, `a response needs "result" or "error"`)
	case seenResult | seenError:
		return nil, shapeErr(m.ID, `a response must not carry both "result" and "error"`)
	case seenResult:
		if m.ID.IsZero() {
			return nil, shapeErr(m.ID, "a result response must carry an id")
		}
		m.Result = f.result
		return m, nil
	}
	e, err := decodeErrorObject(f.errObj)
	if err != nil {
		return nil, shapeErr(m.ID, "%v", err)
	}
	m.Error = e
	return m, nil
}

func decodeErrorObject(raw []byte) (*Error, error) {
	if raw[0] != '{' {
		return nil, fmt.Errorf(`"error" must be an object`)
	}
	e := &Error{}
	var haveCode, haveMsg bool
	err := scanObject(raw, func(key string, val []byte) error {
		switch key {
		case "code":
			if !isJSONInteger(val) {
				return fmt.Errorf(`"error.code" must be an integer`)
			}
			if _, err := fmt.Sscan(string(val), &e.Code); err != nil {
				return fmt.Errorf(`"error.code" is out of range`)
			}
			haveCode = true
		case "message":
			s, ok := unquote(val)
			if !ok {
				return fmt.Errorf(`"error.message" must be a string`)
			}
			e.Message, haveMsg = s, true
		case "data":
			e.Data = val
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if !haveCode {
		return nil, fmt.Errorf(`"error.code" is missing`)
	}
	if !haveMsg {
		return nil, fmt.Errorf(`"error.message" is missing`)
	}
	return e, nil
}

// unquote returns the Go string for a raw JSON string value.
func unquote(raw []byte) (string, bool) {
	if len(raw) < 2 || raw[0] != '"' {
		return "", false
	}
	if bytes.IndexByte(raw, '\\') < 0 {
		return string(raw[1 : len(raw)-1]), true
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", false
	}
	return s, true
}

func truncate(b []byte) string {
	const max = 40
	if len(b) > max {
		return string(b[:max]) + "…"
	}
	return string(b)
}
