package auth

import (
	"iter"
	"net/http"
	"sort"
	"strings"

	"golang.org/x/net/http/httpguts"
)

// AddressedPrefix begins every per-server header a caller addresses to one
// upstream: x-mcp-{server}-{header} (LiteLLM's "MCP server specific auth").
const AddressedPrefix = "x-mcp-"

// HeaderMCPAuth is LiteLLM's deprecated x-mcp-auth: one credential for
// whichever server serves the request, addressed to none.
const HeaderMCPAuth = "X-Mcp-Auth"

// reservedAddressed are x-mcp-* request headers of the gateway itself, never
// addressed to a server whatever servers are called.
var reservedAddressed = []string{"x-mcp-servers", "x-mcp-access-groups", "x-mcp-auth"}

// ownedByTransport are header names an addressed header may not set: the
// upstream transport owns them (framing, session, negotiation).
var ownedByTransport = map[string]bool{
	"Host": true, "Connection": true, "Content-Length": true, "Content-Type": true,
	"Transfer-Encoding": true, "Te": true, "Trailer": true, "Upgrade": true,
	"Keep-Alive": true, "Proxy-Connection": true, "Accept": true,
	"Mcp-Session-Id": true, "Mcp-Protocol-Version": true, "Last-Event-Id": true,
}

// Addressed routes a caller's x-mcp-{server}-{header} headers to the one
// server each names. It is built once per server set and is safe for
// concurrent use.
type Addressed struct {
	names []addressee // longest name first
}

// addressee is one name a server answers to, lower-cased.
type addressee struct {
	name, server string
}

// NewAddressed returns the router for servers, given as server name → the
// other names it answers to (its alias). Names match case-insensitively; a
// name two servers claim belongs to the first claimant in server-name order,
// a server's own name winning over another's alias.
func NewAddressed(servers map[string][]string) *Addressed {
	a := &Addressed{}
	owner := map[string]string{}
	order := make([]string, 0, len(servers))
	for s := range servers {
		order = append(order, s)
	}
	sort.Strings(order)
	for _, s := range order { // own names first
		if n := strings.ToLower(s); n != "" && owner[n] == "" {
			owner[n] = s
		}
	}
	for _, s := range order {
		for _, alias := range servers[s] {
			if n := strings.ToLower(alias); n != "" && owner[n] == "" {
				owner[n] = s
			}
		}
	}
	for n, s := range owner {
		a.names = append(a.names, addressee{name: n, server: s})
	}
	sort.Slice(a.names, func(i, j int) bool {
		if len(a.names[i].name) != len(a.names[j].name) {
			return len(a.names[i].name) > len(a.names[j].name)
		}
		return a.names[i].name < a.names[j].name
	})
	return a
}

// Match says which server a request header is addressed to and the header
// it becomes there (canonical): x-mcp-github-authorization is Authorization
// for github. The longest server name that fits wins, so with servers "git"
// and "git-hub", x-mcp-git-hub-authorization goes to git-hub. ok is false
// for any other header, for the gateway's own x-mcp-* headers, for a header
// naming no known server, and for one that would set a header the upstream
// transport owns (Host, Content-Type, Mcp-Session-Id, ...).
func (a *Addressed) Match(header string) (server, name string, ok bool) {
	if a == nil || len(header) <= len(AddressedPrefix) || !strings.EqualFold(header[:len(AddressedPrefix)], AddressedPrefix) {
		return "", "", false
	}
	lower := strings.ToLower(header)
	for _, r := range reservedAddressed {
		if lower == r {
			return "", "", false
		}
	}
	rest := lower[len(AddressedPrefix):]
	for _, n := range a.names {
		tail, found := strings.CutPrefix(rest, n.name)
		if !found || len(tail) < 2 || tail[0] != '-' {
			continue
		}
		name = http.CanonicalHeaderKey(tail[1:])
		if !httpguts.ValidHeaderFieldName(name) || ownedByTransport[name] {
			return "", "", false
		}
		return n.server, name, true
	}
	return "", "", false
}

// For returns the headers h yields that are addressed to server, under
// the names they take there; nil when none is.
func (a *Addressed) For(h iter.Seq2[string, []string], server string) map[string][]string {
	var out map[string][]string
	for k, v := range h {
		s, name, ok := a.Match(k)
		if !ok || s != server || len(v) == 0 {
			continue
		}
		if out == nil {
			out = map[string][]string{}
		}
		out[name] = v
	}
	return out
}

// IsAddressed reports whether header is addressed to some server, so that it
// is never forwarded under its own name (an extra_headers entry naming it).
func (a *Addressed) IsAddressed(header string) bool {
	_, _, ok := a.Match(header)
	return ok
}
