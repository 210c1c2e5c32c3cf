package config

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// envPrefix marks a string value that names an environment variable (LiteLLM's convention).
const envPrefix = "os.environ/"

// maxMergeDepth bounds nested YAML merge keys (`<<: *base` inside a merged mapping).
const maxMergeDepth = 8

// loader walks one YAML document and collects problems.
type loader struct {
	opts     Options
	fileEnv  map[string]string // environment_variables, consulted before opts.LookupEnv
	problems []Problem
	// mergeBudget bounds the YAML nodes visited through merge keys, so a small file of nested
	// aliases cannot make loading slow; tooComplex records that it ran out.
	mergeBudget int
	tooComplex  bool
	// cacheParamsNode is litellm_settings.cache_params, read after every section.
	cacheParamsNode *yaml.Node
	// aliasNodes are the key nodes of litellm_settings.mcp_aliases, for validation messages.
	aliasNodes map[string]*yaml.Node
}

func lineOf(n *yaml.Node) int {
	if n == nil || n.Line < 1 {
		return 1
	}
	return n.Line
}

func (l *loader) add(line int, sev Severity, format string, args []any) {
	if line < 1 {
		line = 1
	}
	l.problems = append(l.problems, Problem{Line: line, Severity: sev, Msg: fmt.Sprintf(format, args...)})
}

func (l *loader) errorf(n *yaml.Node, format string, args ...any) {
	l.add(lineOf(n), SeverityError, format, args)
}

func (l *loader) warnf(n *yaml.Node, format string, args ...any) {
	l.add(lineOf(n), SeverityWarning, format, args)
}

func (l *loader) errorAt(line int, format string, args ...any) {
	l.add(line, SeverityError, format, args)
}

func (l *loader) warnAt(line int, format string, args ...any) {
	l.add(line, SeverityWarning, format, args)
}

// deref follows an alias (`*name`) to the node it refers to.
func deref(n *yaml.Node) *yaml.Node {
	for i := 0; n != nil && n.Kind == yaml.AliasNode && i < maxMergeDepth; i++ {
		n = n.Alias
	}
	return n
}

// isNull reports whether n is absent or an explicit YAML null (`key:`, `~`, `null`).
func isNull(n *yaml.Node) bool {
	n = deref(n)
	return n == nil || n.Kind == yaml.AliasNode || (n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null")
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "mapping"
	case yaml.SequenceNode:
		return "list"
	case yaml.ScalarNode:
		return "single value"
	}
	return "node"
}

// entry is one key/value pair of a YAML mapping.
type entry struct {
	key  string
	k, v *yaml.Node
}

// entries returns the pairs of mapping n in file order, with merge keys (`<<`) expanded after the
// explicit keys (which win). what names the mapping in messages, noun its keys. A null n has no
// entries; any other non-mapping is an error.
func (l *loader) entries(n *yaml.Node, what, noun string) []entry {
	if isNull(n) {
		return nil
	}
	d := deref(n)
	if d.Kind != yaml.MappingNode {
		l.errorf(n, "%s must be a mapping, not a %s", what, kindName(d))
		return nil
	}
	c := &collector{what: what, noun: noun, seen: map[string]*yaml.Node{}, visited: map[*yaml.Node]bool{}}
	l.collect(c, d, 0)
	return c.out
}

// collector gathers one mapping's entries across merge keys.
type collector struct {
	what, noun string
	seen       map[string]*yaml.Node // key → its first key node
	visited    map[*yaml.Node]bool   // mappings already merged (aliases can repeat them)
	out        []entry
}

func (l *loader) collect(c *collector, d *yaml.Node, depth int) {
	if c.visited[d] {
		return
	}
	c.visited[d] = true
	if depth > 0 {
		if l.mergeBudget -= len(d.Content); l.mergeBudget < 0 {
			if !l.tooComplex {
				l.tooComplex = true
				l.errorf(d, "%s: merge keys (<<) expand to too many entries", c.what)
			}
			return
		}
	}
	what, noun := c.what, c.noun
	var merges []*yaml.Node
	for i := 0; i+1 < len(d.Content); i += 2 {
		k, v := d.Content[i], d.Content[i+1]
		kd := deref(k)
		if kd == nil || kd.Kind != yaml.ScalarNode {
			l.errorf(k, "%s: keys must be plain values", what)
			continue
		}
		if kd.ShortTag() == "!!merge" {
			merges = append(merges, v)
			continue
		}
		if first, dup := c.seen[kd.Value]; dup {
			if depth == 0 {
				l.errorf(k, "duplicate %s %q in %s (first at line %d)", noun, kd.Value, what, lineOf(first))
			}
			continue
		}
		c.seen[kd.Value] = k
		c.out = append(c.out, entry{key: kd.Value, k: k, v: v})
	}
	for _, m := range merges {
		if depth >= maxMergeDepth {
			l.errorf(m, "%s: merge keys nested too deeply", what)
			return
		}
		md := deref(m)
		var sources []*yaml.Node
		switch {
		case md != nil && md.Kind == yaml.MappingNode:
			sources = []*yaml.Node{md}
		case md != nil && md.Kind == yaml.SequenceNode:
			sources = md.Content
		}
		if sources == nil {
			l.errorf(m, "%s: the value of a merge key (<<) must be a mapping or a list of mappings", what)
			continue
		}
		for _, src := range sources {
			sd := deref(src)
			if sd == nil || sd.Kind != yaml.MappingNode {
				l.errorf(src, "%s: the value of a merge key (<<) must be a mapping or a list of mappings", what)
				continue
			}
			l.collect(c, sd, depth+1)
		}
	}
}

