package front

import (
	"net/http"
	"slices"
	"strings"
)

// Narrowing request headers (LiteLLM's): comma-separated server names, ids, aliases,
// mcp_aliases or access groups; and access groups only.
const (
	headerMCPServers      = "X-Mcp-Servers"
	headerMCPAccessGroups = "X-Mcp-Access-Groups"
)

// maxNarrowEntries bounds the entries one scoped URL or narrowing header may list.
const maxNarrowEntries = 64

// narrowing is what a request selects of the servers its caller may use.
type narrowing struct {
	// scope is the server names the request is narrowed to; nil when nothing narrows it (an
	// empty non-nil scope selects nothing).
	scope []string
	// url is the scoped URL's selection, joined: a legacy session is bound to it.
	url string
	// single is true when the scoped URL names exactly one server (not a group).
	single bool
}

// narrow computes the request's narrowing from the scoped URL segment ("" when unscoped) and
// the X-Mcp-Servers and X-Mcp-Access-Groups headers. Every source narrows and none grants:
// the URL's servers, intersected with the union of the headers' servers when either header is
// present (a blank header is absent). An entry of the URL that names nothing is an error (404); a header entry that names
// nothing selects nothing. bad is the offending URL entry.
func (h *MCP) narrow(r *http.Request, segment string, scoped bool) (n narrowing, bad string, ok bool) {
	if scoped {
		entries := splitList(segment)
		if len(entries) == 0 || len(entries) > maxNarrowEntries {
			return n, segment, false
		}
		n.scope = []string{}
		for _, e := range entries {
			servers, group, found := h.expand(e)
			if !found {
				return n, e, false
			}
			n.single = len(entries) == 1 && !group
			n.scope = union(n.scope, servers)
		}
		n.url = strings.Join(n.scope, ",")
	}
	var fromHeaders []string
	present := false
	for _, hdr := range [...]string{headerMCPServers, headerMCPAccessGroups} {
		values := r.Header.Values(hdr)
		if len(values) == 0 {
			continue // absent: nothing to split
		}
		entries := splitList(strings.Join(values, ","))
		if len(entries) == 0 {
			continue // absent or blank: no narrowing
		}
		present = true
		fromHeaders = union(fromHeaders, nil)
		for i, e := range entries {
			if i == maxNarrowEntries {
				break
			}
			if servers, group, found := h.expand(e); found && (group || hdr == headerMCPServers) {
				fromHeaders = union(fromHeaders, servers)
			}
		}
	}
	switch {
	case !present:
	case n.scope == nil:
		n.scope = fromHeaders
	default:
		n.scope = slices.DeleteFunc(n.scope, func(s string) bool { return !slices.Contains(fromHeaders, s) })
	}
	return n, "", true
}

// expand resolves one narrowing entry through the configured Expand (or Resolve alone).
func (h *MCP) expand(entry string) (servers []string, group, ok bool) {
	if h.cfg.Expand != nil {
		return h.cfg.Expand(entry)
	}
	name, ok := h.cfg.Resolve(entry)
	if !ok {
		return nil, false, false
	}
	return []string{name}, false, true
}

// splitList splits a comma-separated list, trimming spaces and dropping empty items.
func splitList(s string) []string {
	var out []string
	for _, e := range strings.Split(s, ",") {
		if e = strings.TrimSpace(e); e != "" {
			out = append(out, e)
		}
	}
	return out
}

// union appends to set the items of add it does not hold; a nil set becomes non-nil.
func union(set, add []string) []string {
	if set == nil {
		set = []string{}
	}
	for _, s := range add {
		if !slices.Contains(set, s) {
			set = append(set, s)
		}
	}
	return set
}
