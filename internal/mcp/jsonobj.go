package mcp

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
)

// This file holds the small JSON machinery behind the shape types: exact-key decoding that
// keeps unknown members, and encoding that writes them back.

// present reports whether a raw member is there and not JSON null.
func present(raw json.RawMessage) bool {
	t := trimJSONSpace(raw)
	return len(t) > 0 && !bytes.Equal(t, []byte("null"))
}

// isJSONNull reports whether data is the literal null.
func isJSONNull(data []byte) bool {
	return bytes.Equal(trimJSONSpace(data), []byte("null"))
}

// member returns the named member of a raw JSON object; ok is false when raw is not an object
// or the member is missing or null.
func member(raw json.RawMessage, key string) (json.RawMessage, bool) {
	if !isJSONObject(raw) {
		return nil, false
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return nil, false
	}
	v, ok := m[key]
	return v, ok && present(v)
}

// jsonName returns the object key a struct field encodes to, and false for skipped fields.
func jsonName(f reflect.StructField) (string, bool) {
	if !f.IsExported() {
		return "", false
	}
	tag := f.Tag.Get("json")
	if tag == "-" {
		return "", false
	}
	name, _, _ := strings.Cut(tag, ",")
	if name == "" {
		name = f.Name
	}
	return name, true
}

// fieldIndex returns the index of the field of t whose JSON key is exactly key, or -1.
func fieldIndex(t reflect.Type, key string) int {
	for i := range t.NumField() {
		if n, ok := jsonName(t.Field(i)); ok && n == key {
			return i
		}
	}
	return -1
}

// decodeObject decodes a JSON object into the struct dst points to, matching member names
// exactly (encoding/json alone would also accept "Name" for "name"), and returns every other
// member. The caller handles a literal null before calling.
func decodeObject(data []byte, dst any, typeName string) (map[string]json.RawMessage, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("mcp: %s: %w", typeName, err)
	}
	v := reflect.ValueOf(dst).Elem()
	t := v.Type()
	var extra map[string]json.RawMessage
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		i := fieldIndex(t, k)
		if i < 0 {
			if extra == nil {
				extra = make(map[string]json.RawMessage)
			}
			extra[k] = m[k]
			continue
		}
		if err := json.Unmarshal(m[k], v.Field(i).Addr().Interface()); err != nil {
			return nil, fmt.Errorf("mcp: %s.%s: %w", typeName, k, err)
		}
	}
	return extra, nil
}

// encodeObject marshals v (a method-free struct) and appends the members of extra whose keys
// are not field keys of v, in sorted key order.
func encodeObject(v any, extra map[string]json.RawMessage) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil || len(extra) == 0 {
		return b, err
	}
	t := reflect.TypeOf(v)
	keys := make([]string, 0, len(extra))
	for k := range extra {
		if fieldIndex(t, k) < 0 {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return b, nil
	}
	slices.Sort(keys)
	var buf bytes.Buffer
	buf.Grow(len(b) + 32*len(keys))
	buf.Write(b[:len(b)-1]) // drop the closing brace
	first := len(b) == 2    // "{}"
	for _, k := range keys {
		if !first {
			buf.WriteByte(',')
		}
		first = false
		kb, err := json.Marshal(k)
		if err != nil {
			return nil, err
		}
		buf.Write(kb)
		buf.WriteByte(':')
		raw := extra[k]
		if len(trimJSONSpace(raw)) == 0 {
			raw = json.RawMessage("null")
		}
		if err := json.Compact(&buf, raw); err != nil {
			return nil, fmt.Errorf("mcp: extra member %q: %w", k, err)
		}
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
}
