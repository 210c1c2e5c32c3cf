package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// gatewayBinary builds cmd/mcpgw into a temporary directory.
func gatewayBinary(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "mcpgw")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/mcpgw")
	cmd.Dir = filepath.Join("..", "..")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/mcpgw: %v\n%s", err, out)
	}
	return bin
}

// servedBinary is `mcpgw serve` running as its own process.
type servedBinary struct {
	cmd  *exec.Cmd
	base string
}

// serveBinary runs `bin serve` on cfgPath (a free port on 127.0.0.1) until
// the test ends, and waits until it listens.
func serveBinary(t *testing.T, bin, cfgPath string) *servedBinary {
	t.Helper()
	cmd := exec.Command(bin, "serve", "--config", cfgPath, "--host", "127.0.0.1", "--port", "0", "--data-dir", t.TempDir())
	cmd.Env = append(os.Environ(), "LOG_LEVEL=info")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	addr := make(chan string, 1)
	logged := make(chan struct{})
	go func() {
		defer close(logged)
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			var rec map[string]any
			if json.Unmarshal(sc.Bytes(), &rec) != nil {
				continue
			}
			if a, _ := rec["addr"].(string); rec["msg"] == "listening" && a != "" {
				addr <- "http://" + a
			}
		}
		_, _ = io.Copy(io.Discard, stderr)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		<-logged
	})
	select {
	case base := <-addr:
		return &servedBinary{cmd: cmd, base: base}
	case <-time.After(20 * time.Second):
		t.Fatal("mcpgw serve did not log listening")
	}
	return nil
}

