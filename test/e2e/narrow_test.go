package e2e

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/mcpgw/mcpgw/internal/testpeers"
)

// serversOf returns the server prefixes of the tools in a tools/list answer, sorted, once each.
func serversOf(body map[string]any) []string {
	var out []string
	for _, name := range toolsOf(body) {
		prefix, _, _ := strings.Cut(name, "-")
		if !slices.Contains(out, prefix) {
			out = append(out, prefix)
		}
	}
	slices.Sort(out)
	return out
}

// TestNarrowingNeverWidens: a scoped URL (servers, access groups, mcp_aliases, comma lists),
// X-Mcp-Servers and X-Mcp-Access-Groups each narrow what the caller sees and together
// intersect; none of them grants what the caller's permissions do not.
func TestNarrowingNeverWidens(t *testing.T) {
	fx := testpeers.StartGoFixtureHTTP(t, true)
	gw := startGateway(t, fmt.Sprintf(`
general_settings:
  master_key: %[1]s
  mcp_scoped_prefix: false
litellm_settings:
  mcp_aliases:
    gh: b
mcp_servers:
  a: {url: %[2]s, access_groups: [g]}
  b: {url: %[2]s, access_groups: [g]}
  c: {url: %[2]s}
`, testKey, fx), nil)
	list := `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{` + modernMeta + `}}`
	see := func(path string, extra map[string]string) (int, []string) {
		h := modernHeaders("tools/list", "")
		for k, v := range extra {
			h[k] = v
		}
		status, _, body := rpc(t, gw.url+path, h, list)
		return status, serversOf(body)
	}
	tests := []struct {
		name   string
		path   string
		header map[string]string
		want   []string
	}{
		{"unscoped", "/mcp", nil, []string{"a", "b", "c"}},
		{"comma list in the URL", "/a,c/mcp", nil, []string{"a", "c"}},
		{"access group in the URL", "/g/mcp", nil, []string{"a", "b"}},
		{"x-mcp-servers", "/mcp", map[string]string{"X-Mcp-Servers": "c"}, []string{"c"}},
		{"x-mcp-servers naming a group and a server", "/mcp", map[string]string{"X-Mcp-Servers": "g, c"}, []string{"a", "b", "c"}},
		{"x-mcp-servers with an unknown name selects nothing more", "/mcp", map[string]string{"X-Mcp-Servers": "nope,a"}, []string{"a"}},
		{"x-mcp-servers naming only unknowns selects nothing", "/mcp", map[string]string{"X-Mcp-Servers": "nope"}, nil},
		{"x-mcp-access-groups", "/mcp", map[string]string{"X-Mcp-Access-Groups": "g"}, []string{"a", "b"}},
		{"x-mcp-access-groups ignores server names", "/mcp", map[string]string{"X-Mcp-Access-Groups": "c"}, nil},
		{"both headers add up", "/mcp", map[string]string{"X-Mcp-Servers": "c", "X-Mcp-Access-Groups": "g"}, []string{"a", "b", "c"}},
		{"URL and header intersect", "/a,b/mcp", map[string]string{"X-Mcp-Servers": "b,c"}, []string{"b"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, got := see(tt.path, tt.header)
			if status != 200 || !slices.Equal(got, tt.want) {
				t.Fatalf("%s %v: %d %v, want %v", tt.path, tt.header, status, got, tt.want)
			}
		})
	}
	// One server selected by the URL (by name or mcp_aliases) serves bare names; the header
	// narrowing it to a server outside the URL leaves nothing.
	for _, path := range []string{"/a/mcp", "/gh/mcp"} {
		_, _, body := rpc(t, gw.url+path, modernHeaders("tools/list", ""), list)
		names := toolsOf(body)
		if len(names) == 0 || strings.HasPrefix(names[0], "a-") || strings.HasPrefix(names[0], "b-") {
			t.Fatalf("%s served %v, want bare names", path, names)
		}
	}
	h := modernHeaders("tools/list", "")
	h["X-Mcp-Servers"] = "c"
	if _, _, body := rpc(t, gw.url+"/a/mcp", h, list); len(toolsOf(body)) != 0 {
		t.Fatalf("/a/mcp with x-mcp-servers: c served %v", toolsOf(body))
	}
	_, _, alone := rpc(t, gw.url+"/a/mcp", modernHeaders("tools/list", ""), list)
	h["X-Mcp-Servers"] = "a,c" // a header never widens the URL's one server
	if _, _, body := rpc(t, gw.url+"/a/mcp", h, list); !slices.Equal(toolsOf(body), toolsOf(alone)) {
		t.Fatalf("/a/mcp with x-mcp-servers: a,c served %v, want %v", toolsOf(body), toolsOf(alone))
	}
	for _, path := range []string{"/nope/mcp", "/a,nope/mcp", "/,/mcp"} {
		if status, _ := see(path, nil); status != 404 {
			t.Fatalf("%s: %d, want 404", path, status)
		}
	}
}
