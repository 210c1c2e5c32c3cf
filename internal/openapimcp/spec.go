package openapimcp

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Bounds of a document; see the package doc.
const (
	// MaxSpecBytes is the largest document read.
	MaxSpecBytes = 4 << 20
	// MaxOperations is the most operations (tools) one document may have.
	MaxOperations = 1024
	// maxRefDepth bounds nested $ref resolution; deeper refs become an open schema.
	maxRefDepth = 16
	// maxSchemaNodes bounds the nodes of every tool's inlined schemas together; past it a
	// schema is left open ({}).
	maxSchemaNodes = 200_000
	// maxDocNodes bounds the YAML nodes of a document (aliases counted each time).
	maxDocNodes = 1_000_000
)

// decode parses a JSON or YAML document (YAML is a superset of JSON) into plain values:
// map[string]any, []any, string, float64/int, bool, nil. Mapping keys that are not strings
// are written as their text.
func decode(data []byte) (map[string]any, error) {
	if len(data) > MaxSpecBytes {
		return nil, fmt.Errorf("document is larger than %d bytes", MaxSpecBytes)
	}
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return nil, fmt.Errorf("document is neither JSON nor YAML: %w", err)
	}
	budget := maxDocNodes
	v, err := plain(&root, &budget, 0)
	if err != nil {
		return nil, err
	}
	doc, ok := v.(map[string]any)
	if !ok {
		return nil, errors.New("document is not an object")
	}
	return doc, nil
}

// plain converts a YAML node to plain values within budget nodes and 128 levels.
func plain(n *yaml.Node, budget *int, depth int) (any, error) {
	*budget--
	if *budget < 0 || depth > 128 {
		return nil, errors.New("document is too large or too deeply nested")
	}
	switch n.Kind {
	case yaml.DocumentNode:
		if len(n.Content) == 0 {
			return nil, nil
		}
		return plain(n.Content[0], budget, depth+1)
	case yaml.AliasNode:
		return plain(n.Alias, budget, depth+1)
	case yaml.MappingNode:
		m := make(map[string]any, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			v, err := plain(n.Content[i+1], budget, depth+1)
			if err != nil {
				return nil, err
			}
			m[n.Content[i].Value] = v
		}
		return m, nil
	case yaml.SequenceNode:
		s := make([]any, 0, len(n.Content))
		for _, c := range n.Content {
			v, err := plain(c, budget, depth+1)
			if err != nil {
				return nil, err
			}
			s = append(s, v)
		}
		return s, nil
	}
	return scalar(n), nil
}

func scalar(n *yaml.Node) any {
	switch n.Tag {
	case "!!null":
		return nil
	case "!!bool":
		return n.Value == "true" || n.Value == "True" || n.Value == "TRUE"
	case "!!int":
		if i, err := strconv.ParseInt(n.Value, 0, 64); err == nil {
			return i
		}
	case "!!float":
		if f, err := strconv.ParseFloat(n.Value, 64); err == nil {
			return f
		}
	}
	return n.Value
}

// resolver inlines local $refs ("#/components/..."); refs to other documents are never
// followed (they become an open schema), so a document cannot make the gateway read files or
// URLs.
type resolver struct {
	doc map[string]any
}

// pointer returns the value at a local JSON pointer ("#/a/b"), or false.
func (r *resolver) pointer(ref string) (any, bool) {
	rest, ok := strings.CutPrefix(ref, "#/")
	if !ok {
		return nil, false
	}
	var cur any = r.doc
	for _, tok := range strings.Split(rest, "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch c := cur.(type) {
		case map[string]any:
			if cur, ok = c[tok]; !ok {
				return nil, false
			}
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(c) {
				return nil, false
			}
			cur = c[i]
		default:
			return nil, false
		}
	}
	return cur, true
}

// deref follows v's $ref chain (an object whose $ref is local), at most maxRefDepth links.
func (r *resolver) deref(v any) any {
	for range maxRefDepth {
		m, ok := v.(map[string]any)
		if !ok {
			return v
		}
		ref, ok := m["$ref"].(string)
		if !ok {
			return v
		}
		if v, ok = r.pointer(ref); !ok {
			return map[string]any{}
		}
	}
	return map[string]any{}
}

// inline returns a copy of schema with every local $ref replaced by its target, a ref deeper
// than maxRefDepth or seen on its own path (a cycle) by an open schema, within budget nodes.
func (r *resolver) inline(schema any, budget *int) any {
	return r.inlineAt(schema, budget, map[string]bool{}, 0)
}

func (r *resolver) inlineAt(v any, budget *int, onPath map[string]bool, depth int) any {
	*budget--
	if *budget < 0 || depth > 64 {
		return map[string]any{}
	}
	switch c := v.(type) {
	case map[string]any:
		if ref, ok := c["$ref"].(string); ok {
			target, found := r.pointer(ref)
			if !found || onPath[ref] || len(onPath) >= maxRefDepth {
				return map[string]any{}
			}
			onPath[ref] = true
			out := r.inlineAt(target, budget, onPath, depth+1)
			delete(onPath, ref)
			return out
		}
		out := make(map[string]any, len(c))
		for k, e := range c {
			out[k] = r.inlineAt(e, budget, onPath, depth+1)
		}
		return out
	case []any:
		out := make([]any, len(c))
		for i, e := range c {
			out[i] = r.inlineAt(e, budget, onPath, depth+1)
		}
		return out
	}
	return v
}
