package testpeers

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

const (
	// startAttempts is how many ports a peer is tried on before giving up.
	startAttempts = 5
	// readyTimeout bounds the wait for one started peer to accept connections.
	readyTimeout = 10 * time.Second
	// maxOutput bounds the peer output kept for the failure log.
	maxOutput = 1 << 20
)

// StartGoFixtureHTTP starts the go-sdk fixture serving streamable HTTP on a free loopback port
// (stateless mode, which serves 2026-07-28, or sessionful with -stateless=false, which serves
// 2025-11-25) and returns its MCP endpoint URL. The fixture mounts its handler at the server
// root, so every path reaches it; the URL uses /mcp. The process group is killed at cleanup.
func StartGoFixtureHTTP(t testing.TB, stateless bool) string {
	t.Helper()
	bin := GoFixture(t)
	port := startPeer(t, "go-sdk everything-server", func(port int) ([]string, []string) {
		return []string{bin, "-http", "127.0.0.1:" + strconv.Itoa(port), "-stateless=" + strconv.FormatBool(stateless)}, nil
	}, func(p *proc, port int) bool { return dialable(port) }, nil)
	return "http://127.0.0.1:" + strconv.Itoa(port) + "/mcp"
}

// StartNodeEverything starts @modelcontextprotocol/server-everything on a free port (it binds all
// interfaces; the URL uses loopback) and returns its endpoint: mode "streamableHttp" gives
// http://127.0.0.1:PORT/mcp, mode "sse" gives the legacy SSE stream URL http://127.0.0.1:PORT/sse.
// The process group is killed at cleanup; its output is logged only if the test failed.
func StartNodeEverything(t testing.TB, mode string) string {
	t.Helper()
	return StartNodeEverythingPeer(t, mode).URL
}

// Peer is a started server-everything that a test may restart on the same port.
type Peer struct {
	// URL is the peer's endpoint, as StartNodeEverything returns it.
	URL string

	name    string
	port    int
	command func(port int) ([]string, []string)
	ready   func(*proc, int) bool
	mu      sync.Mutex
	cur     *proc
}

// StartNodeEverythingPeer is StartNodeEverything returning the Peer, for tests that restart it.
func StartNodeEverythingPeer(t testing.TB, mode string) *Peer {
	t.Helper()
	var path string
	switch mode {
	case "streamableHttp":
		path = "/mcp"
	case "sse":
		path = "/sse"
	default:
		t.Fatalf("testpeers: StartNodeEverything mode %q (want streamableHttp or sse)", mode)
	}
	argv := append(NodeEverything(t), mode)
	pr := &Peer{name: "server-everything " + mode,
		command: func(port int) ([]string, []string) {
			return argv, []string{"PORT=" + strconv.Itoa(port)}
		},
		ready: func(p *proc, port int) bool {
			// It prints "... on port PORT" once listening; a port taken by someone else makes it exit.
			return strings.Contains(p.out.String(), "on port "+strconv.Itoa(port)) && dialable(port)
		}}
	pr.port = startPeer(t, pr.name, pr.command, pr.ready, pr.set)
	pr.URL = "http://127.0.0.1:" + strconv.Itoa(pr.port) + path
	return pr
}

func (pr *Peer) set(p *proc) {
	pr.mu.Lock()
	pr.cur = p
	pr.mu.Unlock()
}

// Restart kills the peer and starts a new process on the same port, as an upstream that was
// redeployed; it fails the test if the new process does not become ready.
func (pr *Peer) Restart(t testing.TB) {
	t.Helper()
	pr.mu.Lock()
	old := pr.cur
	pr.mu.Unlock()
	old.stop()
	var lastOut string
	for attempt := 1; attempt <= startAttempts; attempt++ {
		argv, env := pr.command(pr.port)
		p, err := start(argv, env)
		if err != nil {
			t.Fatalf("testpeers: restart %s: %v", pr.name, err)
		}
		if p.waitReady(func() bool { return pr.ready(p, pr.port) }) {
			pr.set(p)
			t.Cleanup(p.stop)
			return
		}
		p.stop()
		lastOut = p.out.String()
		time.Sleep(200 * time.Millisecond) // the old socket may take a moment to go
	}
	t.Fatalf("testpeers: %s did not restart on port %d; last output:\n%s", pr.name, pr.port, lastOut)
}

// startPeer starts the command made for a free port until ready reports true, retrying on
// another port when the process exits or does not become ready; it returns the port.
// started, when not nil, is told the process that became ready.
func startPeer(t testing.TB, name string, command func(port int) (argv, env []string), ready func(*proc, int) bool,
	started func(*proc)) int {
	t.Helper()
	var lastOut string
	for attempt := 1; attempt <= startAttempts; attempt++ {
		port, err := freePort()
		if err != nil {
			t.Fatalf("testpeers: %v", err)
		}
		argv, env := command(port)
		p, err := start(argv, env)
		if err != nil {
			t.Fatalf("testpeers: start %s: %v", name, err)
		}
		if p.waitReady(func() bool { return ready(p, port) }) {
			if started != nil {
				started(p)
			}
			t.Cleanup(func() {
				p.stop()
				if t.Failed() {
					t.Logf("%s (port %d) output:\n%s", name, port, p.out.String())
				}
			})
			return port
		}
		p.stop()
		lastOut = p.out.String()
		t.Logf("testpeers: %s did not start on port %d (attempt %d)", name, port, attempt)
	}
	t.Fatalf("testpeers: %s did not start after %d attempts; last output:\n%s", name, startAttempts, lastOut)
	return 0
}

// proc is one running peer process.
type proc struct {
	cmd  *exec.Cmd
	out  *lockedBuffer
	done chan struct{} // closed once the process has been waited for
}

func start(argv, env []string) (*proc, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), env...)
	out := &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.WaitDelay = 2 * time.Second // a grandchild holding the output open must not block Wait
	setGroup(cmd)
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &proc{cmd: cmd, out: out, done: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// waitReady polls ready until it holds (true), the process exits or readyTimeout passes (false).
func (p *proc) waitReady(ready func() bool) bool {
	deadline := time.Now().Add(readyTimeout)
	for time.Now().Before(deadline) {
		select {
		case <-p.done:
			return false
		default:
		}
		if ready() {
			select {
			case <-p.done:
				return false
			default:
				return true
			}
		}
		time.Sleep(25 * time.Millisecond)
	}
	return false
}

// stop kills the process group and waits for the process.
func (p *proc) stop() {
	killGroup(p.cmd)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		fmt.Fprintf(os.Stderr, "testpeers: process %d did not exit after SIGKILL\n", p.cmd.Process.Pid)
	}
}

// freePort returns a loopback TCP port that was free a moment ago.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// dialable reports whether something accepts TCP connections on the loopback port.
func dialable(port int) bool {
	c, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(port), 200*time.Millisecond)
	if err != nil {
		return false
	}
	c.Close()
	return true
}

// lockedBuffer collects a process's output for the failure log, up to maxOutput bytes.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write keeps what fits under maxOutput and reports everything written.
func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if room := maxOutput - b.buf.Len(); room > 0 {
		b.buf.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

// String returns the output so far.
func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
