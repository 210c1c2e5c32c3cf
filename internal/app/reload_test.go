package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpgw/mcpgw/internal/app"
	"github.com/mcpgw/mcpgw/internal/fakemcp"
)

// syncBuffer is a log sink safe for concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// configStatus is readiness's "config" detail.
type configStatus struct {
	Generation      int64  `json:"generation"`
	LastReloadError string `json:"last_reload_error"`
}

// readConfigStatus returns readiness's status and its config detail.
func readConfigStatus(t *testing.T, a *app.App) (int, configStatus, string) {
	t.Helper()
	status, body := readiness(t, a.Handler())
	var v struct {
		Config *configStatus `json:"config"`
	}
	if err := json.Unmarshal([]byte(body), &v); err != nil || v.Config == nil {
		t.Fatalf("readiness without config status: %d %s (%v)", status, body, err)
	}
	return status, *v.Config, body
}

// reloadFixture is an App built from a config file with one server, "a",
// and a Reloader over that file.
type reloadFixture struct {
	a     *app.App
	r     *app.Reloader
	base  string
	path  string
	logs  *syncBuffer
	a1url string
	b1url string
}

// serversYAML is a config file's text with the named servers of f.
func (f *reloadFixture) serversYAML(names ...string) string {
	urls := map[string]string{"a": f.a1url, "b": f.b1url}
	var s strings.Builder
	s.WriteString(minimal + "mcp_servers:\n")
	for _, n := range names {
		fmt.Fprintf(&s, "  %s:\n    url: %s\n    protocol_version: 2025-11-25\n", n, urls[n])
	}
	return s.String()
}