// str returns the string form of scalar n with an os.environ/ reference resolved; ok is false
// when n is null or unusable (a problem was recorded for the latter). field names n in messages.
func (l *loader) str(n *yaml.Node, field string) (string, bool) {
	if isNull(n) {
		return "", false
	}
	d := deref(n)
	if d.Kind != yaml.ScalarNode {
		l.errorf(n, "%s must be a single value, not a %s", field, kindName(d))
		return "", false
	}
	return l.resolve(n, d.Value, field)
}

// resolve replaces an os.environ/NAME value by the variable's value. Messages name the
// variable, never a value.
func (l *loader) resolve(n *yaml.Node, v, field string) (string, bool) {
	name, ok := strings.CutPrefix(v, envPrefix)
	if !ok {
		return v, true
	}
	if name == "" {
		l.errorf(n, "%s: %q names no environment variable", field, envPrefix)
		return "", false
	}
	if l.opts.DenyEnv != nil && l.opts.DenyEnv(name) {
		l.errorf(n, "%s: %q is one of the gateway's own secrets and may not be referenced by a server added through the API", field, envPrefix+name)
		return "", false
	}
	if val, ok := l.fileEnv[name]; ok {
		return val, true
	}
	if l.opts.LookupEnv != nil {
		if val, ok := l.opts.LookupEnv(name); ok {
			return val, true
		}
	}
	l.errorf(n, "%s: environment variable %q is not set", field, name)
	return "", false
}

// boolean parses a YAML or environment boolean.
func (l *loader) boolean(n *yaml.Node, field string) (bool, bool) {
	s, ok := l.str(n, field)
	if !ok {
		return false, false
	}
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "true":
		return true, true
	case "false":
		return false, true
	}
	l.errorf(n, "%s must be true or false", field)
	return false, false
}

// nonNegInt parses a whole number ≥ 0.
func (l *loader) nonNegInt(n *yaml.Node, field string) (int, bool) {
	s, ok := l.str(n, field)
	if !ok {
		return 0, false
	}
	v, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil {
		l.errorf(n, "%s must be a whole number", field)
		return 0, false
	}
	if v < 0 {
		l.errorf(n, "%s must not be negative", field)
		return 0, false
	}
	return v, true
}

// seconds parses a non-negative number of seconds (fractions allowed) as a duration.
func (l *loader) seconds(n *yaml.Node, field string) (time.Duration, bool) {
	s, ok := l.str(n, field)
	if !ok {
		return 0, false
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		l.errorf(n, "%s must be a number of seconds", field)
		return 0, false
	}
	if v < 0 {
		l.errorf(n, "%s must not be negative", field)
		return 0, false
	}
	if v > float64(math.MaxInt64)/float64(time.Second) {
		l.errorf(n, "%s is too large", field)
		return 0, false
	}
	return time.Duration(v * float64(time.Second)), true
}

// strList parses a list of single values. A null is an empty list.
func (l *loader) strList(n *yaml.Node, field string) []string {
	if isNull(n) {
		return nil
	}
	d := deref(n)
	if d.Kind != yaml.SequenceNode {
		l.errorf(n, "%s must be a list, not a %s", field, kindName(d))
		return nil
	}
	out := make([]string, 0, len(d.Content))
	for i, item := range d.Content {
		if s, ok := l.str(item, fmt.Sprintf("%s[%d]", field, i)); ok {
			out = append(out, s)
		}
	}
	return out
}

// strMap parses a mapping of single values (a null is an empty map) and returns each key's node.
func (l *loader) strMap(n *yaml.Node, field string) (map[string]string, map[string]*yaml.Node) {
	es := l.entries(n, field, "key")
	if es == nil {
		return nil, nil
	}
	out := make(map[string]string, len(es))
	keys := make(map[string]*yaml.Node, len(es))
	for _, e := range es {
		keys[e.key] = e.k
		if isNull(e.v) {
			out[e.key] = ""
			continue
		}
		if s, ok := l.str(e.v, field+"."+e.key); ok {
			out[e.key] = s
		}
	}
	return out, keys
}
