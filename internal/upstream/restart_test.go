package upstream

import (
	"context"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcpgw/mcpgw/internal/testpeers"
)

// restartable is a real upstream process that the test kills and starts
// again on the same port, as an operator restarting the server would.
type restartable struct {
	t    *testing.T
	argv []string
	env  []string
	port int
	cmd  *exec.Cmd
}

func newRestartable(t *testing.T, argv func(port int) (args, env []string)) *restartable {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	r := &restartable{t: t, port: port}
	r.argv, r.env = argv(port)
	r.start()
	t.Cleanup(r.stop)
	return r
}

func (r *restartable) url() string { return "http://127.0.0.1:" + strconv.Itoa(r.port) + "/mcp" }

func (r *restartable) start() {
	r.t.Helper()
	cmd := exec.Command(r.argv[0], r.argv[1:]...)
	cmd.Env = append(os.Environ(), r.env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.WaitDelay = 2 * time.Second
	if err := cmd.Start(); err != nil {
		r.t.Fatal(err)
	}
	r.cmd = cmd
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		if c, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(r.port), 200*time.Millisecond); err == nil {
			c.Close()
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	r.t.Fatalf("%s did not listen on port %d", r.argv[0], r.port)
}

func (r *restartable) stop() {
	if r.cmd == nil {
		return
	}
	_ = syscall.Kill(-r.cmd.Process.Pid, syscall.SIGKILL)
	_ = r.cmd.Wait()
	r.cmd = nil
}

func (r *restartable) restart() {
	r.stop()
	r.start()
}

// A real HTTP upstream restarted behind the gateway forgets every session:
// server-everything answers 400 "No valid session ID provided" to the stale
// Mcp-Session-Id, the Go SDK fixture 404. The very next call must start a
// new session and succeed, without the client being rebuilt.
func TestRestartedRealUpstreamIsReinitialised(t *testing.T) {
	cases := []struct {
		name string
		argv func(t *testing.T) func(port int) ([]string, []string)
		tool string
		args string
		want string
	}{
		{"server-everything/streamable-http", func(t *testing.T) func(int) ([]string, []string) {
			base := testpeers.NodeEverything(t)
			return func(port int) ([]string, []string) {
				return append(append([]string{}, base...), "streamableHttp"), []string{"PORT=" + strconv.Itoa(port)}
			}
		}, "echo", `{"message":"hi"}`, "Echo: hi"},
		{"go-fixture/http-stateful", func(t *testing.T) func(int) ([]string, []string) {
			bin := testpeers.GoFixture(t)
			return func(port int) ([]string, []string) {
				return []string{bin, "-http", "127.0.0.1:" + strconv.Itoa(port), "-stateless=false"}, nil
			}
		}, "test_simple_text", `{}`, "simple text response"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			up := newRestartable(t, tc.argv(t))
			c := newClient(t, Config{Name: "up", URL: up.url(), ProtocolVersion: "2025-11-25", RequestTimeout: 20 * time.Second})
			ctx := context.Background()
			call := func(when string) {
				t.Helper()
				res, err := c.CallTool(ctx, tc.tool, []byte(tc.args), Options{})
				if err != nil {
					t.Fatalf("%s: %v", when, err)
				}
				if !strings.Contains(string(res.Raw), tc.want) {
					t.Fatalf("%s: result %s", when, res.Raw)
				}
			}
			call("before the restart")
			up.restart()
			call("first call after the restart")
			call("second call after the restart")
		})
	}
}
