package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestCheckAgreesWithServe: check applies what serve applies at start (the
// master key rule and its escape hatch, the environment), checks that each
// stdio command can be found, and names the key a typo most likely meant.
func TestCheckAgreesWithServe(t *testing.T) {
	bin := t.TempDir()
	tool := filepath.Join(bin, "my-mcp-server")
	if err := os.WriteFile(tool, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	plain := filepath.Join(bin, "not-executable")
	if err := os.WriteFile(plain, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	const strong = "general_settings:\n  master_key: sk-Zq8vT2mW9pL4rX7nKd3\n"
	stdio := func(cmd string) string {
		return "mcp_servers:\n  s:\n    transport: stdio\n    command: " + cmd + "\n" + strong
	}
	const permit = "LITELLM_DANGEROUSLY_PERMIT_WEAK_OR_UNSET_MASTER_KEY"
	tests := []struct {
		name  string
		cfg   string
		env   map[string]string
		code  int
		lines []string // each must appear in the output, in order
	}{
		{"missing master key", "mcp_servers:\n  s:\n    url: http://127.0.0.1:1/mcp\n", nil, 1,
			[]string{": error: general_settings.master_key is unset; set a strong master key", permit + "=true", "1 error"}},
		{"short master key", "mcp_servers:\n  s:\n    url: http://127.0.0.1:1/mcp\ngeneral_settings:\n  master_key: sk-short\n", nil, 1,
			[]string{":5: error: general_settings.master_key is shorter than 16 characters"}},
		{"example master key", "general_settings:\n  master_key: sk-1234567890abcdef\n", nil, 1,
			[]string{":2: error: general_settings.master_key is a well-known example key"}},
		{"weak key permitted", "general_settings:\n  master_key: sk-1234\n", map[string]string{permit: "true"}, 0,
			[]string{"0 errors"}},
		{"unset key permitted", "mcp_servers:\n  s:\n    url: http://127.0.0.1:1/mcp\n", map[string]string{permit: "TRUE"}, 0,
			[]string{"0 errors"}},
		{"master key from env", "general_settings:\n  master_key: os.environ/MK\n", map[string]string{"MK": "sk-123"}, 1,
			[]string{":2: error: general_settings.master_key is shorter than 16 characters"}},
		{"stdio command on PATH", stdio("my-mcp-server"), map[string]string{"PATH": "/nonexistent" + string(os.PathListSeparator) + bin}, 0,
			[]string{"0 errors"}},
		{"stdio command missing from PATH", stdio("no-such-mcp-server"), map[string]string{"PATH": bin}, 1,
			[]string{`:4: error: mcp_servers.s.command: "no-such-mcp-server" is not found in PATH`}},
		{"stdio command without PATH", stdio("my-mcp-server"), nil, 1,
			[]string{`:4: error: mcp_servers.s.command: "my-mcp-server" is not found in PATH`}},
		{"stdio command path", stdio(tool), nil, 0, []string{"0 errors"}},
		{"stdio command path missing", stdio(filepath.Join(bin, "gone")), nil, 1,
			[]string{`:4: error: mcp_servers.s.command: "` + filepath.Join(bin, "gone") + `" does not exist`}},
		{"stdio command not executable", stdio(plain), nil, 1, []string{`:4: error: mcp_servers.s.command: "` + plain + `" is not executable`}},
		{"stdio command is a directory", stdio(bin), nil, 1, []string{`:4: error: mcp_servers.s.command: "` + bin + `" is a directory`}},
		{"sorted by line", "mcp_servers:\n  s:\n    transport: stdio\n    command: no-such-mcp-server\ngeneral_settings:\n  master_key: sk-short\n", nil, 1,
			[]string{":4: error: mcp_servers.s.command", ":6: error: general_settings.master_key", "2 errors"}},
		{"bad environment", strong, map[string]string{"LITELLM_MCP_CLIENT_TIMEOUT": "soon"}, 1,
			[]string{": error: LITELLM_MCP_CLIENT_TIMEOUT must be a positive number of seconds"}},
		{"typo in general_settings", "general_settings:\n  mastr_key: sk-Zq8vT2mW9pL4rX7nKd3\n", map[string]string{permit: "true"}, 0,
			[]string{`:2: warning: key "mastr_key" in general_settings is not used by mcpgw (ignored); did you mean "master_key"?`}},
		{"typo in a server", "mcp_servers:\n  s:\n    url: http://127.0.0.1:1/mcp\n    alow_elicitation: true\n" + strong, nil, 0,
			[]string{`:4: warning: key "alow_elicitation" in mcp_servers.s is not used by mcpgw (ignored); did you mean "allow_elicitation"?`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeFile(t, "c.yaml", tt.cfg)
			var out bytes.Buffer
			code := run(context.Background(), []string{"check", "--config", path}, &out, io.Discard, envOf(tt.env))
			if code != tt.code {
				t.Errorf("exit %d, want %d:\n%s", code, tt.code, out.String())
			}
			rest := out.String()
			for _, want := range tt.lines {
				i := strings.Index(rest, want)
				if i < 0 {
					t.Fatalf("output lacks %q:\n%s", want, out.String())
				}
				rest = rest[i+len(want):]
			}
			if strings.Contains(out.String(), "sk-Zq8vT2mW9pL4rX7nKd3") || strings.Contains(out.String(), "sk-123\n") {
				t.Errorf("output shows a key:\n%s", out.String())
			}
		})
	}
}

// TestCheckRefusesWhatServeRefuses: every config serve refuses to start
// with, check refuses with exit 1.
func TestCheckRefusesWhatServeRefuses(t *testing.T) {
	const strong = "general_settings:\n  master_key: sk-Zq8vT2mW9pL4rX7nKd3\n"
	tests := []struct {
		name string
		cfg  string
		env  map[string]string
	}{
		{"no master key", "mcp_servers:\n  s:\n    url: http://127.0.0.1:1/mcp\n", nil},
		{"short master key", "general_settings:\n  master_key: sk-short\n", nil},
		{"example master key", "general_settings:\n  master_key: sk-1234567890abcdef\n", nil},
		{"repetitive master key", "general_settings:\n  master_key: sk-aaaaaaaaaaaaaaaaaaaa\n", nil},
		{"digits master key", "general_settings:\n  master_key: sk-12345678901234567890\n", nil},
		{"weak key, flag not true", "general_settings:\n  master_key: sk-1234\n", map[string]string{"LITELLM_DANGEROUSLY_PERMIT_WEAK_OR_UNSET_MASTER_KEY": "yes"}},
		{"custom_auth module path", strong + "  custom_auth: my_module.auth\n", nil},
		{"server without url", "mcp_servers:\n  s:\n    transport: http\n" + strong, nil},
		{"bad client timeout", strong, map[string]string{"LITELLM_MCP_CLIENT_TIMEOUT": "-1"}},
		{"bad listing timeout", strong, map[string]string{"LITELLM_MCP_TOOL_LISTING_TIMEOUT": "x"}},
		{"bad max pages", strong, map[string]string{"MCP_TOOL_LISTING_MAX_PAGES": "0"}},
		{"unset env reference", "general_settings:\n  master_key: os.environ/NOPE\n", nil},
		{"yaml syntax", "mcp_servers: [\n", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeFile(t, "c.yaml", tt.cfg)
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			var serveErr bytes.Buffer
			if code := run(ctx, []string{"serve", "--config", path, "--host", "127.0.0.1", "--port", "0"}, io.Discard, &serveErr, envOf(tt.env)); code != exitError {
				t.Fatalf("serve exit %d; this table lists configs serve refuses:\n%s", code, serveErr.String())
			}
			var out bytes.Buffer
			if code := run(context.Background(), []string{"check", "--config", path}, &out, io.Discard, envOf(tt.env)); code != exitError {
				t.Errorf("serve refuses this config but check exits %d:\n%s\nserve said:\n%s", code, out.String(), serveErr.String())
			}
		})
	}
}
