package auth

import (
	"maps"
	"reflect"
	"testing"
)

func TestAddressedMatch(t *testing.T) {
	a := NewAddressed(map[string][]string{
		"github":     {"GH"},
		"git":        nil,
		"git-hub":    {"hub"},
		"Zapier":     {""},
		"access":     nil,
		"shadow":     {"github"}, // another server's own name: the owner keeps it
		"CaseServer": nil,
	})
	tests := []struct {
		header, server, name string
	}{
		{"x-mcp-github-authorization", "github", "Authorization"},
		{"X-MCP-GITHUB-AUTHORIZATION", "github", "Authorization"},
		{"X-Mcp-Gh-X-Api-Key", "github", "X-Api-Key"},
		{"x-mcp-git-authorization", "git", "Authorization"},
		{"x-mcp-git-hub-authorization", "git-hub", "Authorization"}, // longest name wins
		{"x-mcp-hub-x-tenant", "git-hub", "X-Tenant"},
		{"x-mcp-zapier-x-api-key", "Zapier", "X-Api-Key"},
		{"x-mcp-caseserver-authorization", "CaseServer", "Authorization"},
		{"x-mcp-access-token", "access", "Token"},
		// Not addressed to anyone.
		{"x-mcp-access-groups", "", ""},
		{"x-mcp-servers", "", ""},
		{"x-mcp-auth", "", ""},
		{"x-mcp-github", "", ""},
		{"x-mcp-github-", "", ""},
		{"x-mcp-nosuch-authorization", "", ""},
		{"x-mcp-githubx-authorization", "", ""},
		{"x-mcp-", "", ""},
		{"authorization", "", ""},
		{"x-mcpgithub-authorization", "", ""},
		// Headers the transport owns are never set by a caller.
		{"x-mcp-github-host", "", ""},
		{"x-mcp-github-content-type", "", ""},
		{"x-mcp-github-mcp-session-id", "", ""},
		{"x-mcp-github-mcp-protocol-version", "", ""},
		{"x-mcp-github-transfer-encoding", "", ""},
		{"x-mcp-github-bad header", "", ""},
	}
	for _, tt := range tests {
		server, name, ok := a.Match(tt.header)
		if server != tt.server || name != tt.name || ok != (tt.server != "") {
			t.Errorf("Match(%q) = %q %q %v, want %q %q", tt.header, server, name, ok, tt.server, tt.name)
		}
	}
}

func TestAddressedFor(t *testing.T) {
	a := NewAddressed(map[string][]string{"github": nil, "git": nil, "jira": {"atlassian"}})
	h := map[string][]string{
		"Authorization":              {"Bearer gateway-key"},
		"X-Mcp-Github-Authorization": {"Bearer gh"},
		"X-Mcp-Git-Authorization":    {"Bearer git"},
		"X-Mcp-Atlassian-X-Api-Key":  {"jira-key"},
		"X-Mcp-Jira-Authorization":   {"Basic amlyYTpw"},
		"X-Mcp-Servers":              {"github"},
		"X-Mcp-Github-Empty":         {},
	}
	want := map[string]map[string][]string{
		"github": {"Authorization": {"Bearer gh"}},
		"git":    {"Authorization": {"Bearer git"}},
		"jira":   {"X-Api-Key": {"jira-key"}, "Authorization": {"Basic amlyYTpw"}},
		"other":  nil,
	}
	for server, w := range want {
		if got := a.For(maps.All(h), server); !reflect.DeepEqual(got, w) {
			t.Errorf("For(%s) = %v, want %v", server, got, w)
		}
	}
	if !a.IsAddressed("x-mcp-github-x-tenant") || a.IsAddressed("X-Tenant") {
		t.Error("IsAddressed")
	}
	var none *Addressed
	if none.For(maps.All(h), "github") != nil || none.IsAddressed("x-mcp-github-authorization") {
		t.Error("a nil router addresses nothing")
	}
}
