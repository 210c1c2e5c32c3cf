package app

import (
	"slices"
	"testing"

	"github.com/mcpgw/mcpgw/internal/config"
	"github.com/mcpgw/mcpgw/internal/mcp"
)

// The config's environment_variables feed os.environ/ references; they are
// not handed to every stdio child (they often hold model API keys). A child
// gets its own env only, which may name one of them.
func TestStdioEnvHoldsOnlyTheServersOwnEnv(t *testing.T) {
	src := []byte(`
environment_variables:
  OPENAI_API_KEY: sk-model-secret-never-for-children
  FS_ROOT: /srv/data
mcp_servers:
  fs:
    transport: stdio
    command: fs-server
    env:
      ROOT: os.environ/FS_ROOT
`)
	cfg, problems, err := config.Parse(src, ConfigOptions(func(string) (string, bool) { return "", false }))
	if err != nil || len(problems) > 0 {
		t.Fatalf("parse: %v %v", err, problems)
	}
	uc := upstreamConfig(cfg.Servers[0], Env{}, mcp.Implementation{})
	if want := []string{"ROOT=/srv/data"}; !slices.Equal(uc.Env, want) {
		t.Fatalf("stdio env = %q, want %q", uc.Env, want)
	}
}
