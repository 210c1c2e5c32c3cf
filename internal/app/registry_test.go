package app

import (
	"slices"
	"testing"
	"time"

	"github.com/mcpgw/mcpgw/internal/config"
	"github.com/mcpgw/mcpgw/internal/mcp"
	"github.com/mcpgw/mcpgw/internal/upstream"
)

func TestRegistryResolvePrecedence(t *testing.T) {
	reg := newRegistry([]config.Server{
		{Name: "a", ServerID: "id-a", Alias: "b"},
		{Name: "b", ServerID: "id-b", Alias: "id-a"},
		{Name: "c", ServerID: "a", Alias: "shared"},
		{Name: "d", ServerID: "id-d", Alias: "shared"},
	}, nil)
	tests := []struct {
		key, want string
		ok        bool
	}{
		{"a", "a", true},      // a name wins over c's server_id
		{"b", "b", true},      // a name wins over a's alias
		{"id-a", "a", true},   // a server_id wins over b's alias
		{"id-d", "d", true},   // server_id
		{"shared", "c", true}, // among aliases the earlier server wins
		{"", "", false},       // empty never matches
		{"nope", "", false},   // unknown
		{"ID-A", "", false},   // keys are case-sensitive
	}
	for _, tt := range tests {
		got, ok := reg.resolve(tt.key)
		if got != tt.want || ok != tt.ok {
			t.Errorf("resolve(%q) = %q %v, want %q %v", tt.key, got, ok, tt.want, tt.ok)
		}
	}
}

func TestRegistryViews(t *testing.T) {
	s := config.Server{
		Name: "fs", ServerID: "fs-id", Alias: "Files", URL: "http://127.0.0.1:1/mcp", Transport: config.TransportHTTP,
		AccessGroups: []string{"g"}, AllowAllKeys: true, AllowedTools: []string{"read"}, DisallowedTools: []string{"rm"},
		ExtraHeaders: []string{"X-Team"}, AllowElicitation: true, AuthType: "oauth_delegate",
	}
	reg := newRegistry([]config.Server{s}, nil)
	c := &upstream.Client{}
	clients := map[string]*upstream.Client{"fs": c}

	pol := reg.policyServers()
	if len(pol) != 1 || pol[0].Name != "fs" || pol[0].ID != "fs-id" || pol[0].Alias != "Files" || !pol[0].AllowAllKeys ||
		pol[0].AccessGroups[0] != "g" || pol[0].AllowedTools[0] != "read" || pol[0].DisallowedTools[0] != "rm" {
		t.Errorf("policy view = %+v", pol)
	}
	cat := reg.catalogServers(clients)
	if len(cat) != 1 || cat[0].Name != "fs" || cat[0].Client != c {
		t.Errorf("catalog view = %+v", cat)
	}
	gw := reg.gatewayServers(clients)
	if len(gw) != 1 || gw[0].Name != "fs" || gw[0].ID != "fs-id" || gw[0].Alias != "Files" || gw[0].Client != c ||
		gw[0].ExtraHeaders[0] != "X-Team" || !gw[0].Delegate || !gw[0].AllowElicitation || gw[0].AllowSampling || gw[0].TargetDigest == "" {
		t.Errorf("gateway view = %+v", gw[0])
	}
	if got, ok := reg.server("fs"); !ok || got.ServerID != "fs-id" {
		t.Errorf("server(fs) = %+v %v", got, ok)
	}
	if _, ok := reg.server("fs-id"); ok {
		t.Error("server looks names up only")
	}
}

