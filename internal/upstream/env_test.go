package upstream

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// A stdio child sees only the minimal environment the MCP SDKs pass on plus
// its configured env: the gateway's own secrets (salt key, database and
// model API keys) must not reach every npx/uvx server.
func TestStdioChildGetsMinimalEnvironment(t *testing.T) {
	t.Setenv("LITELLM_SALT_KEY", "salt-SECRET-ENV")
	t.Setenv("DATABASE_URL", "postgres://u:SECRET-ENV@db/x")
	t.Setenv("OPENAI_API_KEY", "sk-SECRET-ENV")
	t.Setenv("HOME", "/home/gw")
	t.Setenv("USER", "gw")
	cfg := fakeStdioConfig(t, "env")
	cfg.Env = append(cfg.Env, "CONFIGURED=yes", "USER=child")
	c := newClient(t, cfg)
	res, err := c.CallTool(context.Background(), "t", json.RawMessage(`{}`), Options{})
	if err != nil {
		t.Fatal(err)
	}
	var out struct{ Env []string }
	if err := json.Unmarshal(res.Raw, &out); err != nil {
		t.Fatal(err)
	}
	allowed := map[string]bool{"HOME": true, "LOGNAME": true, "PATH": true, "SHELL": true, "TERM": true, "USER": true,
		"MCPGW_FAKE_STDIO": true, "CONFIGURED": true}
	for _, kv := range out.Env {
		k, _, _ := strings.Cut(kv, "=")
		if strings.Contains(kv, "SECRET-ENV") || !allowed[k] {
			t.Errorf("child environment has %q", k)
		}
	}
	for _, want := range []string{"HOME=/home/gw", "CONFIGURED=yes", "USER=child", "MCPGW_FAKE_STDIO=env"} {
		if !slices.Contains(out.Env, want) {
			t.Errorf("child environment lacks %q: %q", want, out.Env)
		}
	}
	if slices.Contains(out.Env, "USER=gw") {
		t.Error("configured env must replace the inherited value, not duplicate it")
	}
}
