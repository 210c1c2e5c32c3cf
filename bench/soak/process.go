package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// figures is one reading of the gateway process. Goroutines is -1 when the
// binary serves no debug figures.
type figures struct {
	RSSKB, HWMKB int64
	FDs          int
	Goroutines   int
	HeapInuse    uint64
	Alive        bool
}

// maxOf keeps the larger of each figure.
func (f *figures) maxOf(o figures) {
	f.RSSKB = max(f.RSSKB, o.RSSKB)
	f.HWMKB = max(f.HWMKB, o.HWMKB)
	f.FDs = max(f.FDs, o.FDs)
	f.Goroutines = max(f.Goroutines, o.Goroutines)
	f.HeapInuse = max(f.HeapInuse, o.HeapInuse)
	f.Alive = f.Alive || o.Alive
}

// logCount counts what the gateway writes on stderr and keeps its tail.
type logCount struct {
	lines, bytes atomic.Int64
	mu           sync.Mutex
	tail         []byte
}

func (l *logCount) Write(p []byte) (int, error) {
	l.bytes.Add(int64(len(p)))
	l.lines.Add(int64(bytes.Count(p, []byte{'\n'})))
	l.mu.Lock()
	l.tail = append(l.tail, p...)
	if len(l.tail) > 8<<10 {
		l.tail = append(l.tail[:0], l.tail[len(l.tail)-4<<10:]...)
	}
	l.mu.Unlock()
	return len(p), nil
}

// lastLines returns up to n of the last complete log lines.
func (l *logCount) lastLines(n int) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	lines := strings.Split(strings.TrimRight(string(l.tail), "\n"), "\n")
	if len(lines) > 0 && len(l.tail) > 4<<10 {
		lines = lines[1:] // the first may be cut
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return lines
}

// gateway is one running `mcpgw serve` child.
type gateway struct {
	cmd      *exec.Cmd
	pid      int
	addr     string // 127.0.0.1:PORT
	url      string // http://127.0.0.1:PORT
	debug    string // debug figures address, "" when not served
	log      *logCount
	exited   chan struct{}
	exitErr  error
	killedKB atomic.Int64 // VmRSS at which the harness killed it
	client   *http.Client
}

// startGateway writes cfg and starts the gateway of r's scenario on a free
// loopback port (runScenario stops it). env adds to the minimal environment
// the gateway gets.
func (h *harness) startGateway(r *result, cfg string, env ...string) (*gateway, error) {
	dir := filepath.Join(h.tmp, r.name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	cfgPath := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		return nil, err
	}
	port, dport := freePort(), freePort()
	g := &gateway{addr: "127.0.0.1:" + strconv.Itoa(port), log: &logCount{}, exited: make(chan struct{})}
	g.url = "http://" + g.addr
	g.debug = "127.0.0.1:" + strconv.Itoa(dport)
	g.client = newClient(64)
	cmd := exec.Command(h.bin, "serve", "--config", cfgPath, "--host", "127.0.0.1", "--port", strconv.Itoa(port), "--data-dir", filepath.Join(dir, "data"))
	cmd.Dir = dir
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "LITELLM_SALT_KEY=" + h.salt,
		"MCPGW_SOAK_DEBUG_ADDR=" + g.debug}, env...)
	for _, k := range []string{"GOGC", "GOMEMLIMIT"} { // the gateway's GC settings, to compare them
		if v, ok := os.LookupEnv(k); ok {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
	}
	cmd.Stdout = io.Discard
	cmd.Stderr = g.log
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	g.cmd, g.pid = cmd, cmd.Process.Pid
	r.g = g
	go func() {
		g.exitErr = cmd.Wait()
		close(g.exited)
	}()
	if err := waitDial(g.addr, 20*time.Second, g.exited); err != nil {
		return nil, fmt.Errorf("gateway did not start: %w; log tail: %s", err, strings.Join(g.log.lastLines(3), " | "))
	}
	if waitDial(g.debug, 2*time.Second, g.exited) != nil {
		g.debug = ""
		logf("the gateway serves no debug figures (not built with -tags soakdebug): goroutines and heap are not measured")
	}
	return g, nil
}

func (g *gateway) alive() bool {
	select {
	case <-g.exited:
		return false
	default:
		return true
	}
}

