package config

import (
	"strings"
	"testing"
)

func TestParseServerHasTheFileRules(t *testing.T) {
	env := func(name string) (string, bool) {
		if name == "GH_TOKEN" {
			return "from-env", true
		}
		return "", false
	}
	s, problems, err := ParseServer("github", map[string]any{
		"url": "https://example.com/mcp", "auth_type": "bearer_token", "auth_value": "os.environ/GH_TOKEN",
		"static_headers": map[string]string{"X-A": "os.environ/FILE_VAR"}, "timeout": 2.5,
	}, &Config{EnvironmentVariables: map[string]string{"FILE_VAR": "file-value"}}, Options{LookupEnv: env})
	if err != nil {
		t.Fatal(err, problems)
	}
	if s.Name != "github" || s.ServerID != "github" || s.AuthValue.Reveal() != "from-env" || s.StaticHeaders["X-A"] != "file-value" ||
		s.Timeout.Seconds() != 2.5 || s.Line != 0 {
		t.Fatalf("server = %+v", s)
	}
	_, problems, err = ParseServer("bad", map[string]any{"url": "ftp://x", "auth_type": "nope",
		"auth_value": "os.environ/MISSING"}, nil, Options{LookupEnv: env})
	if err == nil {
		t.Fatal("an invalid server parsed")
	}
	var msgs []string
	for _, p := range problems {
		msgs = append(msgs, p.Msg)
	}
	all := strings.Join(msgs, "\n")
	for _, want := range []string{"auth_type: unknown or unsupported auth type", `environment variable "MISSING" is not set`} {
		if !strings.Contains(all, want) {
			t.Errorf("problems %q lack %q", all, want)
		}
	}
}

func TestRouteConflict(t *testing.T) {
	yaml := []Server{{Name: "a", ServerID: "id-a", Alias: "al"}}
	for _, c := range []struct {
		s    Server
		want string
	}{
		{Server{Name: "a", ServerID: "x"}, `server_name "a"`},
		{Server{Name: "b", ServerID: "id-a"}, `server_id "id-a"`},
		{Server{Name: "b", ServerID: "b", Alias: "al"}, `alias "al"`},
		{Server{Name: "b", ServerID: "b"}, ""},
	} {
		got := RouteConflict(c.s, yaml)
		if (c.want == "") != (got == "") || !strings.Contains(got, c.want) {
			t.Errorf("RouteConflict(%+v) = %q, want %q", c.s, got, c.want)
		}
	}
}

// TestParseServerSettings: a server parsed alone reads every setting a file's server has, its
// guardrails checked against the running file's guardrails, and refuses what the file refuses.
func TestParseServerSettings(t *testing.T) {
	file := &Config{Guardrails: []Guardrail{{Name: "pii"}}}
	fields := map[string]any{"url": "https://example.com/mcp", "spec_path": "https://example.com/openapi.json",
		"protocol_version": "2025-06-18", "forward_identity": "jwt", "allow_elicitation": true, "allow_sampling": true,
		"pin_tool_definitions": true, "pinned_tools": []string{"search"}, "guardrails": []string{"pii"}}
	s, problems, err := ParseServer("api", fields, file, Options{})
	if err != nil {
		t.Fatal(err, problems)
	}
	if s.SpecPath != "https://example.com/openapi.json" || s.ProtocolVersion != "2025-06-18" || s.ForwardIdentity != ForwardIdentityJWT ||
		!s.AllowElicitation || !s.AllowSampling || !s.PinToolDefinitions || len(s.PinnedTools) != 1 || s.Guardrails[0] != "pii" {
		t.Fatalf("server = %+v", s)
	}
	for _, c := range []struct {
		field string
		v     any
		file  *Config
		want  string
	}{
		{"guardrails", []string{"pii"}, nil, `guardrails names "pii", which is not in guardrails`},
		{"guardrails", []string{"nope"}, file, `guardrails names "nope", which is not in guardrails`},
		{"forward_identity", "saml", file, "forward_identity must be jwt or none"},
		{"protocol_version", "1999-01-01", file, "unknown protocol version"},
		{"pin_tool_definitions", "maybe", file, "pin_tool_definitions"},
	} {
		bad := map[string]any{"url": "https://example.com/mcp", c.field: c.v}
		_, problems, err := ParseServer("api", bad, c.file, Options{})
		var msgs []string
		for _, p := range problems {
			msgs = append(msgs, p.Msg)
		}
		if err == nil || !strings.Contains(strings.Join(msgs, "\n"), c.want) {
			t.Errorf("%s=%v: err %v, problems %q; want %q", c.field, c.v, err, msgs, c.want)
		}
	}
}
