package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// Pinned client versions; test/clients/package.json installs these.
var tsClientPackages = [][2]string{
	{"@modelcontextprotocol/client", "2.4.0"},
	{"@modelcontextprotocol/sdk", "1.32.2"},
}

const (
	tsSimpleText    = "This is a simple text response for testing."
	tsClientTimeout = 90 * time.Second
	tsLegacyVersion = "2025-11-25"
	tsModernVersion = "2026-07-28"
)

// tsClients returns the node binary and the test/clients folder holding matrix.mjs and its
// installed dependencies. Like internal/testpeers, a missing piece fails the test under
// MCPGW_REQUIRE_PEERS=1 and skips it otherwise.
func tsClients(t *testing.T) (node, dir string) {
	t.Helper()
	node, dir = nodeBinary(t)
	for _, p := range tsClientPackages {
		nodePackage(t, dir, p[0], p[1])
	}
	return node, dir
}

// matrixResult is the JSON line test/clients/matrix.mjs prints.
type matrixResult struct {
	Mode           string            `json:"mode"`
	Era            string            `json:"era"`
	ProtocolEra    string            `json:"protocol_era"`
	Tools          int               `json:"tools"`
	Calls          map[string]string `json:"calls"`
	Prompts        int               `json:"prompts"`
	Resources      int               `json:"resources"`
	PromptMessages int               `json:"prompt_messages"`
	ReadContents   int               `json:"read_contents"`
	Step           string            `json:"step"`
	Error          string            `json:"error"`
	Code           any               `json:"code"`
	Data           any               `json:"data"`
}

// TestTypeScriptClients drives the gateway with the real TypeScript SDK clients (v2 in legacy,
// auto and pinned-2026 modes; v1 over streamable HTTP and over the legacy HTTP+SSE transport)
// in front of upstreams of both eras: the go-sdk fixture over stdio, stateless HTTP (2026) and
// sessionful HTTP (2025), and server-everything (2025).
func TestTypeScriptClients(t *testing.T) {
	node, dir := tsClients(t)
	gw := startGateway(t, fullConfig(t), nil)
	wantCalls := map[string]string{
		"modern_fx-test_simple_text": tsSimpleText,
		"legacy_fx-test_simple_text": tsSimpleText,
		"stdio_fx-test_simple_text":  tsSimpleText,
		"everything-echo":            "Echo: hi",
	}
	cases := []struct {
		mode, path, version, era string
	}{
		{"legacy", "/mcp", tsLegacyVersion, "legacy"},
		{"modern", "/mcp", tsModernVersion, "modern"},
		{"auto", "/mcp", tsModernVersion, "modern"}, // the gateway answers server/discover
		{"v1-http", "/mcp", tsLegacyVersion, "legacy"},
		{"v1-sse", "/mcp/sse", tsLegacyVersion, "legacy"},
	}
	// Sequential on purpose: every mode spawns node and fans out to four upstreams.
	for _, tc := range cases {
		t.Run(tc.mode, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), tsClientTimeout)
			defer cancel()
			cmd := exec.CommandContext(ctx, node, "matrix.mjs", tc.mode, gw.url+tc.path, testKey)
			cmd.Dir = dir
			cmd.Env = append(os.Environ(), "MATRIX_WIRE=1")
			cmd.WaitDelay = 5 * time.Second
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			runErr := cmd.Run()
			// The wire log (what the client sent, what the gateway answered) helps only on failure.
			defer func() {
				if t.Failed() {
					t.Logf("matrix.mjs stderr (wire log):\n%s", tsTail(stderr.String(), 64<<10))
				}
			}()
			line := tsLastLine(stdout.String())
			var res matrixResult
			if err := json.Unmarshal([]byte(line), &res); err != nil {
				t.Fatalf("matrix.mjs %s: %v; stdout %q: %v", tc.mode, runErr, stdout.String(), err)
			}
			if runErr != nil || res.Error != "" {
				t.Fatalf("matrix.mjs %s failed (%v) at %q: %s (code %v, data %v)", tc.mode, runErr, res.Step, res.Error, res.Code, res.Data)
			}
			if res.Era != tc.version || res.ProtocolEra != tc.era {
				t.Errorf("negotiated %s (%s), want %s (%s)", res.Era, res.ProtocolEra, tc.version, tc.era)
			}
			for name, want := range wantCalls {
				if got, ok := res.Calls[name]; !ok || got != want {
					t.Errorf("call %s = %q (returned %v), want %q", name, got, ok, want)
				}
			}
			if res.Tools < len(wantCalls) {
				t.Errorf("tools/list: %d tools, want >= %d", res.Tools, len(wantCalls))
			}
			if res.Prompts < 1 {
				t.Errorf("prompts/list: %d prompts, want >= 1", res.Prompts)
			}
			if res.Resources < 1 {
				t.Errorf("resources/list: %d resources, want >= 1", res.Resources)
			}
			if res.PromptMessages < 1 {
				t.Errorf("prompts/get: %d messages, want >= 1", res.PromptMessages)
			}
			if res.ReadContents < 1 {
				t.Errorf("resources/read: %d contents, want >= 1", res.ReadContents)
			}
			t.Logf("%s: era %s, %d tools, %d prompts, %d resources", tc.mode, res.Era, res.Tools, res.Prompts, res.Resources)
		})
	}
}

func tsLastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

func tsTail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}
