package openapimcp

import (
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"
)

// methods are the HTTP methods an OpenAPI path item may hold, in the order tools are made.
var methods = [...]string{"get", "put", "post", "delete", "options", "head", "patch", "trace"}

// param is one argument of a tool: where it goes in the HTTP request.
type param struct {
	arg  string // the argument's name in the tool's input
	name string // the parameter's name in the request
	in   string // path, query or header
}

// operation is one tool: its definition and how to call it.
type operation struct {
	Name        string
	Description string
	Schema      map[string]any
	method      string // upper case
	path        string // the template, e.g. /pets/{petId}
	params      []param
	body        bool // the tool has a "body" argument sent as JSON
	readOnly    bool // GET, HEAD or OPTIONS
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9_-]+`)

// toolName is operationId, else method_path, made of [A-Za-z0-9_-] and at most 64 bytes.
func toolName(opID, method, path string) string {
	n := opID
	if n == "" {
		n = method + path
	}
	n = strings.Trim(unsafeName.ReplaceAllString(n, "_"), "_")
	if len(n) > 64 {
		n = n[:64]
	}
	if n == "" {
		n = method
	}
	return n
}

// convert makes the tools of doc, an OpenAPI 3 document, in path and method order.
func convert(doc map[string]any) ([]operation, error) {
	v, _ := doc["openapi"].(string)
	if !strings.HasPrefix(v, "3.") {
		return nil, errors.New(`not an OpenAPI 3 document (no "openapi: 3.x")`)
	}
	paths, _ := doc["paths"].(map[string]any)
	r := &resolver{doc: doc}
	keys := make([]string, 0, len(paths))
	for p := range paths {
		keys = append(keys, p)
	}
	slices.Sort(keys)
	var out []operation
	used := map[string]bool{}
	budget := maxSchemaNodes // shared by every tool: a document cannot expand past it
	for _, p := range keys {
		item, _ := r.deref(paths[p]).(map[string]any)
		if item == nil || !strings.HasPrefix(p, "/") {
			continue
		}
		for _, m := range methods {
			op, ok := item[m].(map[string]any)
			if !ok {
				continue
			}
			if len(out) >= MaxOperations {
				return nil, fmt.Errorf("document has more than %d operations", MaxOperations)
			}
			t := r.operation(m, p, item, op, &budget)
			base := t.Name
			for i := 2; used[t.Name]; i++ {
				t.Name = fmt.Sprintf("%s_%d", base, i)
			}
			used[t.Name] = true
			out = append(out, t)
		}
	}
	return out, nil
}

// operation converts one operation; path-level parameters apply unless the operation
// redefines them (same name and location).
func (r *resolver) operation(method, path string, item, op map[string]any, budget *int) operation {
	opID, _ := op["operationId"].(string)
	t := operation{Name: toolName(opID, method, path), method: strings.ToUpper(method), path: path,
		readOnly: method == "get" || method == "head" || method == "options"}
	summary, _ := op["summary"].(string)
	desc, _ := op["description"].(string)
	t.Description = strings.TrimSpace(strings.Join(slices.DeleteFunc([]string{summary, desc}, func(s string) bool { return s == "" }), "\n\n"))
	if t.Description == "" {
		t.Description = t.method + " " + path
	}
	props := map[string]any{}
	var required []string
	seen := map[string]bool{}
	list := slices.Concat(r.list(op["parameters"]), r.list(item["parameters"]))
	for _, pv := range list {
		p, _ := r.deref(pv).(map[string]any)
		name, _ := p["name"].(string)
		in, _ := p["in"].(string)
		if name == "" || (in != "path" && in != "query" && in != "header") || seen[in+"\x00"+name] {
			continue // cookies are not sent; an operation's own parameter wins over the path's
		}
		seen[in+"\x00"+name] = true
		arg := name
		if _, taken := props[arg]; taken || arg == "body" {
			arg = in + "_" + name
		}
		schema, _ := r.inline(p["schema"], budget).(map[string]any)
		if schema == nil {
			schema = map[string]any{"type": "string"}
		}
		if d, ok := p["description"].(string); ok && d != "" {
			schema["description"] = d
		}
		props[arg] = schema
		if req, _ := p["required"].(bool); req || in == "path" {
			required = append(required, arg)
		}
		t.params = append(t.params, param{arg: arg, name: name, in: in})
	}
	if rb, ok := r.deref(op["requestBody"]).(map[string]any); ok {
		content, _ := rb["content"].(map[string]any)
		if media, ok := jsonMedia(content); ok {
			schema, _ := r.inline(media["schema"], budget).(map[string]any)
			if schema == nil {
				schema = map[string]any{}
			}
			if d, ok := rb["description"].(string); ok && d != "" {
				schema["description"] = d
			}
			props["body"], t.body = schema, true
			if req, _ := rb["required"].(bool); req {
				required = append(required, "body")
			}
		}
	}
	t.Schema = map[string]any{"type": "object", "properties": props}
	if len(required) > 0 {
		t.Schema["required"] = required
	}
	return t
}

// list returns v's items when it is a list.
func (r *resolver) list(v any) []any {
	l, _ := r.deref(v).([]any)
	return l
}

// jsonMedia returns the JSON media type of a request body's content (application/json, or
// any +json type).
func jsonMedia(content map[string]any) (map[string]any, bool) {
	if m, ok := content["application/json"].(map[string]any); ok {
		return m, true
	}
	keys := make([]string, 0, len(content))
	for k := range content {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if strings.HasSuffix(strings.ToLower(strings.TrimSpace(strings.Split(k, ";")[0])), "json") {
			m, ok := content[k].(map[string]any)
			return m, ok
		}
	}
	return nil, false
}

// serverURL is the document's first servers[].url when it is an absolute http(s) URL (server
// variables at their defaults), else "".
func serverURL(doc map[string]any) string {
	list, _ := doc["servers"].([]any)
	if len(list) == 0 {
		return ""
	}
	s, _ := list[0].(map[string]any)
	raw, _ := s["url"].(string)
	vars, _ := s["variables"].(map[string]any)
	for k, v := range vars {
		vm, _ := v.(map[string]any)
		if def, ok := vm["default"].(string); ok {
			raw = strings.ReplaceAll(raw, "{"+k+"}", def)
		}
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return ""
	}
	return raw
}