// TestConnectionIdentity: which changes to a server keep its upstream client.
func TestConnectionIdentity(t *testing.T) {
	base := config.Server{
		Name: "s", ServerID: "s", URL: "https://up.example/mcp", Transport: config.TransportHTTP,
		Command: "", Args: []string{"--a"}, Env: map[string]string{"K": "v"}, ProtocolVersion: "auto",
		AuthType: "bearer_token", AuthValue: "tok", AuthHeaderName: "", StaticHeaders: map[string]string{"X-A": "1"},
		OAuth2Flow: config.OAuth2ClientCredentials, TokenURL: "https://t", ClientID: "cid", ClientSecret: "sec", Scopes: []string{"x"},
		Description: "d", Alias: "al", AccessGroups: []string{"g"}, AllowedTools: []string{"t"}, DisallowedTools: []string{"u"},
		ExtraHeaders: []string{"X-E"}, AllowAllKeys: false, Timeout: 0, Line: 3,
	}
	oauth := base
	oauth.AuthType = "oauth2"
	tests := []struct {
		name string
		from config.Server
		edit func(*config.Server)
		same bool
	}{
		{"unchanged", base, func(*config.Server) {}, true},
		{"description", base, func(s *config.Server) { s.Description = "other" }, true},
		{"server_id", base, func(s *config.Server) { s.ServerID = "other" }, true},
		{"alias", base, func(s *config.Server) { s.Alias = "other" }, true},
		{"access groups", base, func(s *config.Server) { s.AccessGroups = []string{"h"} }, true},
		{"allow all keys", base, func(s *config.Server) { s.AllowAllKeys = true }, true},
		{"allowed tools", base, func(s *config.Server) { s.AllowedTools = nil }, true},
		{"disallowed tools", base, func(s *config.Server) { s.DisallowedTools = []string{"v"} }, true},
		{"extra headers", base, func(s *config.Server) { s.ExtraHeaders = nil }, true},
		{"line in the file", base, func(s *config.Server) { s.Line, s.CommandLine = 9, 10 }, true},
		{"oauth2 settings without oauth2", base, func(s *config.Server) { s.ClientSecret = "other" }, true},
		{"name", base, func(s *config.Server) { s.Name = "t" }, false},
		{"url", base, func(s *config.Server) { s.URL = "https://other.example/mcp" }, false},
		{"transport", base, func(s *config.Server) { s.Transport = config.TransportSSE }, false},
		{"command", base, func(s *config.Server) { s.Command = "srv" }, false},
		{"args", base, func(s *config.Server) { s.Args = []string{"--b"} }, false},
		{"env", base, func(s *config.Server) { s.Env = map[string]string{"K": "w"} }, false},
		{"protocol version", base, func(s *config.Server) { s.ProtocolVersion = "2025-11-25" }, false},
		{"auth type", base, func(s *config.Server) { s.AuthType = "api_key" }, false},
		{"auth value", base, func(s *config.Server) { s.AuthValue = "tok2" }, false},
		{"auth header name", base, func(s *config.Server) { s.AuthHeaderName = "X-Key" }, false},
		{"static headers", base, func(s *config.Server) { s.StaticHeaders = map[string]string{"X-A": "2"} }, false},
		{"allow elicitation", base, func(s *config.Server) { s.AllowElicitation = true }, false},
		{"allow sampling", base, func(s *config.Server) { s.AllowSampling = true }, false},
		{"timeout", base, func(s *config.Server) { s.Timeout = 5 * time.Second }, false},
		{"rpm", base, func(s *config.Server) { s.RPM = 10 }, true},
		{"oauth2 client secret", oauth, func(s *config.Server) { s.ClientSecret = "other" }, false},
		{"oauth2 client id", oauth, func(s *config.Server) { s.ClientID = "other" }, false},
		{"oauth2 token url", oauth, func(s *config.Server) { s.TokenURL = "https://t2" }, false},
		{"oauth2 scopes", oauth, func(s *config.Server) { s.Scopes = []string{"y"} }, false},
	}
	env := Env{ClientTimeout: time.Minute, ListingTimeout: 30 * time.Second, MaxPages: 100}
	info := mcp.Implementation{Name: "mcpgw", Version: "test"}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			to := tt.from
			to.Args = append([]string(nil), tt.from.Args...)
			tt.edit(&to)
			if got := sameConnection(tt.from, to, env, info); got != tt.same {
				t.Errorf("sameConnection = %v, want %v", got, tt.same)
			}
		})
	}
}

func TestRegistryExpand(t *testing.T) {
	reg := newRegistry([]config.Server{
		{Name: "a", ServerID: "id-a", AccessGroups: []string{"dev", "ops"}},
		{Name: "b", ServerID: "b", Alias: "Bee", AccessGroups: []string{"dev"}},
		{Name: "c", ServerID: "c", AccessGroups: []string{"a"}}, // a group named like a server
	}, map[string]string{"gh": "Bee", "a": "b", "broken": "nope"})
	tests := []struct {
		entry string
		want  []string
		group bool
		ok    bool
	}{
		{"a", []string{"a"}, false, true},       // a server name wins over an alias and a group
		{"id-a", []string{"a"}, false, true},    // server_id
		{"Bee", []string{"b"}, false, true},     // alias
		{"gh", []string{"b"}, false, true},      // mcp_aliases entry, through the target's alias
		{"dev", []string{"a", "b"}, true, true}, // access group, config order
		{"ops", []string{"a"}, true, true},
		{"broken", nil, false, false}, // an alias whose target is gone names nothing
		{"", nil, false, false},
		{"nope", nil, false, false},
	}
	for _, tt := range tests {
		got, group, ok := reg.expand(tt.entry)
		if !slices.Equal(got, tt.want) || group != tt.group || ok != tt.ok {
			t.Errorf("expand(%q) = %v, %v, %v; want %v, %v, %v", tt.entry, got, group, ok, tt.want, tt.group, tt.ok)
		}
	}
}
