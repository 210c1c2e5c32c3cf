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
}

// learn records the annotations of a tool list and returns the list without
// the tools whose annotations are invalid (the spec tells a client to drop
// those, and keep the rest).
func (p *paramHeaders) learn(items []json.RawMessage, warn func(tool, why string)) []json.RawMessage {
	found := map[string][]mcp.ParamSpec{}
	kept := items[:0:0]
	for _, it := range items {
		if !bytes.Contains(it, []byte(mcp.XMCPHeader)) {
			kept = append(kept, it) // no annotation: nothing to parse
			continue
		}
		name, _ := jsonrpc.StringMember(it, "name")
		specs, err := mcp.ParseParamSpecs(jsonrpc.Member(it, "inputSchema"))
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

// headersFor returns the Mcp-Param-* headers of one tools/call.
func (p *paramHeaders) headersFor(tool string, args json.RawMessage) http.Header {
	p.mu.RLock()
	specs := p.tools[tool]
	p.mu.RUnlock()
	return mcp.ParamHeaderValues(specs, args)
}
