// Command redissoak measures limits shared through Redis under load with a replica failure: it
// builds cmd/mcpgw, starts the go-sdk fixture as the upstream and three gateway processes on one
// Redis, drives C workers of modern tools/call for a while, kills one replica with SIGKILL part
// way, and prints one markdown report: calls lost (only the killed replica's in-flight ones may
// be), the shared rpm's accuracy, and Redis commands per call. See docs/benchmarks.md.
package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
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

	"github.com/redis/go-redis/v9"
)

type options struct {
	repo, fixture, redisURL, out string
	duration, killAt             time.Duration
	workers, replicas, rpm       int
}

func main() {
	var o options
	flag.StringVar(&o.repo, "repo", ".", "the mcpgw repository")
	flag.StringVar(&o.fixture, "fixture", os.Getenv("MCPGW_GO_FIXTURE"), "the go-sdk everything-server binary")
	flag.StringVar(&o.redisURL, "redis", os.Getenv("MCPGW_TEST_REDIS_URL"), "the Redis URL (scripts/redis.sh sets MCPGW_TEST_REDIS_URL)")
	flag.StringVar(&o.out, "out", "", "also write the report to this file")
	flag.DurationVar(&o.duration, "duration", 60*time.Second, "how long the load runs")
	flag.DurationVar(&o.killAt, "kill-at", 30*time.Second, "when one replica is killed (0: never)")
	flag.IntVar(&o.workers, "c", 30, "concurrent callers")
	flag.IntVar(&o.replicas, "replicas", 3, "gateway processes")
	flag.IntVar(&o.rpm, "rpm", 600, "rpm of the limited server")
	flag.Parse()
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "redissoak:", err)
		os.Exit(1)
	}
}

// proc is a started process, killed at the end.
type proc struct {
	cmd  *exec.Cmd
	done chan struct{}
}

func start(name string, args, env []string, logTo io.Writer) (*proc, error) {
	cmd := exec.Command(name, args...)
	cmd.Env, cmd.Stdout, cmd.Stderr = env, logTo, logTo
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &proc{cmd: cmd, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(p.done) }()
	return p, nil
}

