package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mcpgw/mcpgw/internal/testpeers"
)

const cliMasterKey = "sk-gateway-test-key-0123"

// startServe runs `mcpgw serve` (this package's run) on a free port with a fresh data dir and
// returns its base URL; the server stops when the test ends.
func startServe(t *testing.T, yaml string) string {
	t.Helper()
	cfgPath := writeFile(t, "c.yaml", yaml)
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	lines := make(chan map[string]any, 100)
	go logTail(pr, lines)
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"serve", "--config", cfgPath, "--host", "127.0.0.1", "--data-dir", t.TempDir()},
			io.Discard, pw, envOf(map[string]string{"PORT": "0"}))
		pw.Close()
	}()
	t.Cleanup(func() {
		cancel()
		for range lines {
		}
		if code := <-done; code != 0 {
			t.Errorf("serve exit %d", code)
		}
	})
	deadline := time.After(15 * time.Second)
	for {
		select {
		case rec, ok := <-lines:
			if !ok {
				t.Fatal("serve exited before listening")
			}
			if addr, _ := rec["addr"].(string); rec["msg"] == "listening" && addr != "" {
				return "http://" + addr
			}
		case <-deadline:
			t.Fatal("serve did not log listening")
		}
	}
}

// cli runs `mcpgw args...` with env and returns the exit code, stdout and stderr.
func cli(t *testing.T, env map[string]string, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), args, &stdout, &stderr, envOf(env))
	return code, stdout.String(), stderr.String()
}

