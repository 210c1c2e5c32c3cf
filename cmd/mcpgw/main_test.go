package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func noEnv(string) (string, bool) { return "", false }

func envOf(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

const goodConfig = `mcp_servers:
  hello:
    transport: stdio
    command: go
    args: [run, ./examples/hello-server]
general_settings:
  master_key: sk-gateway-test-key-0123
  alerting: [slack]
`

func TestVersion(t *testing.T) {
	var out bytes.Buffer
	if code := run(context.Background(), []string{"version"}, &out, io.Discard, noEnv); code != 0 {
		t.Fatalf("exit %d", code)
	}
	if !strings.HasPrefix(out.String(), "mcpgw ") || strings.TrimSpace(out.String()) == "mcpgw" {
		t.Errorf("version output %q", out.String())
	}
}

func TestUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		nil, {"bogus"}, {"check"}, {"check", "--nope"}, {"serve"}, {"check", "--config", "x", "extra"},
		{"serve", "--config", "x", "--port", "99999"}, {"serve", "--config", "x", "--log-level", "loud"},
	} {
		var stderr bytes.Buffer
		if code := run(context.Background(), args, io.Discard, &stderr, noEnv); code != exitUsage {
			t.Errorf("%q: exit %d, want %d (stderr %q)", args, code, exitUsage, stderr.String())
		}
	}
	if code := run(context.Background(), []string{"help"}, io.Discard, io.Discard, noEnv); code != 0 {
		t.Errorf("help: exit %d", code)
	}
}

func TestCheck(t *testing.T) {
	good := writeFile(t, "good.yaml", goodConfig)
	bad := writeFile(t, "bad.yaml", `mcp_servers:
  my-server:
    url: ftp://x
  ok:
    url: os.environ/OK_URL
    auth_value: os.environ/SECRET_TOKEN
`)
	cases := []struct {
		name  string
		path  string
		env   map[string]string
		code  int
		lines []string
	}{
		{name: "good", path: good, env: map[string]string{"PATH": os.Getenv("PATH")}, code: 0, lines: []string{
			good + `:8: warning: key "alerting" in general_settings is not used by mcpgw (ignored)`,
			good + ": 0 errors, 1 warning; 1 server",
		}},
		{name: "bad", path: bad, env: map[string]string{"OK_URL": "http://127.0.0.1:1/mcp"}, code: 1, lines: []string{
			bad + `:2: error: server name "my-server" contains the tool prefix separator "-"`,
			bad + ":3: error: mcp_servers.my-server.url must be an absolute http:// or https:// URL",
			bad + `:6: error: mcp_servers.ok.auth_value: environment variable "SECRET_TOKEN" is not set`,
			bad + ": 3 errors, 0 warnings",
		}},
		{name: "separator from env", path: bad, env: map[string]string{"OK_URL": "http://a/", "SECRET_TOKEN": "x", "MCP_TOOL_PREFIX_SEPARATOR": "__"},
			code: 1, lines: []string{
				bad + ":3: error: mcp_servers.my-server.url must be",
				bad + ": 1 error, 0 warnings",
			}},
		{name: "missing file", path: filepath.Join(t.TempDir(), "nope.yaml"), code: 1, lines: []string{"nope.yaml: error: config: open "}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			code := run(context.Background(), []string{"check", "--config", tc.path}, &out, io.Discard, envOf(tc.env))
			if code != tc.code {
				t.Errorf("exit %d, want %d", code, tc.code)
			}
			got := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
			if len(got) != len(tc.lines) {
				t.Fatalf("output:\n%s\nwant %d lines", out.String(), len(tc.lines))
			}
			for i, want := range tc.lines {
				if !strings.Contains(got[i], want) {
					t.Errorf("line %d = %q, want it to contain %q", i, got[i], want)
				}
			}
		})
	}
}

// logTail decodes JSON log lines from r into lines until r ends, then closes lines.
func logTail(r io.Reader, lines chan<- map[string]any) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		var rec map[string]any
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			rec = map[string]any{"msg": "NOT JSON: " + sc.Text()}
		}
		lines <- rec
	}
	close(lines)
}