// readiness is /health/readiness's config detail.
func (g *servedBinary) readiness(t *testing.T) (int64, string) {
	t.Helper()
	resp, err := http.Get(g.base + "/health/readiness")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct {
		Config struct {
			Generation      int64  `json:"generation"`
			LastReloadError string `json:"last_reload_error"`
		} `json:"config"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatal(err)
	}
	return body.Config.Generation, body.Config.LastReloadError
}

// waitReadiness polls readiness until ok holds, for up to 10 s.
func (g *servedBinary) waitReadiness(t *testing.T, what string, ok func(gen int64, lastErr string) bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		gen, lastErr := g.readiness(t)
		if ok(gen, lastErr) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: readiness config is generation %d, last error %q", what, gen, lastErr)
		}
	}
}

// soakState is what one rewrite of the soak's config file says.
type soakState struct {
	otherURL  int  // the query version of other's url
	otherDesc int  // the revision in other's description
	extra     bool // the third server is configured
	invalid   int  // 1..3: an invalid file of that kind; 0: a valid one
}

// yaml is the config file for s: keep never changes.
func (s soakState) yaml(keep, other, extra string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "general_settings:\n  master_key: %s\n  mcp_advertised_versions: [\"2025-11-25\", \"2026-07-28\"]\nmcp_servers:\n", testKey)
	server := func(name, url, more string) {
		fmt.Fprintf(&b, "  %s:\n    url: %s\n    transport: http\n    protocol_version: \"2026-07-28\"\n%s", name, url, more)
	}
	server("keep", keep, "")
	server("other", fmt.Sprintf("%s?v=%d", other, s.otherURL), fmt.Sprintf("    description: revision %d\n", s.otherDesc))
	if s.extra {
		server("extra", extra, "")
	}
	switch s.invalid {
	case 1:
		b.WriteString("  broken: [\n") // not YAML
	case 2:
		b.WriteString("  broken:\n    url: http://127.0.0.1:1/mcp\n    transport: carrier-pigeon\n")
	case 3:
		b.WriteString("  broken:\n    description: neither a url nor a command\n")
	}
	return b.String()
}

// soakNext is the soak's rewrite i (1-based) after prev: every tenth,
// offset by five, is invalid; the others change other's url, other's
// description, add or remove extra, in turn.
func soakNext(prev soakState, i int) soakState {
	next := prev
	next.invalid = 0
	if i%10 == 5 {
		next.invalid = 1 + (i/10)%3
		return next
	}
	switch i % 4 {
	case 0:
		next.otherURL = i
	case 1:
		next.otherDesc = i
	case 2:
		next.extra = !prev.extra
	case 3:
		next.otherURL, next.otherDesc = i, i
	}
	return next
}

// writeAtomically replaces path's content as editors do: a new file
// renamed over it.
func writeAtomically(t *testing.T, path, content string) {
	t.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// soakCalls counts a load's calls and keeps the first failures.
type soakCalls struct {
	ok     atomic.Int64
	failed atomic.Int64
	mu     sync.Mutex
	first  []string
}

func (c *soakCalls) record(failure string) {
	if failure == "" {
		c.ok.Add(1)
		return
	}
	c.failed.Add(1)
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.first) < 5 {
		c.first = append(c.first, failure)
	}
}

// soakCall sends one tools/call and says what failed ("" when nothing).
func soakCall(ctx context.Context, hc *http.Client, url string, hdr map[string]string, body string) string {
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := hc.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return "" // the soak ended
		}
		return err.Error()
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || !strings.Contains(string(raw), `"result"`) || strings.Contains(string(raw), `"isError":true`) || !strings.Contains(string(raw), "simple") {
		if ctx.Err() != nil {
			return ""
		}
		return fmt.Sprintf("%d %s", resp.StatusCode, clipString(string(raw), 200))
	}
	return ""
}

func clipString(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// TestReloadSoak: the real binary serves tools/call at C=10 against a server
// whose config never changes (seven callers of the 2026-07-28 era on /mcp,
// three legacy sessions on /keep/mcp with their GET streams open, and an
// /mcp/sse connection whose key sees only that server) while its
// config file is rewritten 50 times: other's url and description change,
// a third server comes and goes, and one rewrite in ten is invalid. Every
// call to the unchanged server is answered; the legacy sessions keep their
// streams and upstream listeners throughout; an invalid file changes nothing
// (readiness reports it, the generation stays, tools are still listed); the
// final state is the final file's. Valid rewrites are seen by the directory
// watch, and every other one is also signalled (SIGHUP).
func TestReloadSoak(t *testing.T) {
	bin := gatewayBinary(t)
	keep, other, extra := startListenPeer(t, true), startListenPeer(t, true), startListenPeer(t, true)
	var keepListens atomic.Int64
	count := func(r *http.Request) {
		if r.Header.Get("Mcp-Method") == "subscriptions/listen" {
			keepListens.Add(1)
		}
	}
	keep.before.Store(&count)
	cfgPath := filepath.Join(t.TempDir(), "config.yaml")
	state := soakState{}
	writeAtomically(t, cfgPath, state.yaml(keep.url, other.url, extra.url))
	gw := serveBinary(t, bin, cfgPath)
	gw.waitReadiness(t, "at start", func(gen int64, lastErr string) bool { return gen == 1 && lastErr == "" })

	var streams []*legacyStream
	for range 3 {
		streams = append(streams, openLegacyGET(t, gw.base, "/keep/mcp/", testKey))
	}
	// An /mcp/sse connection sees every server its key may: this key, keep.
	sse := openLegacySSE(t, gw.base, generateKey(t, gw.base, `{"object_permission":{"mcp_servers":["keep"]}}`))
	// The four follows of keep (one upstream credential, one filter) share
	// one upstream listen.
	waitOpen(t, &keep.open, 1, 10*time.Second, "the legacy sessions' follows of keep")

	calls, stop := soakLoad(gw.base, streams)
	gen := int64(1)
	start := time.Now()
	for i := 1; i <= 50; i++ {
		state = soakNext(state, i)
		if soakRewrite(t, gw, cfgPath, i, state, state.yaml(keep.url, other.url, extra.url), gen) {
			gen++
		}
	}
	elapsed := time.Since(start)
	stop()

	t.Logf("50 rewrites (%d applied) in %v; %d calls answered, %d failed", gen-1, elapsed.Round(time.Millisecond), calls.ok.Load(), calls.failed.Load())
	if n := calls.failed.Load(); n != 0 {
		t.Errorf("%d calls to the unchanged server failed; first: %q", n, calls.first)
	}
	if calls.ok.Load() < 100 {
		t.Errorf("only %d calls were answered: the load did not run through the reloads", calls.ok.Load())
	}
	for i, s := range streams {
		s.open(fmt.Sprintf("legacy session %d's GET stream", i))
	}
	sse.open("the /mcp/sse connection")
	if n := keepListens.Load(); n != 1 {
		t.Errorf("keep was sent %d subscriptions/listen, want the 1 of the start (the follows kept, sharing it)", n)
	}
	names := modernToolNames(t, gw.base)
	if got := slices.Contains(names, "extra-test_simple_text"); got != state.extra {
		t.Errorf("the final file configures extra: %v; tools/list has it: %v (%v)", state.extra, got, names)
	}
	if !slices.Contains(names, "keep-test_simple_text") || !slices.Contains(names, "other-test_simple_text") {
		t.Errorf("final tools/list = %v", names)
	}
	streams[0].mustCall("keep-test_simple_text", "simple", "a kept legacy session after the soak")
	sse.mustCall("keep-test_simple_text", "simple", "the kept /mcp/sse connection after the soak")
}

// soakLoad calls keep-test_simple_text at C=10 until stop: seven callers
// of the 2026-07-28 era on /mcp, and one on each legacy session of streams
// (on /keep/mcp). stop returns once every caller has.
func soakLoad(base string, streams []*legacyStream) (calls *soakCalls, stop func()) {
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16}, Timeout: 30 * time.Second}
	ctx, cancel := context.WithCancel(context.Background())
	calls = &soakCalls{}
	var wg sync.WaitGroup
	for w := range 10 {
		url, hdr := base+"/mcp/", modernHeaders("tools/call", "keep-test_simple_text")
		body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"keep-test_simple_text","arguments":{},` + modernMeta + `}}`
		if w < len(streams) {
			url, hdr = base+"/keep/mcp/", legacyHeaders(testKey, streams[w].sid)
			body = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"keep-test_simple_text","arguments":{}}}`
		}
		wg.Go(func() {
			for ctx.Err() == nil {
				calls.record(soakCall(ctx, hc, url, hdr, body))
			}
		})
	}
	return calls, func() { cancel(); wg.Wait(); hc.CloseIdleConnections() }
}

// soakRewrite writes rewrite i (state, as yaml) over the config file,
// signals every other one, and waits until the gateway applied it (true),
// or refused it with nothing changed: readiness names the error, the
// generation stays gen, tools are still listed (false).
func soakRewrite(t *testing.T, gw *servedBinary, cfgPath string, i int, state soakState, yaml string, gen int64) bool {
	t.Helper()
	writeAtomically(t, cfgPath, yaml)
	if i%2 == 0 {
		if err := gw.cmd.Process.Signal(syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
	}
	if state.invalid == 0 {
		gw.waitReadiness(t, fmt.Sprintf("rewrite %d", i), func(g int64, lastErr string) bool { return g == gen+1 && lastErr == "" })
		return true
	}
	gw.waitReadiness(t, fmt.Sprintf("invalid rewrite %d", i), func(_ int64, lastErr string) bool { return lastErr != "" })
	if g, _ := gw.readiness(t); g != gen {
		t.Fatalf("invalid rewrite %d: generation %d, want %d (unchanged)", i, g, gen)
	}
	if names := modernToolNames(t, gw.base); !slices.Contains(names, "keep-test_simple_text") || !slices.Contains(names, "other-test_simple_text") {
		t.Fatalf("invalid rewrite %d: tools/list = %v", i, names)
	}
	return false
}

// modernToolNames lists the gateway's tools with one 2026-07-28 tools/list.
func modernToolNames(t *testing.T, base string) []string {
	t.Helper()
	status, _, body := rpc(t, base+"/mcp/", modernHeaders("tools/list", ""), `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{`+modernMeta+`}}`)
	if status != 200 {
		t.Fatalf("tools/list = %d %v", status, body)
	}
	return toolsOf(body)
}
