package e2e

import (
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/mcpgw/mcpgw/internal/app"
	"github.com/mcpgw/mcpgw/internal/app/apptest"
	"github.com/mcpgw/mcpgw/internal/config"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

const testKey = "sk-gateway-test-key-0123"

// gatewayUnderTest is a running gateway built from a config, as `serve`
// builds it.
type gatewayUnderTest struct {
	url string
	app *app.App
	// stop shuts the gateway down (as `serve` does on SIGTERM), at most
	// once; the test's end calls it too.
	stop func()
}

// startGateway serves the gateway for yaml, read with env, on a loopback
// port with the server and listener `mcpgw serve` uses; it stops at the end
// of the test, or earlier through stop.
func startGateway(t *testing.T, yaml string, env map[string]string) *gatewayUnderTest {
	t.Helper()
	return startGatewayWith(t, yaml, env)
}

// startGatewayWith is startGateway with extra app options (a data dir, say).
func startGatewayWith(t *testing.T, yaml string, env map[string]string, opts ...app.Option) *gatewayUnderTest {
	t.Helper()
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	cfg := loadConfig(t, yaml, lookup)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	if os.Getenv("MCPGW_TEST_LOG") != "" {
		log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	a, err := app.New(cfg, append([]app.Option{app.WithLookupEnv(lookup), app.WithLogger(log)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	url, stop := apptest.Serve(t, a, cfg.General.HTTP.MaxConnections)
	return &gatewayUnderTest{url: url, app: a, stop: stop}
}

// loadConfig loads yaml from a file, as serve does, with lookup for the environment.
func loadConfig(t *testing.T, yaml string, lookup func(string) (string, bool)) *config.Config {
	t.Helper()
	path := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, problems, err := config.Load(path, app.ConfigOptions(lookup))
	if err != nil {
		t.Fatalf("config: %v %v", err, problems)
	}
	return cfg
}

// serveEdge serves the gateway for yaml as startGateway does and returns
// its host:port.
func serveEdge(t *testing.T, yaml string, env map[string]string) string {
	t.Helper()
	return strings.TrimPrefix(startGateway(t, yaml, env).url, "http://")
}