// callTool sends one 2026-07-28 tools/call with key and returns the HTTP status.
func callTool(t *testing.T, base, key, tool string) int {
	t.Helper()
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"` + tool + `","arguments":{},` +
		`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},` +
		`"io.modelcontextprotocol/clientInfo":{"name":"cli-test","version":"1"}}}}`
	req, _ := http.NewRequest(http.MethodPost, base+"/mcp", strings.NewReader(body))
	for k, v := range map[string]string{"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
		"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": tool, "Authorization": "Bearer " + key} {
		req.Header.Set(k, v)
	}
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 10 * time.Second}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode == 200 && !strings.Contains(string(raw), "This is a simple text response for testing.") {
		t.Fatalf("tools/call %s: 200 without the tool's text: %s", tool, raw)
	}
	return resp.StatusCode
}

// field returns the value after "name:" in the create command's output.
func field(out, name string) string {
	for _, line := range strings.Split(out, "\n") {
		if v, ok := strings.CutPrefix(line, name+":"); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// TestKeyCommands: against a real `mcpgw serve`, key create mints a key that works on /mcp
// for its server only, key list shows it, key revoke (by alias) deletes it and it is then
// refused with 401.
func TestKeyCommands(t *testing.T) {
	fixture := testpeers.StartGoFixtureHTTP(t, true)
	base := startServe(t, "general_settings:\n  master_key: "+cliMasterKey+"\nmcp_servers:\n  fx:\n    url: "+fixture+
		"\n  other:\n    url: "+fixture+"\n")
	env := map[string]string{"MCPGW_URL": base, "LITELLM_MASTER_KEY": cliMasterKey}
	// A key's team must exist: create it through the API the CLI uses.
	req, _ := http.NewRequest(http.MethodPost, base+"/team/new", strings.NewReader(`{"team_id":"team-a"}`))
	req.Header.Set("Authorization", "Bearer "+cliMasterKey)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("/team/new = %d", resp.StatusCode)
	}

	code, out, errOut := cli(t, env, "key", "create", "--alias", "cli-app", "--servers", "fx", "--duration", "1h",
		"--team-id", "team-a", "--user-id", "alice")
	secret, token := field(out, "key"), field(out, "token")
	if code != 0 || !strings.HasPrefix(secret, "sk-") || len(token) != 64 || field(out, "alias") != "cli-app" ||
		!strings.Contains(errOut, "shown this once") {
		t.Fatalf("key create = %d\nstdout %s\nstderr %s", code, out, errOut)
	}
	if status := callTool(t, base, secret, "fx-test_simple_text"); status != 200 {
		t.Fatalf("tools/call with the created key: %d", status)
	}
	if status := callTool(t, base, secret, "other-test_simple_text"); status == 200 {
		t.Fatal("the key created for fx called the other server")
	}

	code, out, errOut = cli(t, env, "key", "list")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || len(lines) != 2 || !strings.HasPrefix(lines[0], "TOKEN") || !strings.HasPrefix(lines[1], token[:12]) ||
		strings.Join(strings.Fields(lines[1])[1:4], " ") != "cli-app team-a alice" || !strings.HasSuffix(lines[1], "false") {
		t.Fatalf("key list = %d\n%s%s", code, out, errOut)
	}
	if strings.Contains(out, secret) {
		t.Fatal("key list shows the secret")
	}
	if code, out, _ = cli(t, env, "key", "list", "--team-id", "team-b"); code != 0 || strings.Count(out, "\n") != 1 {
		t.Fatalf("key list --team-id team-b = %d\n%s", code, out)
	}
	code, out, _ = cli(t, env, "key", "list", "--json", "--user-id", "alice")
	var listed []map[string]any
	if err := json.Unmarshal([]byte(out), &listed); code != 0 || err != nil || len(listed) != 1 || listed[0]["token"] != token {
		t.Fatalf("key list --json = %d %v\n%s", code, err, out)
	}

	// An alias in use is the API's 400, printed as the API says it, exit 1.
	code, _, errOut = cli(t, env, "key", "create", "--alias", "cli-app")
	if code != exitError || !strings.Contains(errOut, "key_alias already in use") || !strings.Contains(errOut, "HTTP 400") {
		t.Fatalf("duplicate alias = %d %q", code, errOut)
	}
	// An unknown alias among the keys to revoke revokes nothing.
	code, _, errOut = cli(t, env, "key", "revoke", "cli-app", "no-such-alias")
	if code != exitError || !strings.Contains(errOut, `no key has the alias "no-such-alias"`) {
		t.Fatalf("revoke with an unknown alias = %d %q", code, errOut)
	}
	if status := callTool(t, base, secret, "fx-test_simple_text"); status != 200 {
		t.Fatalf("a failed revoke revoked the key: %d", status)
	}

	code, out, errOut = cli(t, env, "key", "revoke", "cli-app")
	if code != 0 || strings.TrimSpace(out) != "revoked "+token {
		t.Fatalf("key revoke = %d %q %q", code, out, errOut)
	}
	if status := callTool(t, base, secret, "fx-test_simple_text"); status != 401 {
		t.Fatalf("tools/call with the revoked key: %d, want 401", status)
	}
}

// TestKeyRevokeBySecretAndToken: several keys at once, named by secret and by token, with the
// master key in another variable (--master-key-env) and the URL as a flag after the keys.
func TestKeyRevokeBySecretAndToken(t *testing.T) {
	base := startServe(t, "general_settings:\n  master_key: "+cliMasterKey+"\n")
	env := map[string]string{"ADMIN_KEY": cliMasterKey}
	var secrets, tokens []string
	for range 2 {
		code, out, errOut := cli(t, env, "key", "create", "--url", base, "--master-key-env", "ADMIN_KEY", "--json")
		var m map[string]any
		if err := json.Unmarshal([]byte(out), &m); code != 0 || err != nil {
			t.Fatalf("key create --json = %d %v\n%s%s", code, err, out, errOut)
		}
		secrets, tokens = append(secrets, m["key"].(string)), append(tokens, m["token"].(string))
	}
	code, out, errOut := cli(t, env, "key", "revoke", "--master-key-env", "ADMIN_KEY", secrets[0], tokens[1], "--url", base)
	if code != 0 || out != "revoked "+tokens[0]+"\nrevoked "+tokens[1]+"\n" {
		t.Fatalf("revoke = %d %q %q", code, out, errOut)
	}
	code, out, _ = cli(t, env, "key", "list", "--url", base, "--master-key-env", "ADMIN_KEY")
	if code != 0 || strings.Count(out, "\n") != 1 {
		t.Fatalf("list after revoking both = %d\n%s", code, out)
	}
	// Revoking again: the API's 404, exit 1.
	code, _, errOut = cli(t, env, "key", "revoke", "--url", base, "--master-key-env", "ADMIN_KEY", tokens[0])
	if code != exitError || !strings.Contains(errOut, "do not exist") || !strings.Contains(errOut, "HTTP 404") {
		t.Fatalf("revoking a revoked key = %d %q", code, errOut)
	}
	// A wrong master key: the API's 401 message.
	code, _, errOut = cli(t, map[string]string{"LITELLM_MASTER_KEY": "sk-wrong"}, "key", "list", "--url", base)
	if code != exitError || !strings.Contains(errOut, "HTTP 401") {
		t.Fatalf("wrong master key = %d %q", code, errOut)
	}
}

func TestKeyCommandUsageErrors(t *testing.T) {
	env := map[string]string{"LITELLM_MASTER_KEY": cliMasterKey, "MCPGW_URL": "http://127.0.0.1:1"}
	for _, tc := range []struct {
		args []string
		env  map[string]string
		want string
	}{
		{[]string{"key"}, env, "usage:"},
		{[]string{"key", "rotate"}, env, `unknown command "rotate"`},
		{[]string{"key", "create", "--nope"}, env, "flag provided but not defined"},
		{[]string{"key", "create", "extra"}, env, `unexpected argument "extra"`},
		{[]string{"key", "list", "--master-key", cliMasterKey}, env, "flag provided but not defined"},
		{[]string{"key", "revoke"}, env, "name at least one key"},
		{[]string{"key", "list"}, map[string]string{}, "LITELLM_MASTER_KEY, which is not set"},
		{[]string{"key", "list", "--master-key-env", "NOPE"}, env, "NOPE, which is not set"},
		{[]string{"key", "list", "--url", "ftp://x"}, env, "want http(s)://"},
	} {
		code, _, errOut := cli(t, tc.env, tc.args...)
		if code != exitUsage || !strings.Contains(errOut, tc.want) {
			t.Errorf("%q: exit %d %q, want %d with %q", tc.args, code, errOut, exitUsage, tc.want)
		}
		if strings.Contains(errOut, cliMasterKey) {
			t.Errorf("%q: the master key is in the output", tc.args)
		}
	}
	// Nothing listens on port 1: a failed call, exit 1, naming the gateway's URL.
	code, _, errOut := cli(t, env, "key", "list")
	if code != exitError || !strings.Contains(errOut, "cannot reach the gateway at http://127.0.0.1:1") {
		t.Fatalf("unreachable gateway = %d %q", code, errOut)
	}
	if code, out, _ := cli(t, env, "key", "help"); code != 0 || !strings.Contains(out, "mcpgw key revoke") {
		t.Fatalf("key help = %d %q", code, out)
	}
}
