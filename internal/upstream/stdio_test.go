package upstream

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/mcpgw/mcpgw/internal/jsonrpc"
)

// fakeStdioServer is a legacy stdio MCP server run from the test binary, for
// faults a real server will not produce. Modes:
//
//	exit-on-call: answers the handshake and lists, exits when a tool is called
//	noisy:        writes junk lines and stderr chatter around its answers
func fakeStdioServer(mode string) int {
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(nil, 1<<20)
	out := bufio.NewWriter(os.Stdout)
	reply := func(b []byte) {
		out.Write(b)
		out.WriteByte('\n')
		out.Flush()
	}
	for in.Scan() {
		m, err := jsonrpc.Decode(in.Bytes())
		if err != nil {
			return 2
		}
		if mode == "noisy" {
			fmt.Fprintln(os.Stderr, "debug: got", m.Method, strings.Repeat("x", 3000))
			fmt.Fprintln(os.Stdout, "this is not JSON")
		}
		switch m.Method {
		case "server/discover":
			reply(jsonrpc.EncodeError(m.ID, &jsonrpc.Error{Code: -32601, Message: "Method not found"}))
		case "initialize":
			reply(jsonrpc.EncodeResult(m.ID, initResult("2025-11-25")))
		case "tools/list":
			reply(toolsPage(m.ID, "boom"))
		case "tools/call":
			if mode == "exit-on-call" {
				return 3
			}
			reply(jsonrpc.EncodeResult(m.ID, json.RawMessage(`{"content":[]}`)))
		case "":
		default:
			reply(jsonrpc.EncodeError(m.ID, &jsonrpc.Error{Code: -32601, Message: "Method not found"}))
		}
	}
	return 0
}

func fakeStdioConfig(t *testing.T, mode string) Config {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return Config{Name: "fake", Transport: TransportStdio, Command: exe, Args: []string{"-test.run=^$"},
		Env: []string{"MCPGW_FAKE_STDIO=" + mode}}
}

func TestStdioChildExitsMidCall(t *testing.T) {
	c := newClient(t, fakeStdioConfig(t, "exit-on-call"))
	ctx := context.Background()
	if _, err := c.ListTools(ctx, Options{}); err != nil {
		t.Fatal(err)
	}
	_, err := c.CallTool(ctx, "boom", json.RawMessage(`{}`), Options{})
	var ce *ConnectionError
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), "exited") {
		t.Fatalf("err = %v, want an unreachable (process exited) error", err)
	}
	// Right away: the backoff refuses to respawn in a tight loop.
	_, err = c.ListTools(ctx, Options{})
	if err == nil || !strings.Contains(err.Error(), "restart") {
		t.Fatalf("immediate retry: err = %v, want a backoff refusal", err)
	}
	// After the backoff, the next use restarts the child.
	deadline := time.Now().Add(5 * time.Second)
	for {
		tools, err := c.ListTools(ctx, Options{})
		if err == nil {
			if len(tools) != 1 {
				t.Fatalf("tools = %s", tools)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("child never restarted: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestStdioToleratesNoise(t *testing.T) {
	c := newClient(t, fakeStdioConfig(t, "noisy"))
	if _, err := c.CallTool(context.Background(), "boom", json.RawMessage(`{}`), Options{}); err != nil {
		t.Fatal(err)
	}
}

func TestStdioCloseStopsChild(t *testing.T) {
	c, err := New(fakeStdioConfig(t, "noisy"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.ListTools(context.Background(), Options{}); err != nil {
		t.Fatal(err)
	}
	var pid int
	for _, s := range c.sessions {
		pid = s.transport().(*stdioTransport).cmd.Process.Pid
	}
	if err := c.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := processAlive(pid); err == nil {
		t.Fatalf("child %d still running after Close", pid)
	}
	if _, err := c.ListTools(context.Background(), Options{}); !errors.Is(err, ErrClosed) {
		t.Fatalf("after Close: %v", err)
	}
}
