package jsonrpc

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
)

// scanObject calls fn for each top-level member of the JSON object in data,
// with the unescaped key and the raw value bytes (a sub-slice of data). data
// must already be valid JSON (json.Valid); scanObject only locates members, so a
// multi-megabyte result is never copied or decoded.
func scanObject(data []byte, fn func(key string, val []byte) error) error {
	return scanSpans(data, func(key string, start, end int) error { return fn(key, data[start:end]) })
}

// scanSpans is scanObject reporting each value's position in data. Keys
// the gateway looks up on every message come back as constant strings (see
// memberName), so scanning a message allocates nothing for them.
func scanSpans(data []byte, fn func(key string, start, end int) error) error {
	return scanRaw(data, func(rawKey []byte, start, end int) error {
		key, ok := memberName(rawKey)
		if !ok {
			return fmt.Errorf("bad object key")
		}
		return fn(key, start, end)
	})
}

// scanRaw is scanSpans with each key as its raw JSON string (quotes and
// escapes as written).
func scanRaw(data []byte, fn func(rawKey []byte, start, end int) error) error {
	i := skipWS(data, 0)
	if i >= len(data) || data[i] != '{' {
		return fmt.Errorf("not a JSON object")
	}
	i = skipWS(data, i+1)
	if i < len(data) && data[i] == '}' {
		return nil
	}
	for i < len(data) {
		end := skipString(data, i)
		if end-i < 2 || data[i] != '"' {
			return fmt.Errorf("bad object key")
		}
		rawKey := data[i:end]
		i = skipWS(data, end)
		i = skipWS(data, i+1) // ':'
		vend := skipValue(data, i)
		if err := fn(rawKey, i, vend); err != nil {
			return err
		}
		i = skipWS(data, vend)
		if i >= len(data) || data[i] == '}' {
			return nil
		}
		i = skipWS(data, i+1) // ','
	}
	return nil
}

// memberName unquotes a raw object key. The member names of JSON-RPC and of
// MCP's request and result objects are returned as constants, without the
// allocation a copy of the key costs.
func memberName(rawKey []byte) (string, bool) {
	if len(rawKey) >= 2 {
		switch string(rawKey[1 : len(rawKey)-1]) {
		case "jsonrpc":
			return "jsonrpc", true
		case "id":
			return "id", true
		case "method":
			return "method", true
		case "params":
			return "params", true
		case "result":
			return "result", true
		case "error":
			return "error", true
		case "code":
			return "code", true
		case "message":
			return "message", true
		case "data":
			return "data", true
		case "_meta":
			return "_meta", true
		case "name":
			return "name", true
		case "arguments":
			return "arguments", true
		case "content":
			return "content", true
		case "type":
			return "type", true
		case "text":
			return "text", true
		case "isError":
			return "isError", true
		case "resultType":
			return "resultType", true
		case "nextCursor":
			return "nextCursor", true
		case "tools":
			return "tools", true
		case "ttlMs":
			return "ttlMs", true
		case "cacheScope":
			return "cacheScope", true
		case "version":
			return "version", true
		case "progressToken":
			return "progressToken", true
		// The members of a 2026-07-28 request's _meta, on every call.
		case "io.modelcontextprotocol/protocolVersion":
			return "io.modelcontextprotocol/protocolVersion", true
		case "io.modelcontextprotocol/clientCapabilities":
			return "io.modelcontextprotocol/clientCapabilities", true
		case "io.modelcontextprotocol/clientInfo":
			return "io.modelcontextprotocol/clientInfo", true
		case "io.modelcontextprotocol/logLevel":
			return "io.modelcontextprotocol/logLevel", true
		}
	}
	return unquote(rawKey)
}

// keyIs reports whether the raw object key rawKey names key.
func keyIs(rawKey []byte, key string) bool {
	if len(rawKey) < 2 {
		return false
	}
	if bytes.IndexByte(rawKey, '\\') < 0 {
		return string(rawKey[1:len(rawKey)-1]) == key
	}
	k, ok := unquote(rawKey)
	return ok && k == key
}