func newReloadFixture(t *testing.T, path string, debounce time.Duration) *reloadFixture {
	t.Helper()
	ua := newUpstream(t, fakemcp.Opts{Lists: map[string][]json.RawMessage{"tools/list": fakemcp.Tools("x")}})
	ub := newUpstream(t, fakemcp.Opts{Lists: map[string][]json.RawMessage{"tools/list": fakemcp.Tools("y")}})
	f := &reloadFixture{path: path, logs: &syncBuffer{}, a1url: ua.url, b1url: ub.url}
	if err := os.WriteFile(path, []byte(f.serversYAML("a")), 0o600); err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewJSONHandler(f.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	cfg, _, sum, err := app.LoadConfigFile(path, noEnv)
	if err != nil {
		t.Fatal(err)
	}
	f.a, err = app.New(cfg, app.WithLookupEnv(noEnv), app.WithLogger(log))
	if err != nil {
		t.Fatal(err)
	}
	f.base = serveApp(t, f.a)
	f.r = app.NewReloader(f.a, path, app.ReloadOptions{LookupEnv: noEnv, Loaded: sum, Debounce: debounce})
	t.Cleanup(f.r.Close)
	return f
}

func (f *reloadFixture) write(t *testing.T, text string) {
	t.Helper()
	if err := os.WriteFile(f.path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestReloadKeepsTheRunningConfigOnAnInvalidFile: an invalid file changes
// nothing; the failure is logged with its line and readiness names it
// (still 200: the running config is whole), without the master key.
func TestReloadKeepsTheRunningConfigOnAnInvalidFile(t *testing.T) {
	f := newReloadFixture(t, filepath.Join(t.TempDir(), "config.yaml"), 0)
	if _, st, _ := readConfigStatus(t, f.a); st != (configStatus{Generation: 1}) {
		t.Fatalf("status at start = %+v", st)
	}
	f.write(t, f.serversYAML("a")+"  broken:\n    transport: carrier-pigeon\n")
	applied, err := f.r.Reload(context.Background())
	if applied || err == nil {
		t.Fatalf("Reload of an invalid file = %v, %v", applied, err)
	}
	if got := restTools(t, f.base); !slices.Equal(got, []string{"a/x"}) {
		t.Errorf("tools after the invalid reload = %q, want the running a/x", got)
	}
	status, st, body := readConfigStatus(t, f.a)
	if status != 200 || st.Generation != 1 || !strings.HasPrefix(st.LastReloadError, "line 8: ") {
		t.Errorf("readiness after the invalid reload = %d %s", status, body)
	}
	logs := f.logs.String()
	if !strings.Contains(logs, `"msg":"config reload failed"`) || !strings.Contains(logs, `"line":8`) {
		t.Errorf("logs lack the failure or its line:\n%s", logs)
	}
	if strings.Contains(body, testKey) || strings.Contains(logs, testKey) {
		t.Error("the master key was reported")
	}

	// An empty file (a save caught half way) is refused.
	f.write(t, "")
	if applied, err := f.r.Reload(context.Background()); applied || err == nil {
		t.Fatalf("Reload of an empty file = %v, %v", applied, err)
	}
	if _, st, body := readConfigStatus(t, f.a); st.LastReloadError != "config: the file is empty" {
		t.Errorf("readiness after an empty file = %s", body)
	}
	// A missing file is a failure too, reported without its path.
	if err := os.Remove(f.path); err != nil {
		t.Fatal(err)
	}
	if applied, err := f.r.Reload(context.Background()); applied || err == nil {
		t.Fatalf("Reload of a missing file = %v, %v", applied, err)
	}
	if _, st, body := readConfigStatus(t, f.a); st.LastReloadError != "config: cannot read the file: no such file or directory" {
		t.Errorf("readiness after a missing file = %s", body)
	}
	// Back to the running content: the error clears, nothing is applied.
	f.write(t, f.serversYAML("a"))
	if applied, err := f.r.Reload(context.Background()); applied || err != nil {
		t.Fatalf("Reload back to the running content = %v, %v", applied, err)
	}
	if _, st, body := readConfigStatus(t, f.a); st != (configStatus{Generation: 1}) {
		t.Errorf("readiness back to the running content = %s", body)
	}
}

// TestReloadAppliesAChangeOnce: a changed file is applied (generation 2, the
// new server served); the same content again applies nothing.
func TestReloadAppliesAChangeOnce(t *testing.T) {
	f := newReloadFixture(t, filepath.Join(t.TempDir(), "config.yaml"), 0)
	f.write(t, f.serversYAML("a", "b"))
	if applied, err := f.r.Reload(context.Background()); !applied || err != nil {
		t.Fatalf("Reload of a valid change = %v, %v", applied, err)
	}
	if got := restTools(t, f.base); !slices.Equal(got, []string{"a/x", "b/y"}) {
		t.Errorf("tools after the reload = %q", got)
	}
	if _, st, body := readConfigStatus(t, f.a); st != (configStatus{Generation: 2}) {
		t.Errorf("readiness after the reload = %s", body)
	}
	for range 2 { // unchanged content: nothing to apply, by Reload or by Trigger
		if applied, err := f.r.Reload(context.Background()); applied || err != nil {
			t.Fatalf("Reload of unchanged content = %v, %v", applied, err)
		}
		f.r.Trigger()
		time.Sleep(3 * app.DefaultReloadDebounce / 2)
	}
	if _, st, body := readConfigStatus(t, f.a); st.Generation != 2 {
		t.Errorf("readiness after unchanged reloads = %s", body)
	}
}

// TestReloadDebouncesRapidTriggers: triggers closer than the debounce fold
// into one reload of the last content.
func TestReloadDebouncesRapidTriggers(t *testing.T) {
	f := newReloadFixture(t, filepath.Join(t.TempDir(), "config.yaml"), 150*time.Millisecond)
	for i := range 10 {
		names := []string{"a"}
		if i%2 == 1 {
			names = append(names, "b")
		}
		f.write(t, f.serversYAML(names...)+fmt.Sprintf("# save %d\n", i))
		f.r.Trigger()
		time.Sleep(20 * time.Millisecond)
	}
	waitGeneration(t, f.a, 2)
	time.Sleep(500 * time.Millisecond)
	if _, st, body := readConfigStatus(t, f.a); st.Generation != 2 {
		t.Errorf("generation after the burst = %s, want 2 (one reload)", body)
	}
	if got := restTools(t, f.base); !slices.Equal(got, []string{"a/x", "b/y"}) {
		t.Errorf("tools after the burst = %q, want the last save's", got)
	}
}

// waitGeneration waits up to 5 s for readiness to report generation want.
func waitGeneration(t *testing.T, a *app.App, want int64) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		_, st, body := readConfigStatus(t, a)
		if st.Generation == want {
			return
		}
		if st.Generation > want || time.Now().After(deadline) {
			t.Fatalf("readiness = %s, want generation %d", body, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestWatchSeesEveryWayAFileIsReplaced: with the directory watched, a
// write in place, a rename over the file and a ConfigMap-style ..data
// symlink swap each reload once; rewriting the same bytes reloads nothing;
// Close ends the watcher's goroutine.
func TestWatchSeesEveryWayAFileIsReplaced(t *testing.T) {
	dir := t.TempDir()
	// The ConfigMap layout: config.yaml -> ..data/config.yaml, ..data -> ..v1.
	mkVersion := func(name, text string) {
		if err := os.Mkdir(filepath.Join(dir, name), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name, "config.yaml"), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	f := func() *reloadFixture {
		// The fixture writes the plain file; turn it into the ConfigMap layout.
		f := newReloadFixture(t, filepath.Join(dir, "config.yaml"), 50*time.Millisecond)
		mkVersion("..v1", f.serversYAML("a"))
		if err := os.Symlink("..v1", filepath.Join(dir, "..data")); err != nil {
			t.Fatal(err)
		}
		if err := os.Remove(f.path); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(filepath.Join("..data", "config.yaml"), f.path); err != nil {
			t.Fatal(err)
		}
		return f
	}()
	if err := f.r.Watch(); err != nil {
		t.Fatal(err)
	}
	// (c) ConfigMap swap: a new version dir, ..data_tmp renamed over ..data.
	mkVersion("..v2", f.serversYAML("a", "b"))
	if err := os.Symlink("..v2", filepath.Join(dir, "..data_tmp")); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(dir, "..data_tmp"), filepath.Join(dir, "..data")); err != nil {
		t.Fatal(err)
	}
	_ = os.RemoveAll(filepath.Join(dir, "..v1"))
	waitGeneration(t, f.a, 2)
	if got := restTools(t, f.base); !slices.Equal(got, []string{"a/x", "b/y"}) {
		t.Errorf("tools after the symlink swap = %q", got)
	}

	// (b) Rename over: the symlink is replaced by a plain file.
	tmp := filepath.Join(dir, ".config.yaml.swp")
	if err := os.WriteFile(tmp, []byte(f.serversYAML("b")), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, f.path); err != nil {
		t.Fatal(err)
	}
	waitGeneration(t, f.a, 3)
	if got := restTools(t, f.base); !slices.Equal(got, []string{"b/y"}) {
		t.Errorf("tools after the rename = %q", got)
	}

	// (a) In place.
	f.write(t, f.serversYAML("a"))
	waitGeneration(t, f.a, 4)
	if got := restTools(t, f.base); !slices.Equal(got, []string{"a/x"}) {
		t.Errorf("tools after the write in place = %q", got)
	}

	// The same bytes again, and an unrelated file: nothing.
	f.write(t, f.serversYAML("a"))
	if err := os.WriteFile(filepath.Join(dir, "other.yaml"), []byte("x: 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	time.Sleep(400 * time.Millisecond)
	if _, st, body := readConfigStatus(t, f.a); st.Generation != 4 {
		t.Errorf("after rewriting the same bytes: %s", body)
	}
	f.r.Close()
	waitNoGoroutine(t, "fsnotify", "app.(*Reloader)")
}

// waitNoGoroutine waits up to 2 s for no goroutine's stack to mention any
// of marks.
func waitNoGoroutine(t *testing.T, marks ...string) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Second)
	for {
		buf := make([]byte, 1<<20)
		stacks := string(buf[:runtime.Stack(buf, true)])
		found := ""
		for _, m := range marks {
			if strings.Contains(stacks, m) {
				found = m
			}
		}
		if found == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("a goroutine of %s outlived Close:\n%s", found, stacks)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestWatchRefusesWhatItCannotWatch: a directory that does not exist, a
// second watch and a closed Reloader are errors, and leave no goroutine;
// a failed watch leaves Trigger reloading.
func TestWatchRefusesWhatItCannotWatch(t *testing.T) {
	f := newReloadFixture(t, filepath.Join(t.TempDir(), "config.yaml"), 20*time.Millisecond)
	missing := app.NewReloader(f.a, filepath.Join(t.TempDir(), "gone", "config.yaml"), app.ReloadOptions{LookupEnv: noEnv})
	if err := missing.Watch(); err == nil || !strings.Contains(err.Error(), "directory") {
		t.Errorf("Watch of a missing directory = %v", err)
	}
	missing.Close()
	r := app.NewReloader(f.a, f.path, app.ReloadOptions{LookupEnv: noEnv, Debounce: 20 * time.Millisecond})
	if err := r.Watch(); err != nil {
		t.Fatal(err)
	}
	if err := r.Watch(); err == nil {
		t.Error("a second Watch did not fail")
	}
	r.Close()
	if err := r.Watch(); err == nil {
		t.Error("Watch after Close did not fail")
	}
	waitNoGoroutine(t, "fsnotify")
	// The fixture's Reloader (never watching) still reloads on Trigger; readiness
	// follows the last Reloader made, r, which is closed, so read f.r's result
	// from the served tools.
	f.write(t, f.serversYAML("a", "b"))
	f.r.Trigger()
	deadline := time.Now().Add(5 * time.Second)
	for !slices.Equal(restTools(t, f.base), []string{"a/x", "b/y"}) {
		if time.Now().After(deadline) {
			t.Fatal("Trigger did not reload after the failed watches")
		}
		time.Sleep(20 * time.Millisecond)
	}
}
