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
	}, map[string]string{"FILE_VAR": "file-value"}, Options{LookupEnv: env})
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