// errFound stops a scan that found what it looked for.
var errFound = errors.New("found")

// Member returns the raw value of the top-level member key of a JSON object
// (the first when it is there twice), or nil when absent. The scan stops at
// the member. raw must be valid JSON.
func Member(raw []byte, key string) []byte {
	var out []byte
	_ = scanRaw(raw, func(k []byte, s, e int) error {
		if keyIs(k, key) {
			out = raw[s:e]
			return errFound
		}
		return nil
	})
	return out
}

// Members sets vals[i] to the raw value of the member keys[i] of the JSON
// object obj, nil when absent, in one pass; the last of duplicate members
// wins, as with encoding/json. obj must be valid JSON.
func Members(obj []byte, keys []string, vals [][]byte) error {
	var buf [2][8]Span // no allocation for the few keys callers ask for
	first, last := buf[0][:], buf[1][:]
	if len(keys) > len(first) {
		first, last = make([]Span, len(keys)), make([]Span, len(keys))
	}
	err := MemberSpans(obj, keys, first, last)
	for i := range keys {
		vals[i] = last[i].Of(obj)
	}
	return err
}

// EqualRaws reports whether a and b hold the same bytes, item by item. Items
// that are the very same slices (an unchanged list handed on by a memo) are
// told equal without comparing a byte.
func EqualRaws(a, b []json.RawMessage) bool {
	return slices.EqualFunc(a, b, func(x, y json.RawMessage) bool { return bytes.Equal(x, y) })
}

// Span is where one member's value lies in a JSON object: obj[Start:End].
// Start is -1 when the member is absent.
type Span struct{ Start, End int }

// Of returns the value at sp in obj, nil when absent.
func (sp Span) Of(obj []byte) []byte {
	if sp.Start < 0 {
		return nil
	}
	return obj[sp.Start:sp.End]
}

// MemberSpans finds the members keys[i] of the JSON object obj in one pass:
// first[i] is where the first member of that name lies (as with Member) and
// last[i] where the last one does (the one encoding/json keeps), both with
// Start -1 when absent. obj must be valid JSON.
func MemberSpans(obj []byte, keys []string, first, last []Span) error {
	for i := range keys {
		first[i], last[i] = Span{-1, -1}, Span{-1, -1}
	}
	return scanRaw(obj, func(k []byte, s, e int) error {
		for i, key := range keys {
			if keyIs(k, key) {
				if first[i].Start < 0 {
					first[i] = Span{s, e}
				}
				last[i] = Span{s, e}
			}
		}
		return nil
	})
}

// Unquote returns the Go string for a raw JSON string value (valid JSON);
// false when raw is not a string.
func Unquote(raw []byte) (string, bool) { return unquote(raw) }

