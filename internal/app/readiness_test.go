package app_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpgw/mcpgw/internal/app"
	"github.com/mcpgw/mcpgw/internal/config"
)

const testKey = "sk-gateway-test-key-0123"

// parse loads yaml as serve would, with no environment.
func parse(t *testing.T, yaml string) *config.Config {
	t.Helper()
	cfg, problems, err := config.Parse([]byte(yaml), app.ConfigOptions(func(string) (string, bool) { return "", false }))
	if err != nil {
		t.Fatalf("config: %v %v", err, problems)
	}
	return cfg
}

// noEnv is an empty environment.
func noEnv(string) (string, bool) { return "", false }

const minimal = "general_settings:\n  master_key: " + testKey + "\n"

// readiness returns /health/readiness's status and body.
func readiness(t *testing.T, h http.Handler) (int, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodGet, "http://127.0.0.1/health/readiness", nil)
	h.ServeHTTP(rec, req)
	b, _ := io.ReadAll(rec.Body)
	return rec.Code, string(b)
}

// TestReadinessFollowsTheLifecycle: 503 before Start and from Drain on, and
// when ready the body is the one readiness has always answered, with the store.
func TestReadinessFollowsTheLifecycle(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	a, err := app.New(parse(t, minimal), app.WithLookupEnv(noEnv), app.WithDataDir(dir))
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close(context.Background())
	steps := []struct {
		name   string
		do     func()
		status int
		body   string
	}{
		{"before start", func() {}, 503,
			`{"status":"unhealthy","reason":"lifecycle: starting","checks":{"config":"ok","lifecycle":"starting","store":"ok"},"version":"dev"}` + "\n"},
		{"started", a.Start, 200, `{"status":"healthy","checks":{"config":"ok","store":"ok"},"version":"dev"}` + "\n"},
		{"started twice", a.Start, 200, `{"status":"healthy","checks":{"config":"ok","store":"ok"},"version":"dev"}` + "\n"},
		{"draining", a.Drain, 503,
			`{"status":"unhealthy","reason":"lifecycle: shutting down","checks":{"config":"ok","lifecycle":"shutting down","store":"ok"},"version":"dev"}` + "\n"},
		{"start after drain", a.Start, 503,
			`{"status":"unhealthy","reason":"lifecycle: shutting down","checks":{"config":"ok","lifecycle":"shutting down","store":"ok"},"version":"dev"}` + "\n"},
	}
	for _, s := range steps {
		s.do()
		status, body := readiness(t, a.Handler())
		if status != s.status || body != s.body {
			t.Errorf("%s: readiness = %d %s, want %d %s", s.name, status, body, s.status, s.body)
		}
	}
}

// TestReadinessFailsWhileTheDataDirIsUnwritable: the data dir is probed on
// every readiness request.
func TestReadinessFailsWhileTheDataDirIsUnwritable(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	a, err := app.New(parse(t, minimal), app.WithLookupEnv(noEnv), app.WithDataDir(dir), app.WithVersion("v9"))
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close(context.Background())
	a.Start()
	if status, body := readiness(t, a.Handler()); status != 200 || body != `{"status":"healthy","checks":{"config":"ok","store":"ok"},"version":"v9"}`+"\n" {
		t.Fatalf("ready = %d %s", status, body)
	}
	// The directory is replaced by a file: nothing can be created in it.
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dir, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	status, body := readiness(t, a.Handler())
	if status != 503 || !strings.Contains(body, `"reason":"data_dir: not writable: not a directory"`) ||
		!strings.Contains(body, `"status":"unhealthy"`) || strings.Contains(body, dir) {
		t.Errorf("unwritable = %d %s", status, body)
	}
	// Back to a directory: ready again.
	if err := os.Remove(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if status, body := readiness(t, a.Handler()); status != 200 {
		t.Errorf("writable again = %d %s", status, body)
	}
}

// TestDataDir: New creates the data dir (0700) and refuses one it cannot
// create or write in, naming it.
func TestDataDir(t *testing.T) {
	root := t.TempDir()
	file := filepath.Join(root, "file")
	if err := os.WriteFile(file, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	readOnly := filepath.Join(root, "ro")
	if err := os.Mkdir(readOnly, 0o500); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, dir, err string
		skip           bool
	}{
		{"created", filepath.Join(root, "a", "b"), "", false},
		{"exists", root, "", false},
		{"under a file", filepath.Join(file, "state"), "data dir " + filepath.Join(file, "state") + ": cannot be created: not a directory", false},
		{"is a file", file, "data dir " + file + ": cannot be created: not a directory", false},
		{"read-only", readOnly, "data dir " + readOnly + ": not writable: permission denied", os.Geteuid() == 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.skip {
				t.Skip("root writes in a read-only directory")
			}
			a, err := app.New(parse(t, minimal), app.WithLookupEnv(noEnv), app.WithDataDir(tt.dir))
			if tt.err != "" {
				if err == nil || err.Error() != tt.err {
					t.Fatalf("New = %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer a.Close(context.Background())
			st, err := os.Stat(tt.dir)
			if err != nil || !st.IsDir() {
				t.Fatalf("data dir: %v", err)
			}
			if tt.name == "created" && st.Mode().Perm() != 0o700 {
				t.Errorf("mode %v, want 0700", st.Mode().Perm())
			}
			entries, _ := os.ReadDir(tt.dir)
			for _, e := range entries {
				if strings.HasPrefix(e.Name(), ".probe-") {
					t.Errorf("probe file left behind: %s", e.Name())
				}
			}
		})
	}
}
