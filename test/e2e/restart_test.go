package e2e

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpgw/mcpgw/internal/testpeers"
)

// startEverythingOn runs server-everything (streamable HTTP) on port and returns a stop func.
func startEverythingOn(t *testing.T, port int) func() {
	t.Helper()
	argv := append(testpeers.NodeEverything(t), "streamableHttp")
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), "PORT="+strconv.Itoa(port))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.WaitDelay = 2 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	stop := func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
	}
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if c, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(port), 200*time.Millisecond); err == nil {
			c.Close()
			return stop
		}
	}
	stop()
	t.Fatalf("server-everything did not listen on port %d", port)
	return nil
}

// An upstream restarted behind a running gateway forgets its sessions and answers the stale
// Mcp-Session-Id with 400 "No valid session ID provided". The gateway starts new sessions:
// the callers' next list and call succeed without the gateway being restarted.
func TestGatewaySurvivesUpstreamRestart(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	stop := startEverythingOn(t, port)
	t.Cleanup(func() { stop() })
	gw := startGateway(t, fmt.Sprintf(`
general_settings:
  master_key: %s
mcp_servers:
  everything:
    url: http://127.0.0.1:%d/mcp
`, testKey, port), nil)
	cs := sdkSession(t, gw.url+"/mcp", "2025-11-25")
	echo := func(when string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "everything-echo", Arguments: map[string]any{"message": when}})
		if err != nil || res.IsError || !strings.Contains(textOf(res), "Echo: "+when) {
			t.Fatalf("%s: %v %+v", when, err, res)
		}
	}
	echo("before")
	stop()
	stop = startEverythingOn(t, port)
	echo("after")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tools, err := cs.ListTools(ctx, nil)
	if err != nil || !toolNames(tools.Tools)["everything-echo"] {
		t.Fatalf("tools/list after the restart: %v", err)
	}
}
