package mcp

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"net/textproto"
	"strconv"
	"strings"

	"github.com/mcpgw/mcpgw/internal/jsonrpc"
)

// ParamSpec is one tool argument a 2026-07-28 client mirrors into an
// Mcp-Param-{Name} header, because the tool's inputSchema annotated it with
// x-mcp-header.
type ParamSpec struct {
	Header string   // Mcp-Param-{Name}
	Path   []string // property path from the schema root, through "properties" only
	Type   string   // string, integer or boolean
}

// ParseParamSpecs reads the x-mcp-header annotations of a tool's
// inputSchema. It returns nil for a schema without annotations (or one that
// is not a JSON object), and an error when an annotation is invalid: not a
// valid header name, used twice (case-insensitively), or on a property that
// is not a string, integer or boolean. A client drops such a tool.
func ParseParamSpecs(schema json.RawMessage) ([]ParamSpec, error) {
	if len(schema) == 0 || !bytes.Contains(schema, []byte(XMCPHeader)) {
		return nil, nil
	}
	var root map[string]any
	if err := json.Unmarshal(schema, &root); err != nil {
		return nil, nil
	}
	var out []ParamSpec
	seen := map[string]bool{}
	var walk func(node map[string]any, path []string) error
	walk = func(node map[string]any, path []string) error {
		props, _ := node["properties"].(map[string]any)
		for key, v := range props {
			prop, ok := v.(map[string]any)
			if !ok {
				continue
			}
			p := append(append([]string(nil), path...), key)
			if raw, ok := prop[XMCPHeader]; ok {
				name, ok := raw.(string)
				if !ok || !ValidParamHeaderName(name) {
					return fmt.Errorf("property %q has an invalid %s annotation", key, XMCPHeader)
				}
				if seen[strings.ToLower(name)] {
					return fmt.Errorf("%s %q is used twice", XMCPHeader, name)
				}
				seen[strings.ToLower(name)] = true
				typ, _ := prop["type"].(string)
				if typ != "string" && typ != "integer" && typ != "boolean" {
					return fmt.Errorf("property %q of type %q cannot carry %s", key, typ, XMCPHeader)
				}
				out = append(out, ParamSpec{Header: ParamHeader(name), Path: p, Type: typ})
			}
			if err := walk(prop, p); err != nil {
				return err
			}
		}
		return nil
	}
	if err := walk(root, nil); err != nil {
		return nil, err
	}
	return out, nil
}

// ParamHeaderValues returns the Mcp-Param-* headers (canonical keys) a
// tools/call with args carries for a tool with these specs; nil when none.
func ParamHeaderValues(specs []ParamSpec, args json.RawMessage) map[string][]string {
	if len(specs) == 0 || len(args) == 0 {
		return nil
	}
	var h map[string][]string
	for _, sp := range specs {
		text, ok := paramText(sp.value(args), sp.Type)
		if !ok {
			continue
		}
		if h == nil {
			h = map[string][]string{}
		}
		h[textproto.CanonicalMIMEHeaderKey(sp.Header)] = []string{EncodeHeaderValue(text)}
	}
	return h
}

// CheckParamHeaders verifies the Mcp-Param-* headers h (canonical keys) a
// caller sent with a tools/call against the arguments in its body, as the
// spec requires of servers: a value in the body needs its header, the header
// must decode, and the two must agree. It returns what is wrong, or "".
func CheckParamHeaders(specs []ParamSpec, args json.RawMessage, h map[string][]string) string {
	for _, sp := range specs {
		want, present := paramText(sp.value(args), sp.Type)
		if !present {
			continue // no value, no header expected
		}
		got := h[textproto.CanonicalMIMEHeaderKey(sp.Header)]
		if len(got) == 0 {
			return sp.Header + " header is missing"
		}
		value, err := DecodeHeaderValue(got[0])
		if err != nil {
			return sp.Header + " header is malformed"
		}
		if sp.Type == "integer" {
			a, errA := strconv.ParseFloat(value, 64)
			b, errB := strconv.ParseFloat(want, 64)
			if errA != nil || errB != nil || a != b {
				return sp.Header + " does not match the argument"
			}
			continue
		}
		if value != want {
			return sp.Header + " does not match the argument"
		}
	}
	return ""
}

// paramText renders an argument value as the spec says: strings as they
// are, integers in decimal, booleans as true/false; absent or null → none.
func paramText(v json.RawMessage, typ string) (string, bool) {
	if len(v) == 0 || string(v) == "null" {
		return "", false
	}
	switch typ {
	case "string":
		var s string
		if json.Unmarshal(v, &s) != nil {
			return "", false
		}
		return s, true
	case "integer":
		f, err := strconv.ParseFloat(string(v), 64)
		if err != nil || f != math.Trunc(f) || math.Abs(f) > float64(MaxSafeInteger) {
			return "", false
		}
		return strconv.FormatInt(int64(f), 10), true
	case "boolean":
		if s := string(v); s == "true" || s == "false" {
			return s, true
		}
	}
	return "", false
}

// value returns the annotated argument in args, or nil when absent.
func (sp ParamSpec) value(args json.RawMessage) json.RawMessage {
	v := args
	for _, k := range sp.Path {
		if len(v) == 0 || v[0] != '{' {
			return nil
		}
		v = jsonrpc.Member(v, k)
	}
	return v
}
