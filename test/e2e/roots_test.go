package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpgw/mcpgw/internal/testpeers"
)

// rootsSession opens a legacy session whose client offers one root.
func rootsSession(t *testing.T, endpoint, root string) *sdk.ClientSession {
	t.Helper()
	client := sdk.NewClient(&sdk.Implementation{Name: "roots-" + root, Version: "1"}, nil)
	client.AddRoots(&sdk.Root{URI: "file:///" + root, Name: root})
	tr := &sdk.StreamableClientTransport{Endpoint: endpoint, HTTPClient: &http.Client{Transport: authTransport{testKey}}}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := client.Connect(ctx, tr, &sdk.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// Two callers with the same gateway key but different roots call
// server-everything's get-roots-list, which asks the client for its roots
// once per upstream session and caches them. Caller A's roots must never
// reach a tool call made by caller B, whatever order they call in.
func TestCallerRootsNeverCrossCallers(t *testing.T) {
	t.Run("streamable-http", func(t *testing.T) {
		checkRootsIsolation(t, fmt.Sprintf("    url: %s\n", testpeers.StartNodeEverything(t, "streamableHttp")))
	})
	t.Run("stdio", func(t *testing.T) {
		argv := testpeers.NodeEverything(t)
		checkRootsIsolation(t, fmt.Sprintf("    transport: stdio\n    command: %s\n    args: [%q, stdio]\n", argv[0], argv[1]))
	})
}

func checkRootsIsolation(t *testing.T, server string) {
	yaml := fmt.Sprintf(`
general_settings:
  master_key: %s
mcp_servers:
  everything:
%s`, testKey, server)
	gw := startGateway(t, yaml, nil)
	a := rootsSession(t, gw.url+"/mcp", "alpha-workspace")
	b := rootsSession(t, gw.url+"/mcp", "beta-workspace")
	roots := func(cs *sdk.ClientSession) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "everything-get-roots-list", Arguments: map[string]any{}})
		if err != nil {
			t.Fatalf("get-roots-list: %v", err)
		}
		return textOf(res)
	}
	for i, step := range []struct {
		cs         *sdk.ClientSession
		own, other string
	}{{a, "alpha", "beta"}, {b, "beta", "alpha"}, {a, "alpha", "beta"}, {b, "beta", "alpha"}} {
		got := roots(step.cs)
		if !strings.Contains(got, "file:///"+step.own+"-workspace") || strings.Contains(got, step.other) {
			t.Fatalf("call %d by %s: roots answer %q; want only its own root", i, step.own, got)
		}
	}
}

// The same check with the real TypeScript SDK clients (v1, and v2 in legacy mode), which answer
// roots/list on the POST stream of the call that caused it.
func TestCallerRootsNeverCrossTypeScriptClients(t *testing.T) {
	node, dir := tsClients(t)
	gw := startGateway(t, fmt.Sprintf(`
general_settings:
  master_key: %s
mcp_servers:
  everything:
    url: %s
`, testKey, testpeers.StartNodeEverything(t, "streamableHttp")), nil)
	for _, sdkName := range []string{"v1", "v2"} {
		t.Run(sdkName, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), tsClientTimeout)
			defer cancel()
			cmd := exec.CommandContext(ctx, node, "roots.mjs", sdkName, gw.url+"/mcp", testKey)
			cmd.Dir = dir
			cmd.WaitDelay = 5 * time.Second
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			runErr := cmd.Run()
			var res struct {
				Answers []string `json:"answers"`
				Error   string   `json:"error"`
			}
			if err := json.Unmarshal([]byte(tsLastLine(stdout.String())), &res); err != nil || runErr != nil || res.Error != "" {
				t.Fatalf("roots.mjs %s: %v %v %s; stderr:\n%s", sdkName, runErr, err, stdout.String(), tsTail(stderr.String(), 8<<10))
			}
			own := []string{"alpha", "beta", "alpha", "beta"}
			if len(res.Answers) != len(own) {
				t.Fatalf("answers = %q", res.Answers)
			}
			for i, got := range res.Answers {
				other := own[(i+1)%2]
				if !strings.Contains(got, "file:///"+own[i]+"-workspace") || strings.Contains(got, other) {
					t.Fatalf("call %d by %s: roots answer %q; want only its own root", i, own[i], got)
				}
			}
		})
	}
}
