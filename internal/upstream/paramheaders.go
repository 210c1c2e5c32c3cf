package upstream

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/mcpgw/mcpgw/internal/jsonrpc"
	"github.com/mcpgw/mcpgw/internal/mcp"
)

// paramHeader is one tool argument a 2026-07-28 client mirrors into an
// Mcp-Param-{Name} header, because the tool's inputSchema annotated it with
// x-mcp-header.
type paramHeader struct {
	header string   // Mcp-Param-{Name}
	path   []string // property path from the schema root, through "properties" only
	typ    string   // string, integer or boolean
}

// paramHeaders remembers, per tool, the arguments to mirror; it is filled
// from the upstream's tools/list answers.
type paramHeaders struct {
	mu    sync.RWMutex
	tools map[string][]paramHeader
}

// learn records the annotations of a tool list and returns the list without
// the tools whose annotations are invalid (the spec tells a client to drop
// those, and keep the rest).
func (p *paramHeaders) learn(items []json.RawMessage, warn func(tool, why string)) []json.RawMessage {
	found := map[string][]paramHeader{}
	kept := items[:0:0]
	for _, it := range items {
		name, _ := jsonrpc.StringMember(it, "name")
		specs, err := annotations(jsonrpc.Member(it, "inputSchema"))
		if err != nil {
			warn(name, err.Error())
			continue
		}
		if len(specs) > 0 {
			found[name] = specs
		}
		kept = append(kept, it)
	}
	p.mu.Lock()
	p.tools = found
	p.mu.Unlock()
	return kept
}

// annotations reads the x-mcp-header annotations of an inputSchema.
func annotations(schema json.RawMessage) ([]paramHeader, error) {
	if len(schema) == 0 || !bytes.Contains(schema, []byte(mcp.XMCPHeader)) {
		return nil, nil
	}
	var root map[string]any
	if err := json.Unmarshal(schema, &root); err != nil {
		return nil, nil
	}
	var out []paramHeader
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
			if raw, ok := prop[mcp.XMCPHeader]; ok {
				name, ok := raw.(string)
				if !ok || !mcp.ValidParamHeaderName(name) {
					return fmt.Errorf("property %q has an invalid %s annotation", key, mcp.XMCPHeader)
				}
				if seen[strings.ToLower(name)] {
					return fmt.Errorf("%s %q is used twice", mcp.XMCPHeader, name)
				}
				seen[strings.ToLower(name)] = true
				typ, _ := prop["type"].(string)
				if typ != "string" && typ != "integer" && typ != "boolean" {
					return fmt.Errorf("property %q of type %q cannot carry %s", key, typ, mcp.XMCPHeader)
				}
				out = append(out, paramHeader{header: mcp.ParamHeader(name), path: p, typ: typ})
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

// headersFor returns the Mcp-Param-* headers of one tools/call.
func (p *paramHeaders) headersFor(tool string, args json.RawMessage) http.Header {
	p.mu.RLock()
	specs := p.tools[tool]
	p.mu.RUnlock()
	if len(specs) == 0 || len(args) == 0 {
		return nil
	}
	var h http.Header
	for _, sp := range specs {
		text, ok := headerText(sp.value(args), sp.typ)
		if !ok {
			continue
		}
		if h == nil {
			h = http.Header{}
		}
		h.Set(sp.header, mcp.EncodeHeaderValue(text))
	}
	return h
}

// headerText renders an argument value as the spec says: strings as they
// are, integers in decimal, booleans as true/false; absent or null → none.
func headerText(v json.RawMessage, typ string) (string, bool) {
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
		if err != nil || f != math.Trunc(f) || math.Abs(f) > float64(mcp.MaxSafeInteger) {
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

// CheckParamHeaders verifies, for a server that re-exports this upstream's
// tool, the Mcp-Param-* headers a caller sent with a tools/call against the
// arguments in its body, as the spec requires of servers: a value in the body
// needs its header, the header must decode, and the two must agree. It
// returns what is wrong, or "" (also when the tool's annotations are not
// known yet).
func (c *Client) CheckParamHeaders(tool string, args json.RawMessage, h http.Header) string {
	c.params.mu.RLock()
	specs := c.params.tools[tool]
	c.params.mu.RUnlock()
	for _, sp := range specs {
		want, present := headerText(sp.value(args), sp.typ)
		got, sent := h[http.CanonicalHeaderKey(sp.header)]
		if !present {
			continue // no value, no header expected
		}
		if !sent || len(got) == 0 {
			return sp.header + " header is missing"
		}
		value, err := mcp.DecodeHeaderValue(got[0])
		if err != nil {
			return sp.header + " header is malformed"
		}
		if sp.typ == "integer" {
			a, errA := strconv.ParseFloat(value, 64)
			b, errB := strconv.ParseFloat(want, 64)
			if errA != nil || errB != nil || a != b {
				return sp.header + " does not match the argument"
			}
			continue
		}
		if value != want {
			return sp.header + " does not match the argument"
		}
	}
	return ""
}

// value returns the annotated argument in args, or nil when absent.
func (sp paramHeader) value(args json.RawMessage) json.RawMessage {
	v := args
	for _, k := range sp.path {
		if len(v) == 0 || v[0] != '{' {
			return nil
		}
		v = jsonrpc.Member(v, k)
	}
	return v
}
