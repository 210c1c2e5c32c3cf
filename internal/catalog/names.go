package catalog

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"sync"
	"time"

	"github.com/mcpgw/mcpgw/internal/jsonrpc"
	"github.com/mcpgw/mcpgw/internal/mcp"
)

// seenFor is how long a caller's last listing of a server answers "is this
// name one of its tools?": a call for a name the caller was not shown that
// recently is refused without contacting the upstream. Older listings
// decide nothing, so a tool added upstream is never refused for long.
const seenFor = time.Minute

// maxSeen bounds the memo; when full it starts over.
const maxSeen = 10000

// maxLearned bounds the annotations remembered per server beyond callers'
// recent listings; when full, that server's start over.
const maxLearned = 10000

// names remembers the tool and prompt names each caller was last shown per
// server, and the x-mcp-header annotations of those tools: both keyed, as
// the list cache is, by the caller's binding and credentials. It also keeps,
// per server, each tool's annotations from the last listing that showed the
// tool to anyone (learned): the check's fallback when the caller has no
// recent listing and its list cannot be fetched, so a caller's headers are
// still checked while a server's tools/list fails.
type names struct {
	mu      sync.Mutex
	lists   map[ListKey]shown
	learned map[string]map[string][]mcp.ParamSpec // server → tool → annotations
	// lastLearn is, per server, what learnLocked was last given: the same
	// names and annotations again (an unchanged listing) change nothing.
	lastLearn map[string]learnedFrom
	// parsed holds, per server, its last recorded tools/list and what its
	// annotated tools parsed to: the same listing again (the common case)
	// takes its annotations as they are, and a tool listed again byte for
	// byte is not parsed again. Each server's holds only one listing.
	parsed map[string]*toolSpecs
}

// toolSpecs is one listing's items and the annotations of its tools; never
// changed once made.
type toolSpecs struct {
	items []json.RawMessage
	// byItem is what each annotated tool parsed to (nil: none or invalid),
	// by its JSON as listed.
	byItem map[string][]mcp.ParamSpec
	specs  map[string][]mcp.ParamSpec // by name: the tools with valid annotations
}

// learnedFrom is one listing's names and annotations as learnLocked took them.
type learnedFrom struct {
	list  []string
	specs map[string][]mcp.ParamSpec
}

// sameSpecs reports whether a and b hold the same annotations: the same
// tools, each with the very same parsed slice (an unchanged tool's, from
// names.parsed). The same listing again gives the very same map.
func sameSpecs(a, b map[string][]mcp.ParamSpec) bool {
	if len(a) != len(b) {
		return false
	}
	for tool, sa := range a {
		sb, ok := b[tool]
		if !ok || len(sa) != len(sb) || len(sa) > 0 && &sa[0] != &sb[0] {
			return false
		}
	}
	return true
}

type shown struct {
	list  []string // the names as listed (names given to recordNamed)
	names map[string]struct{}
	specs map[string][]mcp.ParamSpec // tools with valid annotations
	at    time.Time
}

// listKey names one server's method as q's caller lists it: the list's cache key, and what
// the caller's listing is remembered under (a struct, so a lookup builds no string; two per
// tools/call).
func (q Query) listKey(server, method string) ListKey {
	cred := ""
	if q.CredentialKey != nil {
		cred = q.CredentialKey(server)
	}
	return ListKey{Server: server, Method: method, Binding: q.Binding, Credentials: cred}
}

// record remembers a listing; annotations says whether the tools'
// x-mcp-header annotations are to be remembered too.
func (n *names) record(q Query, server, method string, items []json.RawMessage, annotations bool, now time.Time) {
	names := make([]string, len(items))
	for i, it := range items {
		names[i], _ = stringMember(it, "name")
	}
	n.recordNamed(q, server, method, items, names, annotations, now)
}