func (p *proc) kill() {
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	<-p.done
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// waitHTTP waits until url answers want.
func waitHTTP(url string, want int) error {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if resp, err := http.Get(url); err == nil {
			resp.Body.Close()
			if resp.StatusCode == want {
				return nil
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("%s did not answer %d within 30 s", url, want)
}

func run(o options) error {
	if o.fixture == "" || o.redisURL == "" {
		return errors.New("-fixture (MCPGW_GO_FIXTURE) and -redis (MCPGW_TEST_REDIS_URL) are required")
	}
	tmp, err := os.MkdirTemp("", "mcpgw-redissoak")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	bin := filepath.Join(tmp, "mcpgw")
	build := exec.Command("go", "build", "-o", bin, "./cmd/mcpgw")
	build.Dir, build.Stdout, build.Stderr = o.repo, os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		return fmt.Errorf("building mcpgw: %w", err)
	}
	logs, err := os.Create(filepath.Join(tmp, "processes.log"))
	if err != nil {
		return err
	}
	defer logs.Close()
	var procs []*proc
	defer func() {
		for _, p := range procs {
			p.kill()
		}
	}()
	fxPort, err := freePort()
	if err != nil {
		return err
	}
	fx, err := start(o.fixture, []string{"-http", "127.0.0.1:" + strconv.Itoa(fxPort), "-stateless=true"}, []string{"PATH=" + os.Getenv("PATH")}, logs)
	if err != nil {
		return err
	}
	procs = append(procs, fx)
	upstream := "http://127.0.0.1:" + strconv.Itoa(fxPort) + "/mcp"
	raw := make([]byte, 16)
	_, _ = rand.Read(raw)
	key := "sk-" + hex.EncodeToString(raw)
	cfg := fmt.Sprintf("general_settings:\n  master_key: %s\nmcp_servers:\n  fx:\n    url: %s\n    rpm: 100000000\n    max_concurrent_requests: 1000\n  lim:\n    url: %s\n    rpm: %d\n",
		key, upstream, upstream, o.rpm)
	cfgPath := filepath.Join(tmp, "config.yaml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		return err
	}
	rc, err := redisClient(o.redisURL)
	if err != nil {
		return err
	}
	defer rc.Close()
	// The limits' keys of a previous run on this Redis would count: bench/redis-soak.sh starts
	// a fresh Redis for every run.
	var gws []*proc
	var urls []string
	for i := range o.replicas {
		port, err := freePort()
		if err != nil {
			return err
		}
		env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + tmp, "REDIS_URL=" + o.redisURL,
			"LITELLM_SALT_KEY=redissoak-shared-salt-0123456789abcdef", "LOG_LEVEL=warn"}
		p, err := start(bin, []string{"serve", "--config", cfgPath, "--host", "127.0.0.1", "--port", strconv.Itoa(port),
			"--data-dir", filepath.Join(tmp, "gw"+strconv.Itoa(i))}, env, logs)
		if err != nil {
			return err
		}
		procs = append(procs, p)
		gws = append(gws, p)
		urls = append(urls, "http://127.0.0.1:"+strconv.Itoa(port))
	}
	for _, u := range urls {
		if err := waitHTTP(u+"/health/readiness", 200); err != nil {
			return err
		}
	}
	r := newRun(o, urls, key)
	// One call per replica and server first, so each replica has its upstream session.
	for i := range urls {
		r.call(i, "fx-test_simple_text")
	}
	r.reset()
	before, err := commandsProcessed(rc)
	if err != nil {
		return err
	}
	r.drive(gws)
	after, err := commandsProcessed(rc)
	if err != nil {
		return err
	}
	report := r.report(after - before - 1) // the second INFO is counted by the time it answers
	fmt.Print(report)
	if o.out != "" {
		return os.WriteFile(o.out, []byte(report), 0o644)
	}
	return nil
}

func redisClient(url string) (*redis.Client, error) {
	opt, err := redis.ParseURL(url)
	if err != nil {
		return nil, errors.New("-redis is not a redis:// URL")
	}
	return redis.NewClient(opt), nil
}

// inScript are the commands only the limits' scripts send (counted by Redis, but inside one
// EVALSHA round trip).
var inScript = map[string]bool{"zrange": true, "zremrangebyscore": true, "time": true, "zcard": true, "pexpire": true, "zadd": true}

// commandsProcessed is how many commands clients sent Redis (each a round trip, but for a
// pipelined release of several slots), from INFO commandstats, leaving out the commands the
// scripts run inside.
func commandsProcessed(rc *redis.Client) (int64, error) {
	info, err := rc.Info(context.Background(), "commandstats").Result()
	if err != nil {
		return 0, err
	}
	var n int64
	for line := range strings.Lines(info) {
		name, rest, ok := strings.Cut(strings.TrimSpace(line), ":")
		cmd, isCmd := strings.CutPrefix(name, "cmdstat_")
		if !ok || !isCmd || inScript[cmd] {
			continue
		}
		calls, _, _ := strings.Cut(strings.TrimPrefix(rest, "calls="), ",")
		v, err := strconv.ParseInt(calls, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("INFO commandstats: %q", line)
		}
		n += v
	}
	return n, nil
}

// load is one load run's state.
type load struct {
	o      options
	urls   []string
	key    string
	client *http.Client

	dead   []atomic.Bool // replicas killed
	killed atomic.Int64  // unix nanoseconds of the kill, 0 before

	ok, refused, lost, failed, limOK, limRefused atomic.Int64
	mu                                           sync.Mutex
	failures                                     map[string]int
}

func newRun(o options, urls []string, key string) *load {
	return &load{o: o, urls: urls, key: key, dead: make([]atomic.Bool, len(urls)), failures: map[string]int{},
		client: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: o.workers, MaxConnsPerHost: o.workers}, Timeout: 30 * time.Second}}
}

