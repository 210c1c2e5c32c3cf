package policy

import (
	"reflect"
	"testing"

	"github.com/mcpgw/mcpgw/internal/identity"
)

// levels builds a store-key caller: its own lists plus the given grants.
func levels(servers []string, grants ...identity.Grant) *identity.Caller {
	return &identity.Caller{KeyHash: "k", Servers: servers, Grants: grants}
}

func team(servers ...string) identity.Grant {
	return identity.Grant{Level: identity.LevelTeam, Servers: servers}
}

func org(servers ...string) identity.Grant {
	return identity.Grant{Level: identity.LevelOrganization, Servers: servers}
}

// TestLevelsVisible is the rule table for combining a key's lists with its team, user, end user
// and organisation: one row per documented rule (LiteLLM's mcp_control and access-inheritance
// docs) and per permission bug LiteLLM's users reported.
func TestLevelsVisible(t *testing.T) {
	all := []string{"alpha", "beta", "gamma", "public", "delta"}
	tests := []struct {
		name   string
		opts   Options
		caller *identity.Caller
		want   []string
	}{
		{"no lists anywhere: every server", Options{}, levels(nil, team(), org()), all},
		{"key and team both list: intersection", Options{}, levels([]string{"alpha", "beta"}, team("beta", "gamma")), []string{"beta", "public"}},
		{"empty key list inherits the team's", Options{}, levels(nil, team("gamma")), []string{"gamma", "public"}},
		{"empty team list restricts nothing", Options{}, levels([]string{"delta"}, team()), []string{"public", "delta"}},
		{"require_key_mcp_access_defined: empty key list gets no server", Options{RequireKeyAccessDefined: true},
			levels(nil, team("gamma")), []string{"public"}},
		{"require_key_mcp_access_defined: the team is a ceiling", Options{RequireKeyAccessDefined: true},
			levels([]string{"gamma", "alpha"}, team("gamma")), []string{"gamma", "public"}},
		{"organisation is a ceiling over the key", Options{}, levels([]string{"alpha", "beta"}, org("beta")), []string{"beta", "public"}},
		{"organisation is a ceiling over the team's inherited list", Options{}, levels(nil, team("alpha", "beta"), org("alpha")), []string{"alpha", "public"}},
		{"user level restricts", Options{}, levels(nil, identity.Grant{Level: identity.LevelUser, Servers: []string{"delta"}}), []string{"public", "delta"}},
		{"end user level restricts", Options{}, levels([]string{"alpha", "delta"}, identity.Grant{Level: identity.LevelEndUser, Servers: []string{"delta"}}), []string{"public", "delta"}},
		{"end user without lists restricts nothing", Options{}, levels([]string{"alpha"}, identity.Grant{Level: identity.LevelEndUser}), []string{"alpha", "public"}},
		{"require_end_user_mcp_access_defined: end user without lists gets no server", Options{RequireEndUserAccessDefined: true},
			levels([]string{"alpha"}, identity.Grant{Level: identity.LevelEndUser}), []string{"public"}},
		{"require_end_user_mcp_access_defined: no end user, no effect", Options{RequireEndUserAccessDefined: true},
			levels([]string{"alpha"}, team()), []string{"alpha", "public"}},
		{"no-mcp-servers on the key overrides the team", Options{}, levels([]string{NoServers}, team("alpha")), nil},
		{"no-mcp-servers on the team overrides the key", Options{}, levels([]string{"alpha"}, team(NoServers)), nil},
		{"no-mcp-servers on the organisation denies allow_all_keys too", Options{}, levels(nil, org(NoServers)), nil},
		{"all-proxy-mcpservers on the team grants every server the key lists", Options{}, levels([]string{"beta"}, team(AllServers)), []string{"beta", "public"}},
		{"all-proxy-mcpservers on the team, empty key: every server", Options{}, levels(nil, team(AllServers)), all},
		{"all-proxy-mcpservers on the key is still capped by the team", Options{}, levels([]string{AllServers}, team("gamma")), []string{"gamma", "public"}},
		{"team access group grants its servers", Options{}, levels(nil, identity.Grant{Level: identity.LevelTeam, AccessGroups: []string{"ops"}}), []string{"beta", "gamma", "public"}},
		{"key access group intersected with team servers", Options{}, levels(nil, team("alpha", "gamma"), identity.Grant{Level: identity.LevelUser, AccessGroups: []string{"dev"}}), []string{"alpha", "public"}},
		{"key server list naming a group, team listing one member", Options{}, levels([]string{"ops"}, team("beta")), []string{"beta", "public"}},
		{"allow_all_keys visible despite disjoint lists", Options{}, levels([]string{"alpha"}, team("beta"), org("gamma")), []string{"public"}},
		{"mcp_allow_all_keys_respects_mcp_scope: a scoped key does not get it", Options{AllowAllKeysRespectsScope: true},
			levels([]string{"alpha"}), []string{"alpha"}},
		{"mcp_allow_all_keys_respects_mcp_scope: a key listing it gets it", Options{AllowAllKeysRespectsScope: true},
			levels([]string{"alpha", "public"}), []string{"alpha", "public"}},
		{"mcp_allow_all_keys_respects_mcp_scope: an unscoped key gets it", Options{AllowAllKeysRespectsScope: true},
			levels(nil, team("alpha")), []string{"alpha", "public"}},
		{"#21954: tool permissions of the team never grant a server", Options{},
			levels([]string{"alpha"}, identity.Grant{Level: identity.LevelTeam, Servers: []string{"alpha"}, ToolPermissions: map[string][]string{"gamma": {"read"}}}),
			[]string{"alpha", "public"}},
		{"#33397: tool permissions on a key with no server list do not narrow to those servers or widen the team", Options{},
			&identity.Caller{ToolPermissions: map[string][]string{"delta": {"ls"}}, Grants: []identity.Grant{team("alpha")}},
			[]string{"alpha", "public"}},
		{"master ignores every level", Options{RequireKeyAccessDefined: true},
			&identity.Caller{IsMaster: true, Grants: []identity.Grant{team(NoServers)}}, all},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := New(fixture(), tt.opts)
			if got := p.Visible(tt.caller, nil); !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("Visible = %v, want %v", got, tt.want)
			}
			// A tool on a server the levels hide is never allowed, whatever the tool lists say.
			for _, s := range all {
				visible := false
				for _, w := range tt.want {
					visible = visible || w == s
				}
				if !visible && p.ToolAllowed(tt.caller, s, "read") {
					t.Errorf("ToolAllowed(%s, read) on a hidden server", s)
				}
			}
		})
	}
}