func TestServeHealthAndShutdown(t *testing.T) {
	cfgPath := writeFile(t, "c.yaml", goodConfig)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pr, pw := io.Pipe()
	lines := make(chan map[string]any, 100)
	go logTail(pr, lines)

	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"serve", "--config", cfgPath, "--host", "127.0.0.1"}, io.Discard, pw,
			envOf(map[string]string{"PORT": "0", "LOG_LEVEL": "debug"}))
		pw.Close()
	}()

	var addr string
	var logs []map[string]any
	deadline := time.After(10 * time.Second)
	for addr == "" {
		select {
		case rec, ok := <-lines:
			if !ok {
				t.Fatalf("serve exited before listening: %v (exit %d)", logs, <-done)
			}
			logs = append(logs, rec)
			if rec["msg"] == "listening" {
				addr, _ = rec["addr"].(string)
			}
		case <-deadline:
			t.Fatalf("no listening log line; logs: %v", logs)
		}
	}

	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 5 * time.Second}
	for path, want := range map[string]string{
		"/health/liveliness": "\"I'm alive!\"\n",
		"/health/readiness":  `"status":"healthy"`,
	} {
		resp, err := client.Get("http://" + addr + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(body), want) {
			t.Errorf("%s = %d %s", path, resp.StatusCode, body)
		}
	}

	cancel()
	select {
	case code := <-done:
		if code != 0 {
			t.Errorf("serve exit %d", code)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("serve did not stop")
	}
	for rec := range lines {
		logs = append(logs, rec)
	}
	var msgs []string
	for _, rec := range logs {
		msgs = append(msgs, rec["msg"].(string))
		if _, ok := rec["level"]; !ok {
			t.Errorf("log line without level: %v", rec)
		}
	}
	joined := strings.Join(msgs, "|")
	for _, want := range []string{"config problem", "listening", "shutting down", "stopped"} {
		if !strings.Contains(joined, want) {
			t.Errorf("logs %q lack %q", joined, want)
		}
	}
	if _, err := client.Get("http://" + addr + "/health/liveliness"); err == nil {
		t.Error("server still answers after shutdown")
	}
}

func TestServeBadConfigExits1(t *testing.T) {
	cfgPath := writeFile(t, "bad.yaml", "mcp_servers:\n  s:\n    auth_value: os.environ/TOKEN\n")
	var stderr bytes.Buffer
	code := run(context.Background(), []string{"serve", "--config", cfgPath, "--host", "127.0.0.1", "--port", "0"},
		io.Discard, &stderr, envOf(map[string]string{"TOKEN": "sk-very-secret"}))
	if code != exitError {
		t.Errorf("exit %d, want 1", code)
	}
	out := stderr.String()
	if !strings.Contains(out, `"line":2`) || !strings.Contains(out, "has no url") || !strings.Contains(out, "config not loaded") {
		t.Errorf("stderr = %s", out)
	}
	if strings.Contains(out, "sk-very-secret") {
		t.Error("secret in logs")
	}
}

// TestSignalExitsZero builds the real binary and checks SIGTERM drains and exits 0.
func TestSignalExitsZero(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := filepath.Join(t.TempDir(), "mcpgw")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	cfgPath := writeFile(t, "c.yaml", goodConfig)
	cmd := exec.Command(bin, "serve", "--config", cfgPath, "--host", "127.0.0.1", "--port", "0")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan map[string]any, 100)
	go logTail(stderr, lines)
	listening := false
	timeout := time.After(10 * time.Second)
	for !listening {
		select {
		case rec, ok := <-lines:
			if !ok {
				t.Fatal("binary exited before listening")
			}
			listening = rec["msg"] == "listening"
		case <-timeout:
			_ = cmd.Process.Kill()
			t.Fatal("binary did not log listening")
		}
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	for range lines {
	}
	if err := cmd.Wait(); err != nil {
		t.Errorf("exit after SIGTERM: %v", err)
	}
}

// TestQuickstartIsClean keeps examples/quickstart.yaml free of problems.
func TestQuickstartIsClean(t *testing.T) {
	var out bytes.Buffer
	path := filepath.Join("..", "..", "examples", "quickstart.yaml")
	if code := run(context.Background(), []string{"check", "--config", path}, &out, io.Discard, envOf(map[string]string{"PATH": os.Getenv("PATH")})); code != 0 {
		t.Fatalf("exit %d:\n%s", code, out.String())
	}
	if want := path + ": 0 errors, 0 warnings; 2 servers\n"; out.String() != want {
		t.Errorf("output %q, want %q", out.String(), want)
	}
}