// stop ends the gateway: SIGTERM, then SIGKILL after 3 s.
func (g *gateway) stop() {
	g.client.CloseIdleConnections()
	if !g.alive() {
		return
	}
	_ = g.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-g.exited:
	case <-time.After(3 * time.Second):
		_ = g.cmd.Process.Kill()
		<-g.exited
	}
}

// death describes how the gateway ended, or "" while it runs.
func (g *gateway) death() string {
	if g.alive() {
		return ""
	}
	if kb := g.killedKB.Load(); kb > 0 {
		return fmt.Sprintf("killed by the harness at %s MB VmRSS (-rss-limit)", mb(kb*1024))
	}
	return fmt.Sprintf("gateway died (%v)", g.exitErr)
}

// measure reads the process's figures; gc asks the gateway to collect first
// (so what is left is what it holds, not uncollected garbage).
func (g *gateway) measure(gc bool) figures {
	f := figures{Goroutines: -1}
	if !g.alive() {
		return f
	}
	if g.debug != "" {
		path := "/"
		if gc {
			path = "/gc"
		}
		c := http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true}}
		if resp, err := c.Get("http://" + g.debug + path); err == nil {
			var d struct {
				Goroutines int    `json:"goroutines"`
				HeapInuse  uint64 `json:"heap_inuse"`
			}
			if json.NewDecoder(resp.Body).Decode(&d) == nil {
				f.Goroutines, f.HeapInuse = d.Goroutines, d.HeapInuse
			}
			resp.Body.Close()
		}
	}
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", g.pid))
	if err != nil {
		return f
	}
	f.Alive = true
	f.RSSKB = statusKB(status, "VmRSS:")
	f.HWMKB = statusKB(status, "VmHWM:")
	if ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", g.pid)); err == nil {
		f.FDs = len(ents)
	}
	return f
}

// readChar returns the bytes the process has read through read(2) and
// friends (sockets included), from /proc/PID/io.
func (g *gateway) readChar() int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/io", g.pid))
	if err != nil {
		return -1
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "rchar:"); ok {
			n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return n
		}
	}
	return -1
}

func statusKB(status []byte, key string) int64 {
	for _, line := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, key); ok {
			n, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return n
		}
	}
	return 0
}

// sample reads the figures every 250 ms until the returned stop is called,
// keeping the maximum; it kills the gateway when VmRSS passes limitKB.
func (g *gateway) sample(limitKB int64) (stop func() figures) {
	ctx, cancel := context.WithCancel(context.Background())
	peak := figures{Goroutines: -1}
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(250 * time.Millisecond)
		defer t.Stop()
		for {
			f := g.measure(false)
			peak.maxOf(f)
			if f.RSSKB > limitKB && g.alive() {
				g.killedKB.Store(f.RSSKB)
				_ = g.cmd.Process.Kill()
			}
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	return func() figures {
		cancel()
		<-done
		return peak
	}
}

// freePort returns a loopback TCP port that was free a moment ago.
func freePort() int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// waitDial waits until addr accepts connections, within d.
func waitDial(addr string, d time.Duration, gone <-chan struct{}) error {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			c.Close()
			return nil
		}
		select {
		case <-gone:
			return fmt.Errorf("the process exited")
		case <-time.After(50 * time.Millisecond):
		}
	}
	return fmt.Errorf("%s not accepting after %s", addr, d)
}

// startFixture starts the go-sdk everything-server on a free port and
// returns its /mcp URL.
func (h *harness) startFixture(stateless bool) (url string, stop func(), err error) {
	if h.fixture == "" {
		return "", nil, errNoFixture
	}
	addr := "127.0.0.1:" + strconv.Itoa(freePort())
	cmd := exec.Command(h.fixture, "-http", addr, "-stateless="+strconv.FormatBool(stateless))
	cmd.Stdout, cmd.Stderr = io.Discard, io.Discard
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return "", nil, err
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	stop = func() {
		_ = cmd.Process.Kill()
		<-exited
	}
	if err := waitDial(addr, 20*time.Second, exited); err != nil {
		stop()
		return "", nil, fmt.Errorf("fixture: %w", err)
	}
	return "http://" + addr + "/mcp", stop, nil
}
