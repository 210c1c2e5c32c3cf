package front

import (
	"net/http"
	"slices"
	"strings"
	"testing"
)

func narrowFixture() *MCP {
	servers := map[string][]string{"a": {"a"}, "b": {"b"}, "alias-b": {"b"}, "g": {"a", "b"}}
	return &MCP{cfg: MCPConfig{Expand: func(e string) ([]string, bool, bool) {
		s, ok := servers[e]
		return s, e == "g", ok
	}}}
}

// FuzzNarrow: whatever the URL segment and headers, narrowing never panics, selects only
// servers that exist, never widens the URL's selection, and lists each server once.
func FuzzNarrow(f *testing.F) {
	for _, seed := range [][3]string{{"a", "", ""}, {"a,b", "b", ""}, {"g", "", "g"}, {"", "a, ,nope", "b"}, {",,", "", ""}} {
		f.Add(seed[0], seed[1], seed[2])
	}
	h := narrowFixture()
	f.Fuzz(func(t *testing.T, segment, servers, groups string) {
		r, _ := http.NewRequest(http.MethodPost, "http://x/mcp", nil)
		if servers != "" {
			r.Header.Set(headerMCPServers, servers)
		}
		if groups != "" {
			r.Header.Set(headerMCPAccessGroups, groups)
		}
		scoped := segment != ""
		n, _, ok := h.narrow(r, segment, scoped)
		if !ok {
			return
		}
		for i, s := range n.scope {
			if s != "a" && s != "b" || slices.Contains(n.scope[:i], s) {
				t.Fatalf("scope %q", n.scope)
			}
			if scoped && !slices.Contains(strings.Split(n.url, ","), s) {
				t.Fatalf("scope %q widens the URL's %q", n.scope, n.url)
			}
		}
		if servers == "" && groups == "" && !scoped && n.scope != nil {
			t.Fatalf("nothing narrows, scope %q", n.scope)
		}
	})
}
