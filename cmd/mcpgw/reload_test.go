package main

import (
	"context"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mcpgw/mcpgw/internal/testpeers"
)

// serveLogs collects a running serve's log records.
type serveLogs struct {
	mu   sync.Mutex
	recs []map[string]any
}

// count returns how many records have msg.
func (l *serveLogs) count(msg string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, r := range l.recs {
		if r["msg"] == msg {
			n++
		}
	}
	return n
}

// find returns the last record with msg.
func (l *serveLogs) find(msg string) map[string]any {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i := len(l.recs) - 1; i >= 0; i-- {
		if l.recs[i]["msg"] == msg {
			return l.recs[i]
		}
	}
	return nil
}

// text is every record, as JSON lines.
func (l *serveLogs) text() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var b strings.Builder
	for _, r := range l.recs {
		j, _ := json.Marshal(r)
		b.Write(append(j, '\n'))
	}
	return b.String()
}

// startServeFile runs serve on cfgPath until the test ends, its reload signals read from hup
// (nil: runServe, with the process's SIGHUP), and returns its base URL and logs.
func startServeFile(t *testing.T, cfgPath string, hup chan os.Signal) (string, *serveLogs) {
	t.Helper()
	return startServeEnv(t, cfgPath, hup, nil)
}

// startServeEnv is startServeFile with these environment variables set too.
func startServeEnv(t *testing.T, cfgPath string, hup chan os.Signal, vars map[string]string) (string, *serveLogs) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	lines := make(chan map[string]any, 100)
	go logTail(pr, lines)
	done := make(chan int, 1)
	args := []string{"--config", cfgPath, "--host", "127.0.0.1", "--data-dir", t.TempDir()}
	all := map[string]string{"PORT": "0"}
	maps.Copy(all, vars)
	env := envOf(all)
	go func() {
		if hup != nil {
			done <- serveWith(ctx, args, pw, env, hup)
		} else {
			done <- runServe(ctx, args, pw, env)
		}
		pw.Close()
	}()
	logs := &serveLogs{}
	addr := make(chan string, 1)
	drained := make(chan struct{})
	go func() {
		defer close(drained)
		for rec := range lines {
			logs.mu.Lock()
			logs.recs = append(logs.recs, rec)
			logs.mu.Unlock()
			if a, _ := rec["addr"].(string); rec["msg"] == "listening" && a != "" {
				addr <- "http://" + a
			}
		}
	}()
	t.Cleanup(func() {
		cancel()
		<-drained
		if code := <-done; code != 0 {
			t.Errorf("serve exit %d", code)
		}
	})
	select {
	case base := <-addr:
		return base, logs
	case <-drained:
		t.Fatal("serve exited before listening")
	case <-time.After(15 * time.Second):
		t.Fatal("serve did not log listening")
	}
	return "", nil
}