func skipWS(data []byte, i int) int {
	for i < len(data) {
		switch data[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// skipString returns the index just past the JSON string starting at data[i]
// (len(data) when it does not end). It jumps from quote to quote with
// bytes.IndexByte, which is several times faster than a byte loop on the long
// descriptions and schemas tool lists carry; a quote is escaped when an odd
// run of backslashes precedes it, which is what a forward scan pairing each
// backslash with the byte after it decides too.
func skipString(data []byte, i int) int {
	for j := i + 1; j < len(data); {
		q := bytes.IndexByte(data[j:], '"')
		if q < 0 {
			return len(data)
		}
		q += j
		k := q
		for k > i+1 && data[k-1] == '\\' {
			k--
		}
		if (q-k)%2 == 0 {
			return q + 1
		}
		j = q + 1
	}
	return len(data)
}

// skipValue returns the index just past the JSON value starting at data[i].
func skipValue(data []byte, i int) int {
	if i >= len(data) {
		return i
	}
	switch data[i] {
	case '"':
		return skipString(data, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(data); j++ {
			switch data[j] {
			case '"':
				j = skipString(data, j) - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1
				}
			}
		}
		return len(data)
	default:
		j := i
		for j < len(data) {
			switch data[j] {
			case ',', '}', ']', ' ', '\t', '\n', '\r':
				return j
			}
			j++
		}
		return j
	}
}

// SetMember returns a copy of the JSON object obj with the top-level member
// key set to val (raw JSON), replacing the old value in place or appending the
// member when absent. Nothing else in obj is re-encoded. obj must be a valid
// JSON object.
func SetMember(obj []byte, key string, val []byte) ([]byte, error) {
	start, end := -1, -1
	err := scanRaw(obj, func(k []byte, s, e int) error {
		if keyIs(k, key) {
			start, end = s, e
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if start >= 0 {
		out := make([]byte, 0, len(obj)-(end-start)+len(val))
		out = append(out, obj[:start]...)
		out = append(out, val...)
		return append(out, obj[end:]...), nil
	}
	closing := bytes.LastIndexByte(obj, '}')
	body := bytes.TrimSpace(obj[:closing])
	out := make([]byte, 0, len(obj)+len(key)+len(val)+4)
	out = append(out, body...)
	if len(body) > 1 { // more than the opening brace
		out = append(out, ',')
	}
	out = AppendString(out, key)
	out = append(out, ':')
	out = append(out, val...)
	return append(out, '}'), nil
}

// StringMember returns the string value of the top-level member key of the
// JSON object obj; false when obj is not an object or the member is absent
// or not a string. obj must be valid JSON.
func StringMember(obj []byte, key string) (string, bool) {
	if len(obj) == 0 || obj[0] != '{' {
		return "", false
	}
	raw := Member(obj, key)
	if len(raw) < 2 || raw[0] != '"' {
		return "", false
	}
	return unquote(raw)
}

// StringMemberIs reports whether StringMember(obj, key)'s string ("" when
// the member is absent or not a string) is want, without allocating when
// the member has no escape.
func StringMemberIs(obj []byte, key, want string) bool {
	if len(obj) == 0 || obj[0] != '{' {
		return want == ""
	}
	raw := Member(obj, key)
	if len(raw) < 2 || raw[0] != '"' {
		return want == ""
	}
	if bytes.IndexByte(raw, '\\') < 0 {
		return string(raw[1:len(raw)-1]) == want
	}
	s, _ := unquote(raw)
	return s == want
}

// EachMember calls fn for each top-level member of the JSON object obj,
// without validating obj first: obj must come from a message Decode accepted
// (or be otherwise known valid).
func EachMember(obj []byte, fn func(key string, val []byte) error) error {
	return scanObject(obj, fn)
}

// EachElement calls fn with the raw bytes of each element of the JSON array
// arr (sub-slices of arr, nothing copied or decoded). arr must be valid JSON.
func EachElement(arr []byte, fn func(elem []byte) error) error {
	i := skipWS(arr, 0)
	if i >= len(arr) || arr[i] != '[' {
		return fmt.Errorf("not a JSON array")
	}
	i = skipWS(arr, i+1)
	if i < len(arr) && arr[i] == ']' {
		return nil
	}
	for i < len(arr) {
		end := skipValue(arr, i)
		if err := fn(arr[i:end]); err != nil {
			return err
		}
		i = skipWS(arr, end)
		if i >= len(arr) || arr[i] == ']' {
			return nil
		}
		i = skipWS(arr, i+1) // ','
	}
	return nil
}

// MemberSpan returns the raw value of obj's top-level member key and where it
// lies in obj (obj[start:end]), nil when absent; dup reports a key present more
// than once (the first is returned). obj must be valid JSON.
func MemberSpan(obj []byte, key string) (raw []byte, start, end int, dup bool) {
	_ = scanRaw(obj, func(k []byte, s, e int) error {
		if keyIs(k, key) {
			if raw != nil {
				dup = true
				return nil
			}
			raw, start, end = obj[s:e], s, e
		}
		return nil
	})
	return raw, start, end, dup
}