// TestLevelsToolAllowed: every level's mcp_tool_permissions and blocked_tools apply.
func TestLevelsToolAllowed(t *testing.T) {
	p := New(fixture(), Options{Separator: "-"})
	tp := func(level, server string, tools ...string) identity.Grant {
		return identity.Grant{Level: level, ToolPermissions: map[string][]string{server: tools}}
	}
	tests := []struct {
		name   string
		caller *identity.Caller
		server string
		tool   string
		want   bool
	}{
		{"team tool list allows", levels(nil, tp(identity.LevelTeam, "alpha", "t1")), "alpha", "t1", true},
		{"team tool list restricts an unrestricted key", levels(nil, tp(identity.LevelTeam, "alpha", "t1")), "alpha", "t2", false},
		{"key and team tool lists intersect", &identity.Caller{ToolPermissions: map[string][]string{"alpha": {"t1", "t2"}},
			Grants: []identity.Grant{tp(identity.LevelTeam, "alpha-id", "t2", "t3")}}, "alpha", "t1", false},
		{"key and team tool lists: in both", &identity.Caller{ToolPermissions: map[string][]string{"alpha": {"t1", "t2"}},
			Grants: []identity.Grant{tp(identity.LevelTeam, "alpha-id", "t2", "t3")}}, "alpha", "t2", true},
		{"organisation tool list is a ceiling", levels(nil, tp(identity.LevelOrganization, "delta", "ls")), "delta", "cat", false},
		{"end user tool list restricts", levels(nil, tp(identity.LevelEndUser, "beta", "x")), "beta", "y", false},
		{"another server's tool list restricts nothing here", levels(nil, tp(identity.LevelTeam, "beta", "x")), "alpha", "y", true},
		{"blocked_tools on the key, bare name", &identity.Caller{BlockedTools: []string{"t1"}}, "alpha", "t1", false},
		{"blocked_tools bare name applies on every server", &identity.Caller{BlockedTools: []string{"t1"}}, "delta", "t1", false},
		{"blocked_tools on the team, prefixed by alias", levels(nil, identity.Grant{Level: identity.LevelTeam, BlockedTools: []string{"Alpha-t1"}}), "alpha", "t1", false},
		{"blocked_tools prefixed by name", levels(nil, identity.Grant{Level: identity.LevelOrganization, BlockedTools: []string{"alpha-t1"}}), "alpha", "t1", false},
		{"blocked_tools prefixed by another server", &identity.Caller{BlockedTools: []string{"beta-t1"}}, "alpha", "t1", true},
		{"blocked_tools beats every allow list", &identity.Caller{ToolPermissions: map[string][]string{"alpha": {"t1"}}, BlockedTools: []string{"t1"}}, "alpha", "t1", false},
		{"blocked_tools leaves other tools alone", &identity.Caller{BlockedTools: []string{"t1"}}, "alpha", "t2", true},
		{"#33397: a tool permission for a server the team denies does not reach it",
			&identity.Caller{ToolPermissions: map[string][]string{"gamma": {"read"}}, Grants: []identity.Grant{team("alpha")}}, "gamma", "read", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := p.ToolAllowed(tt.caller, tt.server, tt.tool); got != tt.want {
				t.Fatalf("ToolAllowed(%s, %s) = %v, want %v", tt.server, tt.tool, got, tt.want)
			}
		})
	}
}
