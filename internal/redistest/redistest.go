// Package redistest gives tests a Redis: the shared throwaway server that MCPGW_TEST_REDIS_URL
// names (scripts/redis.sh starts one), or a redis-server of the test's own that it can stop and
// restart mid-test. Either way the test is skipped when no Redis can be had, and fails instead
// when MCPGW_REQUIRE_PEERS=1. Only tests import it.
package redistest

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
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

// EnvURL names the environment variable holding the shared test server's URL.
const EnvURL = "MCPGW_TEST_REDIS_URL"

// envRequire, set to 1, turns a missing Redis into a failure instead of a skip (CI).
const envRequire = "MCPGW_REQUIRE_PEERS"

// startTimeout bounds how long a server may take to answer PING after it is started.
const startTimeout = 10 * time.Second

// missing skips t, or fails it when MCPGW_REQUIRE_PEERS=1.
func missing(t testing.TB, msg string) {
	t.Helper()
	if os.Getenv(envRequire) == "1" {
		t.Fatal(msg + ", and " + envRequire + "=1 forbids skipping")
	}
	t.Skip(msg)
}

// URL returns the URL of a Redis the test may share with others: MCPGW_TEST_REDIS_URL when
// set, else a server of the test's own (Start). Tests sharing one server keep apart by Prefix.
func URL(t testing.TB) string {
	t.Helper()
	if u := os.Getenv(EnvURL); u != "" {
		return u
	}
	return Start(t).URL()
}

// Prefix returns a key prefix no other test uses ("mcpgwtest:<random>:").
func Prefix(t testing.TB) string {
	t.Helper()
	raw := make([]byte, 6)
	_, _ = rand.Read(raw)
	return "mcpgwtest:" + hex.EncodeToString(raw) + ":"
}

// Server is a redis-server process the test owns, on 127.0.0.1 at a port that stays the same
// across Restart, with no persistence, its directory in t.TempDir().
type Server struct {
	t    testing.TB
	bin  string
	dir  string
	port int

	mu   sync.Mutex
	proc *os.Process   // nil while stopped
	done chan struct{} // closed when proc has exited
}

// Start starts a redis-server for t, stopped at t's cleanup. Without a redis-server binary
// (on PATH or at /usr/bin/redis-server) t is skipped (failed under MCPGW_REQUIRE_PEERS=1).
func Start(t testing.TB) *Server {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		if _, serr := os.Stat("/usr/bin/redis-server"); serr != nil {
			missing(t, "no redis-server binary (apt-get install redis-server)")
		}
		bin = "/usr/bin/redis-server"
	}
	s := &Server{t: t, bin: bin, dir: t.TempDir()}
	t.Cleanup(s.Stop)
	var lastErr error
	for range 5 {
		s.port, lastErr = freePort()
		if lastErr != nil {
			continue
		}
		if lastErr = s.start(); lastErr == nil {
			return s
		}
	}
	t.Fatalf("redistest: redis-server did not start: %v", lastErr)
	return nil
}

// URL is the server's redis:// URL (database 0).
func (s *Server) URL() string { return "redis://" + s.Addr() + "/0" }

// Addr is the server's host:port.
func (s *Server) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port)) }

// Stop kills the server (SIGKILL: like a crash, no goodbye to clients) and waits for it.
// Stopping a stopped server does nothing.
func (s *Server) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc == nil {
		return
	}
	_ = s.proc.Kill()
	<-s.done
	s.proc, s.done = nil, nil
}

// Restart stops the server if it runs and starts it again on the same port, empty.
func (s *Server) Restart() {
	s.t.Helper()
	s.Stop()
	deadline := time.Now().Add(startTimeout)
	for {
		err := s.start()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("redistest: redis-server did not restart on port %d: %v", s.port, err)
		}
		time.Sleep(50 * time.Millisecond) // the port may still be held by the old process's socket
	}
}

// start runs redis-server and waits until it answers PING.
func (s *Server) start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	cmd := exec.Command(s.bin, "--bind", "127.0.0.1", "--port", strconv.Itoa(s.port), "--dir", s.dir,
		"--save", "", "--appendonly", "no", "--protected-mode", "yes", "--daemonize", "no",
		"--logfile", s.dir+"/server.log")
	if err := cmd.Start(); err != nil {
		return err
	}
	done := make(chan struct{})
	go func() { // ends when the process does
		_ = cmd.Wait()
		close(done)
	}()
	deadline := time.Now().Add(startTimeout)
	for time.Now().Before(deadline) {
		select {
		case <-done:
			log, _ := os.ReadFile(s.dir + "/server.log")
			return fmt.Errorf("redis-server exited: %s", lastLine(string(log)))
		default:
		}
		if ping(s.Addr()) {
			s.proc, s.done = cmd.Process, done
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	_ = cmd.Process.Kill()
	<-done
	return fmt.Errorf("no answer to PING within %s", startTimeout)
}

// ping reports whether a Redis at addr answers PING.
func ping(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return false
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(time.Second))
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return false
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	return err == nil && strings.TrimSpace(line) == "+PONG"
}

// freePort returns a TCP port on 127.0.0.1 that nothing listened on a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// lastLine is the last non-empty line of s.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}
