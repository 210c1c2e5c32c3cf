package e2e

import (
	"encoding/json"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/mcpgw/mcpgw/internal/app"
)

// fileReloads watches a config file over gw's running App, as `serve`
// does, starting from yaml (the config gw runs), and returns a function that
// rewrites the file with another config, triggers a reload as SIGHUP does
// (Reloader.Trigger) and waits until readiness shows it applied.
func fileReloads(t *testing.T, gw *gatewayUnderTest, yaml string, env map[string]string) func(t *testing.T, yaml string) {
	t.Helper()
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	path := filepath.Join(t.TempDir(), "config.yaml")
	writeAtomically(t, path, yaml)
	_, _, sum, err := app.LoadConfigFile(path, lookup)
	if err != nil {
		t.Fatal(err)
	}
	r := app.NewReloader(gw.app, path, app.ReloadOptions{LookupEnv: lookup, Loaded: sum, Debounce: 10 * time.Millisecond})
	t.Cleanup(r.Close)
	gen := int64(1)
	return func(t *testing.T, yaml string) {
		t.Helper()
		writeAtomically(t, path, yaml)
		r.Trigger()
		gen++
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			got, lastErr := readinessConfig(t, gw.url)
			if got == gen && lastErr == "" {
				return
			}
			if lastErr != "" || time.Now().After(deadline) {
				t.Fatalf("reload by file: generation %d, last error %q; want generation %d", got, lastErr, gen)
			}
		}
	}
}

// readinessConfig is /health/readiness's config detail.
func readinessConfig(t *testing.T, base string) (int64, string) {
	t.Helper()
	resp, err := http.Get(base + "/health/readiness")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct {
		Config struct {
			Generation      int64  `json:"generation"`
			LastReloadError string `json:"last_reload_error"`
		} `json:"config"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatal(err)
	}
	return body.Config.Generation, body.Config.LastReloadError
}

// TestSeedConfigCasesByFileReload runs the seed's metadata and config-change
// cases with the config changed by rewriting the file and reloading it as
// SIGHUP does: a metadata-only change keeps the subscription (and the
// change after it is delivered), a url change ends it.
func TestSeedConfigCasesByFileReload(t *testing.T) {
	tsClients(t)
	for _, c := range []seedCase{{"tools", "metadata"}, {"tools", "config-change"}} {
		t.Run(c.name(), func(t *testing.T) {
			t.Parallel()
			runSeedCaseReloading(t, c, true)
		})
	}
}
