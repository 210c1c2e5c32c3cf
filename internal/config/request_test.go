package config_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcpgw/mcpgw/internal/config"
)

// A LiteLLM NewMCPServerRequest becomes the server a YAML entry with the
// same settings would: credentials' entries are the server's own,
// mcp_access_groups its access_groups, nulls are absent, os.environ/
// references resolve, and server_name names it.
func TestParseServerRequest(t *testing.T) {
	env := func(k string) (string, bool) {
		if k == "TRIAL_TOKEN" {
			return "tok-from-env", true
		}
		return "", false
	}
	s, _, err := config.ParseServerRequest([]byte(`{"server_name":"trial","alias":"Trial","server_id":"trial-id",
		"url":"https://mcp.example.com/mcp","transport":"http","auth_type":"bearer_token",
		"credentials":{"auth_value":"os.environ/TRIAL_TOKEN","client_id":null},"mcp_access_groups":["g1"],
		"description":null,"status":"healthy","last_health_check":"2026-01-01T00:00:00Z"}`),
		"preview", config.Options{LookupEnv: env})
	if err != nil {
		t.Fatal(err)
	}
	if s.Name != "trial" || s.ServerID != "trial-id" || s.URL != "https://mcp.example.com/mcp" ||
		s.AuthType != config.AuthType("bearer_token") || s.AuthValue.Reveal() != "tok-from-env" ||
		!slices.Equal(s.AccessGroups, []string{"g1"}) {
		t.Fatalf("server = %+v", s)
	}
	s, _, err = config.ParseServerRequest([]byte(`{"url":"https://mcp.example.com/mcp"}`), "preview", config.Options{})
	if err != nil || s.Name != "preview" {
		t.Fatalf("unnamed server = %+v, %v; want the fallback name", s, err)
	}
}

// An invalid request is refused with the YAML rules' problems, none of
// which repeats a credential.
func TestParseServerRequestRefuses(t *testing.T) {
	for _, body := range []string{
		`{"server_name":"trial","transport":"stdio","credentials":{"auth_value":"sk-secret-value"}}`,
		`{"server_name":"trial","url":"ftp://x","credentials":{"auth_value":"sk-secret-value"}}`,
		`{"server_name":"a-b","url":"https://x"}`,
		`{"server_name":"trial","credentials":"sk-secret-value"}`,
		`{} {}`,
	} {
		_, problems, err := config.ParseServerRequest([]byte(body), "preview", config.Options{})
		if err == nil {
			t.Errorf("%s: accepted", body)
			continue
		}
		text := err.Error()
		for _, p := range problems {
			text += p.Msg
		}
		if strings.Contains(text, "sk-secret-value") {
			t.Errorf("%s: a problem repeats the credential: %s", body, text)
		}
	}
}

// The health keys default to a check a minute bounded by 10 s, take
// seconds, 0 disabling the checks, and refuse a timeout that is not positive.
func TestHealthSettings(t *testing.T) {
	cfg, _, err := config.Parse([]byte("general_settings: {}\n"), config.Options{})
	if err != nil || cfg.General.Health != config.DefaultHealthSettings() || cfg.General.Health.Interval != time.Minute {
		t.Fatalf("defaults = %+v, %v", cfg.General.Health, err)
	}
	cfg, _, err = config.Parse([]byte("general_settings:\n  mcp_health_check_interval: 0\n  mcp_health_check_timeout: 2.5\n"+
		"  mcp_preview_allow_stdio: true\n  mcp_preview_allow_private_networks: true\n"), config.Options{})
	want := config.HealthSettings{Timeout: 2500 * time.Millisecond, PreviewAllowStdio: true, PreviewAllowPrivateNetworks: true}
	if err != nil || cfg.General.Health != want {
		t.Fatalf("set = %+v, %v; want %+v", cfg.General.Health, err, want)
	}
	for _, bad := range []string{"mcp_health_check_timeout: 0", "mcp_health_check_interval: -1"} {
		if _, _, err := config.Parse([]byte("general_settings:\n  "+bad+"\n"), config.Options{}); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
}