func (r *load) reset() {
	r.ok.Store(0)
	r.refused.Store(0)
	r.lost.Store(0)
	r.failed.Store(0)
	r.limOK.Store(0)
	r.limRefused.Store(0)
}

// call makes one modern tools/call of tool on replica i and records its outcome.
func (r *load) call(i int, tool string) {
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"` + tool + `","arguments":{},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"soak","version":"1"}}}}`
	req, _ := http.NewRequest(http.MethodPost, r.urls[i]+"/mcp", bytes.NewReader([]byte(body)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+r.key)
	req.Header.Set("MCP-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", "tools/call")
	req.Header.Set("Mcp-Name", tool)
	lim := strings.HasPrefix(tool, "lim-")
	resp, err := r.client.Do(req)
	if err != nil {
		if r.dead[i].Load() {
			r.lost.Add(1) // in flight on the replica when it was killed
		} else {
			r.fail("transport: " + err.Error())
		}
		return
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusOK && bytes.Contains(b, []byte(`"result"`)):
		r.ok.Add(1)
		if lim {
			r.limOK.Add(1)
		}
	case resp.StatusCode == http.StatusTooManyRequests:
		r.refused.Add(1)
		if lim {
			r.limRefused.Add(1)
		}
	default:
		r.fail(fmt.Sprintf("HTTP %d %.120s", resp.StatusCode, b))
	}
}

func (r *load) fail(what string) {
	r.failed.Add(1)
	r.mu.Lock()
	r.failures[what]++
	r.mu.Unlock()
}

// drive runs the workers for the duration, killing replica 0 at kill-at. Worker w calls replica
// w mod replicas, moving to the next live one once its replica is dead (a load balancer taking
// it out); every tenth call goes to the limited server.
func (r *load) drive(gws []*proc) {
	end := time.Now().Add(r.o.duration)
	var wg sync.WaitGroup
	for w := range r.o.workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; time.Now().Before(end); n++ {
				i := w % len(r.urls)
				for r.dead[i].Load() {
					i = (i + 1) % len(r.urls)
				}
				tool := "fx-test_simple_text"
				if n%10 == 0 {
					tool = "lim-test_simple_text"
				}
				r.call(i, tool)
			}
		}()
	}
	if r.o.killAt > 0 && r.o.killAt < r.o.duration {
		time.Sleep(r.o.killAt)
		r.dead[0].Store(true)
		r.killed.Store(time.Now().UnixNano())
		gws[0].kill()
	}
	wg.Wait()
}

func (r *load) report(commands int64) string {
	var b strings.Builder
	calls := r.ok.Load() + r.refused.Load() + r.lost.Load() + r.failed.Load()
	fmt.Fprintf(&b, "| figure | value |\n|---|---|\n")
	fmt.Fprintf(&b, "| run | %d replicas × C=%d for %s, replica 0 killed (SIGKILL) at %s |\n", len(r.urls), r.o.workers, r.o.duration, r.o.killAt)
	fmt.Fprintf(&b, "| tools/call answered | %d (%.0f/s): %d ok, %d refused 429 |\n", calls, float64(calls)/r.o.duration.Seconds(), r.ok.Load(), r.refused.Load())
	fmt.Fprintf(&b, "| calls lost | %d (in flight on the killed replica) |\n", r.lost.Load())
	fmt.Fprintf(&b, "| other failures | %d |\n", r.failed.Load())
	fmt.Fprintf(&b, "| limited server (rpm %d, all replicas) | %d admitted, %d refused |\n", r.o.rpm, r.limOK.Load(), r.limRefused.Load())
	fmt.Fprintf(&b, "| Redis round trips (commands sent) | %d, %.2f per tools/call |\n", commands, float64(commands)/float64(max(calls, 1)))
	r.mu.Lock()
	for what, n := range r.failures {
		fmt.Fprintf(&b, "| failure | %d × %s |\n", n, strings.ReplaceAll(what, "|", "/"))
	}
	r.mu.Unlock()
	return b.String()
}
