package policy

import (
	"reflect"
	"testing"

	"github.com/mcpgw/mcpgw/internal/identity"
)

// fixture, in config order: alpha, beta, gamma, public, delta.
func fixture() []Server {
	return []Server{
		{Name: "alpha", ID: "alpha-id", Alias: "Alpha", AccessGroups: []string{"dev"}},
		{Name: "beta", ID: "beta", AccessGroups: []string{"dev", "ops"}},
		{Name: "gamma", ID: "gamma-id", AccessGroups: []string{"ops"},
			AllowedTools: []string{"read", "write"}, DisallowedTools: []string{"write", "drop"}},
		{Name: "public", ID: "public", AllowAllKeys: true},
		{Name: "delta", ID: "delta-id", Alias: "D", DisallowedTools: []string{"rm"}},
	}
}

func TestVisible(t *testing.T) {
	p := New(fixture(), Options{})
	all := []string{"alpha", "beta", "gamma", "public", "delta"}
	master := &identity.Caller{IsMaster: true, Role: identity.RoleProxyAdmin}
	tests := []struct {
		name   string
		caller *identity.Caller
		scope  []string
		want   []string
	}{
		{"nil caller sees nothing", nil, nil, nil},
		{"master sees everything", master, nil, all},
		{"master ignores a deny sentinel", &identity.Caller{IsMaster: true, Servers: []string{NoServers}}, nil, all},
		{"no lists: every server", &identity.Caller{UserID: "u"}, nil, all},
		{"empty lists are unset", &identity.Caller{Servers: []string{}, AccessGroups: []string{}}, nil, all},
		{"only tool permissions: every server", &identity.Caller{ToolPermissions: map[string][]string{"alpha": {"x"}}}, nil, all},
		{"server by name", &identity.Caller{Servers: []string{"alpha"}}, nil, []string{"alpha", "public"}},
		{"server by id", &identity.Caller{Servers: []string{"gamma-id"}}, nil, []string{"gamma", "public"}},
		{"server by alias", &identity.Caller{Servers: []string{"D"}}, nil, []string{"public", "delta"}},
		{"config order kept", &identity.Caller{Servers: []string{"delta", "alpha"}}, nil, []string{"alpha", "public", "delta"}},
		{"servers entry naming an access group", &identity.Caller{Servers: []string{"ops"}}, nil, []string{"beta", "gamma", "public"}},
		{"access groups", &identity.Caller{AccessGroups: []string{"dev"}}, nil, []string{"alpha", "beta", "public"}},
		{"access group entries do not match server names", &identity.Caller{AccessGroups: []string{"alpha"}}, nil, []string{"public"}},
		{"union of servers and groups", &identity.Caller{Servers: []string{"delta"}, AccessGroups: []string{"ops"}}, nil, []string{"beta", "gamma", "public", "delta"}},
		{"unknown server grants nothing but allow_all_keys", &identity.Caller{Servers: []string{"nope"}}, nil, []string{"public"}},
		{"empty entry grants nothing", &identity.Caller{Servers: []string{""}}, nil, []string{"public"}},
		{"no-mcp-servers denies everything", &identity.Caller{Servers: []string{NoServers}}, nil, nil},
		{"no-mcp-servers overrides servers and groups", &identity.Caller{Servers: []string{"alpha", NoServers}, AccessGroups: []string{"ops"}}, nil, nil},
		{"no-mcp-servers in access groups", &identity.Caller{AccessGroups: []string{NoServers}}, nil, nil},
		{"all-proxy-mcpservers grants all", &identity.Caller{Servers: []string{AllServers}}, nil, all},
		{"all-proxy-mcpservers with deny", &identity.Caller{Servers: []string{AllServers, NoServers}}, nil, nil},
		{"all-proxy-mcpservers only in servers", &identity.Caller{AccessGroups: []string{AllServers}}, nil, []string{"public"}},
		{"tool permission keys do not grant servers", &identity.Caller{Servers: []string{"alpha"},
			ToolPermissions: map[string][]string{"gamma-id": {"read"}, "delta": {"x"}}}, nil, []string{"alpha", "public"}},
		{"scope by name", &identity.Caller{}, []string{"alpha"}, []string{"alpha"}},
		{"scope by id", &identity.Caller{}, []string{"gamma-id"}, []string{"gamma"}},
		{"scope by alias", &identity.Caller{}, []string{"D"}, []string{"delta"}},
		{"scope by access group", &identity.Caller{}, []string{"ops"}, []string{"beta", "gamma"}},
		{"scope mixed with unknown", &identity.Caller{}, []string{"nope", "delta", "dev"}, []string{"alpha", "beta", "delta"}},
		{"scope unknown only", &identity.Caller{}, []string{"nope"}, nil},
		{"scope empty non-nil", &identity.Caller{}, []string{}, nil},
		{"scope never grants", &identity.Caller{Servers: []string{"alpha"}}, []string{"gamma"}, nil},
		{"scope narrows grants", &identity.Caller{AccessGroups: []string{"dev"}}, []string{"beta", "gamma"}, []string{"beta"}},
		{"scope keeps allow_all_keys", &identity.Caller{Servers: []string{"alpha"}}, []string{"public"}, []string{"public"}},
		{"scope cannot lift a deny", &identity.Caller{Servers: []string{NoServers}}, []string{"public", "alpha"}, nil},
		{"scope cannot reach tool-permission servers", &identity.Caller{Servers: []string{"alpha"},
			ToolPermissions: map[string][]string{"gamma": {"read"}}}, []string{"gamma"}, nil},
		{"master with scope", master, []string{"Alpha", "delta-id"}, []string{"alpha", "delta"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := p.Visible(tt.caller, tt.scope); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Visible = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestToolAllowed(t *testing.T) {
	p := New(fixture(), Options{})
	master := &identity.Caller{IsMaster: true}
	open := &identity.Caller{}
	perms := func(m map[string][]string) *identity.Caller { return &identity.Caller{ToolPermissions: m} }
	tests := []struct {
		name   string
		caller *identity.Caller
		server string
		tool   string
		want   bool
	}{
		{"nil caller", nil, "alpha", "x", false},
		{"master", master, "alpha", "anything", true},
		{"unrestricted", open, "alpha", "anything", true},
		{"unknown server", master, "nope", "x", false},
		{"empty tool", master, "alpha", "", false},
		{"server by id", open, "gamma-id", "read", true},
		{"server by alias", open, "D", "ls", true},
		{"allowed_tools lists it", open, "gamma", "read", true},
		{"allowed_tools does not list it", open, "gamma", "list", false},
		{"disallowed wins over allowed", open, "gamma", "write", false},
		{"disallowed, not in allowed", open, "gamma", "drop", false},
		{"disallowed without allowed", open, "delta", "rm", false},
		{"not disallowed, no allowed list", open, "delta", "ls", true},
		{"tool names are case-sensitive", open, "gamma", "Read", false},
		{"master obeys server tool lists", master, "gamma", "write", false},
		{"server not visible", &identity.Caller{Servers: []string{"alpha"}}, "gamma", "read", false},
		{"allow_all_keys server", &identity.Caller{Servers: []string{"alpha"}}, "public", "x", true},
		{"deny sentinel", &identity.Caller{Servers: []string{NoServers}}, "public", "x", false},
		{"tool permission keys do not grant", &identity.Caller{Servers: []string{"alpha"},
			ToolPermissions: map[string][]string{"gamma-id": {"read"}, "gamma": {"read"}}}, "gamma", "read", false},
		{"permission by id allows", perms(map[string][]string{"alpha-id": {"t1"}}), "alpha", "t1", true},
		{"permission by id restricts", perms(map[string][]string{"alpha-id": {"t1"}}), "alpha", "t2", false},
		{"permission by name allows", perms(map[string][]string{"alpha": {"t1"}}), "alpha", "t1", true},
		{"permission by name restricts", perms(map[string][]string{"alpha": {"t1"}}), "Alpha", "t2", false},
		{"permission keyed by alias is not a key", perms(map[string][]string{"Alpha": {"t1"}}), "alpha", "t2", true},
		{"id and name both apply: in both", perms(map[string][]string{"alpha-id": {"t1", "t2"}, "alpha": {"t2", "t3"}}), "alpha", "t2", true},
		{"id and name both apply: id only", perms(map[string][]string{"alpha-id": {"t1", "t2"}, "alpha": {"t2", "t3"}}), "alpha", "t1", false},
		{"id and name both apply: name only", perms(map[string][]string{"alpha-id": {"t1", "t2"}, "alpha": {"t2", "t3"}}), "alpha", "t3", false},
		{"empty entry restricts nothing", perms(map[string][]string{"alpha": {}}), "alpha", "t9", true},
		{"other server's entry", perms(map[string][]string{"beta": {"x"}}), "alpha", "t9", true},
		{"id equals name", perms(map[string][]string{"beta": {"x"}}), "beta", "y", false},
		{"permission cannot lift disallowed", perms(map[string][]string{"gamma": {"write"}}), "gamma", "write", false},
		{"permission and allowed_tools intersect", perms(map[string][]string{"gamma": {"read", "list"}}), "gamma", "list", false},
		{"a master caller's own tool permissions still apply", &identity.Caller{IsMaster: true, ToolPermissions: map[string][]string{"alpha": {"t1"}}}, "alpha", "t2", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := p.ToolAllowed(tt.caller, tt.server, tt.tool); got != tt.want {
				t.Errorf("ToolAllowed(%q, %q) = %v, want %v", tt.server, tt.tool, got, tt.want)
			}
		})
	}
}

func TestLookup(t *testing.T) {
	servers := append(fixture(),
		Server{Name: "x", ID: "x-id"},
		Server{Name: "y", ID: "x", Alias: "x-id"}, // id collides with x's name, alias with x's id
	)
	p := New(servers, Options{})
	tests := []struct {
		key      string
		wantName string
		wantOK   bool
	}{
		{"alpha", "alpha", true},
		{"alpha-id", "alpha", true},
		{"Alpha", "alpha", true},
		{"ALPHA", "", false},
		{"D", "delta", true},
		{"ops", "", false}, // access groups are not servers
		{"nope", "", false},
		{"", "", false},
		{"x", "x", true},    // a name beats another server's id
		{"x-id", "x", true}, // an id beats another server's alias
		{"y", "y", true},
	}
	for _, tt := range tests {
		t.Run(tt.key, func(t *testing.T) {
			s, ok := p.Lookup(tt.key)
			if ok != tt.wantOK || s.Name != tt.wantName {
				t.Errorf("Lookup(%q) = (%q, %v), want (%q, %v)", tt.key, s.Name, ok, tt.wantName, tt.wantOK)
			}
		})
	}
}

func TestImmutable(t *testing.T) {
	servers := fixture()
	p := New(servers, Options{})
	servers[0].Name = "changed"
	servers[0].AccessGroups[0] = "changed"
	servers[2].DisallowedTools[0] = "changed"
	s, _ := p.Lookup("gamma")
	s.DisallowedTools[0] = "changed"
	s.AllowedTools[0] = "changed"

	if got := p.Visible(&identity.Caller{AccessGroups: []string{"dev"}}, nil); !reflect.DeepEqual(got, []string{"alpha", "beta", "public"}) {
		t.Errorf("Visible after mutating inputs = %v", got)
	}
	if p.ToolAllowed(&identity.Caller{}, "gamma", "write") || !p.ToolAllowed(&identity.Caller{}, "gamma", "read") {
		t.Error("ToolAllowed changed after mutating inputs or a Lookup result")
	}
}

func TestEmptyPolicy(t *testing.T) {
	p := New(nil, Options{})
	if got := p.Visible(&identity.Caller{IsMaster: true}, nil); got != nil {
		t.Errorf("Visible = %v", got)
	}
	if p.ToolAllowed(&identity.Caller{IsMaster: true}, "a", "b") {
		t.Error("ToolAllowed on an empty policy")
	}
}

// TestScopeSelectsOneServer: a scope entry selects the one server it names,
// with the lookup's precedence; another server whose id or alias equals that
// name is not pulled in with it.
func TestScopeSelectsOneServer(t *testing.T) {
	p := New([]Server{
		{Name: "b", ID: "bid"},
		{Name: "a", ID: "b"},
		{Name: "c", ID: "c", Alias: "bid"},
		{Name: "d", ID: "d", Alias: "a"},
	}, Options{})
	for _, tc := range []struct {
		scope string
		want  []string
	}{
		{"b", []string{"b"}},
		{"bid", []string{"b"}},
		{"a", []string{"a"}},
		{"c", []string{"c"}},
		{"d", []string{"d"}},
	} {
		if got := p.Visible(&identity.Caller{IsMaster: true}, []string{tc.scope}); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("scope %q: Visible = %v, want %v", tc.scope, got, tc.want)
		}
	}
}
