package upstream

import (
	"bytes"
	"encoding/json"
	"net/http"
	"sync"

	"github.com/mcpgw/mcpgw/internal/jsonrpc"
	"github.com/mcpgw/mcpgw/internal/mcp"
)

// paramHeaders remembers, per tool, the arguments a call mirrors into
// Mcp-Param-* headers; it is filled from the upstream's tools/list answers.
type paramHeaders struct {
	mu    sync.RWMutex
	tools map[string][]mcp.ParamSpec
	// last is the last listing learned: the same items again (the very
	// slices, as a walk's page memo hands them back) are learned already.
	// A listing that changed is parsed again whole: only its annotated
	// tools are parsed at all, and a per-tool memo of them saved little
	// once unchanged listings stopped reaching the parse.
	last learnedList
}

// learnedList is one listing learn was given and what it made of it; never
// changed once made.
type learnedList struct {
	items   []json.RawMessage
	kept    []json.RawMessage
	dropped []annotated // the tools dropped, to warn of again
}

// sameItems reports whether a and b are the same items: the same slices of
// the same bytes, which the page memo hands back for an unchanged page.
// Equal bytes elsewhere are not enough (jsonrpc.EqualRaws): the kept list
// handed back must be slices of items, which the walk's recut tells apart
// by their address.
func sameItems(a, b []json.RawMessage) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if len(a[i]) != len(b[i]) || len(a[i]) > 0 && &a[i][0] != &b[i][0] {
			return false
		}
	}
	return true
}

// annotated is what one annotated tool parsed to.
type annotated struct {
	name  string
	specs []mcp.ParamSpec
	err   string // why the tool is dropped; "" when it is kept
}

// learn records the annotations of a tool list and returns the list without
// the tools whose annotations are invalid (the spec tells a client to drop
// those, and keep the rest).
func (p *paramHeaders) learn(items []json.RawMessage, warn func(tool, why string)) []json.RawMessage {
	p.mu.RLock()
	prev := p.last
	p.mu.RUnlock()
	if len(items) > 0 && sameItems(items, prev.items) {
		for _, a := range prev.dropped {
			warn(a.name, a.err)
		}
		return prev.kept
	}
	found := map[string][]mcp.ParamSpec{}
	var kept []json.RawMessage // nil while every item is kept
	var dropped []annotated
	for i, it := range items {
		if !bytes.Contains(it, []byte(mcp.XMCPHeader)) {
			if kept != nil {
				kept = append(kept, it) // no annotation: nothing to parse
			}
			continue
		}
		a := parseAnnotated(it)
		if a.err != "" {
			warn(a.name, a.err)
			dropped = append(dropped, a)
			if kept == nil {
				kept = append(make([]json.RawMessage, 0, len(items)-1), items[:i]...)
			}
			continue
		}
		if len(a.specs) > 0 {
			found[a.name] = a.specs
		}
		if kept != nil {
			kept = append(kept, it)
		}
	}
	if kept == nil {
		kept = items
	}
	p.mu.Lock()
	p.tools = found
	p.last = learnedList{items: items, kept: kept, dropped: dropped}
	p.mu.Unlock()
	return kept
}

// parseAnnotated reads the name and the x-mcp-header annotations of a tool.
func parseAnnotated(it json.RawMessage) annotated {
	name, _ := jsonrpc.StringMember(it, "name")
	specs, err := mcp.ParseParamSpecs(jsonrpc.Member(it, "inputSchema"))
	if err != nil {
		return annotated{name: name, err: err.Error()}
	}
	return annotated{name: name, specs: specs}
}

// headersFor returns the Mcp-Param-* headers of one tools/call.
func (p *paramHeaders) headersFor(tool string, args json.RawMessage) http.Header {
	p.mu.RLock()
	specs := p.tools[tool]
	p.mu.RUnlock()
	return mcp.ParamHeaderValues(specs, args)
}