// recordNamed is record with each item's name given (names[i], "" for an
// item without one), as present found them.
func (n *names) recordNamed(q Query, server, method string, items []json.RawMessage, names []string, annotations bool, now time.Time) {
	if method != mcp.MethodToolsList && method != mcp.MethodPromptsList {
		return
	}
	key := q.listKey(server, method)
	n.mu.Lock()
	last := n.parsed[server]
	prev, had := n.lists[key]
	n.mu.Unlock()
	// The same names as the caller's last listing (the common case) keep
	// its set: nothing else changes it once made.
	set := prev.names
	if !had || !slices.Equal(prev.list, names) {
		set = make(map[string]struct{}, len(items))
		for _, name := range names {
			if name != "" {
				set[name] = struct{}{}
			}
		}
	}
	annotated := annotations && method == mcp.MethodToolsList
	var specs map[string][]mcp.ParamSpec
	parsed := last
	if annotated {
		if last == nil || !jsonrpc.EqualRaws(items, last.items) {
			parsed = parseSpecs(items, names, last)
		}
		specs = parsed.specs
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if annotated && parsed != last {
		if n.parsed == nil || len(n.parsed) >= maxSeen {
			n.parsed = map[string]*toolSpecs{}
		}
		n.parsed[server] = parsed
	}
	if len(n.lists) >= maxSeen {
		n.lists = map[ListKey]shown{}
	}
	n.lists[key] = shown{list: names, names: set, specs: specs, at: now}
	if annotated {
		n.learnLocked(server, names, set, specs)
	}
}

// parseSpecs returns the annotations of the tools in items (names[i] is
// items[i]'s name, "" for one without), reusing what a tool listed byte for
// byte in last (nil: none) parsed to.
func parseSpecs(items []json.RawMessage, names []string, last *toolSpecs) *toolSpecs {
	out := &toolSpecs{items: items}
	var known map[string][]mcp.ParamSpec
	if last != nil {
		known = last.byItem
	}
	for i, it := range items {
		name := names[i]
		if name == "" || !bytes.Contains(it, []byte(mcp.XMCPHeader)) {
			continue
		}
		sp, ok := known[string(it)]
		if !ok {
			if sp, _ = mcp.ParseParamSpecs(jsonrpc.Member(it, "inputSchema")); len(sp) == 0 {
				sp = nil // invalid or none
			}
		}
		if out.byItem == nil {
			out.byItem = map[string][]mcp.ParamSpec{}
		}
		out.byItem[string(it)] = sp
		if sp != nil {
			if out.specs == nil {
				out.specs = map[string][]mcp.ParamSpec{}
			}
			out.specs[name] = sp
		}
	}
	return out
}

// learnLocked makes specs the learned annotations of the tools in set, the
// names of list (a tool in set without specs has none any more).
func (n *names) learnLocked(server string, list []string, set map[string]struct{}, specs map[string][]mcp.ParamSpec) {
	if last, ok := n.lastLearn[server]; ok && slices.Equal(last.list, list) && sameSpecs(last.specs, specs) {
		return // learned last time, and nothing learned since
	}
	if n.learned == nil {
		n.learned = map[string]map[string][]mcp.ParamSpec{}
	}
	if n.lastLearn == nil {
		n.lastLearn = map[string]learnedFrom{}
	}
	n.lastLearn[server] = learnedFrom{list: list, specs: specs}
	m := n.learned[server]
	for name := range set {
		sp := specs[name]
		switch {
		case sp != nil:
			if m == nil || len(m) >= maxLearned {
				m = map[string][]mcp.ParamSpec{}
				n.learned[server] = m
			}
			m[name] = sp
		case m != nil:
			delete(m, name)
		}
	}
}

// annotated reports whether the x-mcp-header annotations of server's tools
// bind callers.
func (c *Catalog) annotated(server string) bool {
	s := c.servers[server]
	return s != nil && !s.SkipParamHeaders
}

// ParamSpecs returns the x-mcp-header annotations of upstream tool bare of
// server: from the caller's recent listing (see Knows) when there is one,
// else the tool's annotations as last listed to anyone; nil when it has
// none.
func (c *Catalog) ParamSpecs(q Query, server, bare string) []mcp.ParamSpec {
	c.seen.mu.Lock()
	defer c.seen.mu.Unlock()
	if s, ok := c.seen.lists[q.listKey(server, mcp.MethodToolsList)]; ok && c.now().Sub(s.at) <= seenFor {
		return s.specs[bare]
	}
	return c.seen.learned[server][bare]
}

// Listed reports whether upstream name bare was in the caller's recent
// listing of server (method tools/list or prompts/list); known is false
// when there is no recent listing to judge by.
func (c *Catalog) Listed(q Query, server, method, bare string) (listed, known bool) {
	c.seen.mu.Lock()
	defer c.seen.mu.Unlock()
	s, ok := c.seen.lists[q.listKey(server, method)]
	if !ok || c.now().Sub(s.at) > seenFor {
		return false, false
	}
	_, listed = s.names[bare]
	return listed, true
}

// Knows is Listed, fetching the server's list (from the cache when it may)
// when the caller has no recent listing, so that a name no visible tool has
// is refused without calling it. known is false only when the list could not
// be fetched: then the upstream decides.
func (c *Catalog) Knows(ctx context.Context, q Query, server, method, bare string) (listed, known bool) {
	if listed, known := c.Listed(q, server, method, bare); known {
		return listed, true
	}
	s := c.servers[server]
	if s == nil {
		return false, false
	}
	items, err := c.fetch(ctx, q, s, method)
	if err != nil {
		return false, false
	}
	c.seen.record(q, server, method, items, c.annotated(server), c.now())
	return c.Listed(q, server, method, bare)
}