// mcpToolNames sends one 2026-07-28 tools/list with the master key and returns the names.
func mcpToolNames(t *testing.T, base string) []string {
	t.Helper()
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{` +
		`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},` +
		`"io.modelcontextprotocol/clientInfo":{"name":"cli-test","version":"1"}}}}`
	req, _ := http.NewRequest(http.MethodPost, base+"/mcp", strings.NewReader(body))
	for k, v := range map[string]string{"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
		"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/list", "Authorization": "Bearer " + cliMasterKey} {
		req.Header.Set(k, v)
	}
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		Result struct {
			Tools []struct {
				Name string `json:"name"`
			} `json:"tools"`
		} `json:"result"`
	}
	b, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(b, &out); err != nil || resp.StatusCode != 200 {
		t.Fatalf("tools/list = %d %s", resp.StatusCode, b)
	}
	var names []string
	for _, tl := range out.Result.Tools {
		names = append(names, tl.Name)
	}
	return names
}

// hasTool reports whether names holds name.
func hasTool(names []string, name string) bool {
	for _, n := range names {
		if n == name {
			return true
		}
	}
	return false
}

// readyConfig returns readiness's status code and its "config" detail.
func readyConfig(t *testing.T, base string) (int, int64, string) {
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
	return resp.StatusCode, body.Config.Generation, body.Config.LastReloadError
}

// eventually polls cond every 50 ms for up to 5 s.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

const reloadBase = "general_settings:\n  master_key: " + cliMasterKey + "\nmcp_servers:\n  fx:\n    url: "

// TestServeReloadsItsConfigFile: against a real `mcpgw serve`, rewriting the config file adds a
// server that tools/list then shows; an invalid rewrite keeps it serving, readiness (still 200)
// names the problem's line, and a reload signal retries that file.
func TestServeReloadsItsConfigFile(t *testing.T) {
	fixture := testpeers.StartGoFixtureHTTP(t, true)
	cfgPath := writeFile(t, "c.yaml", reloadBase+fixture+"\n")
	hup := make(chan os.Signal, 1)
	base, logs := startServeFile(t, cfgPath, hup)
	if names := mcpToolNames(t, base); !hasTool(names, "fx-test_simple_text") || hasTool(names, "two-test_simple_text") {
		t.Fatalf("tools at start = %q", names)
	}
	if status, gen, lastErr := readyConfig(t, base); status != 200 || gen != 1 || lastErr != "" {
		t.Fatalf("readiness at start = %d generation %d error %q", status, gen, lastErr)
	}

	valid := reloadBase + fixture + "\n  two:\n    url: " + fixture + "\n"
	if err := os.WriteFile(cfgPath, []byte(valid), 0o600); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the added server in tools/list", func() bool { return hasTool(mcpToolNames(t, base), "two-test_simple_text") })
	if _, gen, _ := readyConfig(t, base); gen != 2 {
		t.Errorf("generation after the reload = %d, want 2", gen)
	}

	const marker = "SECRET-MARKER-RELOAD"
	invalid := valid + "  three:\n    transport: carrier-pigeon\n    auth_type: bearer_token\n    auth_value: " + marker +
		"\n    static_headers:\n      X-Key: " + marker + "\n      \"Bad Name\": " + marker + "\n"
	if err := os.WriteFile(cfgPath, []byte(invalid), 0o600); err != nil {
		t.Fatal(err)
	}
	eventually(t, "readiness to report the failed reload", func() bool { _, _, e := readyConfig(t, base); return e != "" })
	status, gen, lastErr := readyConfig(t, base)
	if status != 200 || gen != 2 || !strings.HasPrefix(lastErr, "line 9: mcp_servers.three.transport") {
		t.Errorf("readiness after the invalid file = %d generation %d error %q", status, gen, lastErr)
	}
	if rec := logs.find("config reload failed"); rec == nil || rec["file"] != cfgPath {
		t.Errorf("no ERROR config reload failed naming the file: %v", rec)
	}
	if names := mcpToolNames(t, base); !hasTool(names, "fx-test_simple_text") || !hasTool(names, "two-test_simple_text") {
		t.Errorf("tools after the invalid file = %q", names)
	}
	if logText := logs.text(); strings.Contains(logText, marker) || strings.Contains(lastErr, marker) {
		t.Errorf("a credential of the invalid file was reported:\n%s", logText)
	}

	// The watcher does not retry the same bytes; a signal does.
	failures := logs.count("config reload failed")
	hup <- syscall.SIGHUP
	eventually(t, "the signal's reload", func() bool { return logs.count("config reload failed") == failures+1 })
	if logs.count("reload signal received") != 1 {
		t.Error("the signal was not logged")
	}
	if err := os.WriteFile(cfgPath, []byte(reloadBase+fixture+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the removed server to leave tools/list", func() bool { return !hasTool(mcpToolNames(t, base), "two-test_simple_text") })
	if _, gen, lastErr := readyConfig(t, base); gen != 3 || lastErr != "" {
		t.Errorf("readiness after the fix = generation %d error %q", gen, lastErr)
	}
}

// TestServeReloadsOnSIGHUP: runServe reloads on the process's SIGHUP. The test holds its own
// SIGHUP subscription meanwhile, so the signal never takes its default action (exit).
func TestServeReloadsOnSIGHUP(t *testing.T) {
	guard := make(chan os.Signal, 1)
	signal.Notify(guard, syscall.SIGHUP)
	defer signal.Stop(guard)
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "c.yaml")
	// Served from an unwatched path: a symlink to a file in another directory, which the
	// directory watch does not see change.
	target := writeFile(t, "real.yaml", reloadBase+"http://127.0.0.1:1/mcp\n")
	if err := os.Symlink(target, cfgPath); err != nil {
		t.Fatal(err)
	}
	base, logs := startServeFile(t, cfgPath, nil)
	if err := os.WriteFile(target, []byte(reloadBase+"http://127.0.0.1:1/mcp\n  two:\n    url: http://127.0.0.1:2/mcp\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond) // longer than the debounce: the watch did not see it
	if _, gen, _ := readyConfig(t, base); gen != 1 {
		t.Fatalf("generation before the signal = %d, want 1", gen)
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the SIGHUP reload", func() bool { _, gen, _ := readyConfig(t, base); return gen == 2 })
	if logs.count("reload signal received") != 1 {
		t.Error("the signal was not logged")
	}
}

// TestServeNamesItsHTTPServer: serve logs the HTTP server it serves with;
// an MCPGW_HTTP_SERVER it does not know is warned of, naming the value,
// and served by the built-in server; a known one is not warned of.
func TestServeNamesItsHTTPServer(t *testing.T) {
	cfgPath := writeFile(t, "c.yaml", "general_settings:\n  master_key: "+cliMasterKey+"\n")
	const warning = "unknown MCPGW_HTTP_SERVER; serving with the built-in server"
	for _, c := range []struct{ choice, want string }{{"nginx", "h1serve"}, {"stdlib", "stdlib"}, {"h1serve", "h1serve"}} {
		t.Run(c.choice, func(t *testing.T) {
			base, logs := startServeEnv(t, cfgPath, make(chan os.Signal, 1), map[string]string{"MCPGW_HTTP_SERVER": c.choice})
			if status, _, _ := readyConfig(t, base); status != http.StatusOK {
				t.Errorf("readiness = %d", status)
			}
			if rec := logs.find("listening"); rec == nil || rec["http_server"] != c.want {
				t.Errorf("listening record = %v, want http_server %q", rec, c.want)
			}
			rec := logs.find(warning)
			switch {
			case c.choice == "nginx" && (rec == nil || rec["value"] != "nginx" || rec["level"] != "WARN"):
				t.Errorf("warning = %v, want a WARN naming the value\n%s", rec, logs.text())
			case c.choice != "nginx" && rec != nil:
				t.Errorf("a known choice was warned of: %v", rec)
			}
		})
	}
}
