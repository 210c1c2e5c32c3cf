package jsonrpc

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// scanObject calls fn for each top-level member of the JSON object in data,
// with the unescaped key and the raw value bytes (a sub-slice of data). data
// must already be valid JSON (json.Valid); scanObject only locates members, so a
// multi-megabyte result is never copied or decoded.
func scanObject(data []byte, fn func(key string, val []byte) error) error {
	return scanSpans(data, func(key string, start, end int) error { return fn(key, data[start:end]) })
}

// scanSpans is scanObject reporting each value's position in data.
func scanSpans(data []byte, fn func(key string, start, end int) error) error {
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
		key, ok := unquote(data[i:end])
		if !ok {
			return fmt.Errorf("bad object key")
		}
		i = skipWS(data, end)
		i = skipWS(data, i+1) // ':'
		vend := skipValue(data, i)
		if err := fn(key, i, vend); err != nil {
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

// ObjectMembers calls fn for each top-level member of a JSON object without
// decoding the values. It reports an error if raw is not a valid JSON object.
func ObjectMembers(raw []byte, fn func(key string, val []byte) error) error {
	if !json.Valid(raw) {
		return fmt.Errorf("not valid JSON")
	}
	return scanObject(raw, fn)
}

// Member returns the raw value of the top-level member key of a JSON object,
// or nil when absent. raw must be valid JSON.
func Member(raw []byte, key string) []byte {
	var out []byte
	_ = scanObject(raw, func(k string, v []byte) error {
		if k == key && out == nil {
			out = v
		}
		return nil
	})
	return out
}

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

// skipString returns the index just past the JSON string starting at data[i].
func skipString(data []byte, i int) int {
	for j := i + 1; j < len(data); j++ {
		switch data[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
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
	err := scanSpans(obj, func(k string, s, e int) error {
		if k == key {
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

// EachMember calls fn for each top-level member of the JSON object obj, like
// ObjectMembers, without validating obj first: obj must come from a message
// Decode accepted (or be otherwise known valid).
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
