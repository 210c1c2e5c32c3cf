package upstream

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcpgw/mcpgw/internal/jsonrpc"
	"github.com/mcpgw/mcpgw/internal/mcp"
)

// fakeStdioServer is a legacy stdio MCP server run from the test binary, for
// faults a real server will not produce. Modes:
//
//	exit-on-call: answers the handshake and lists, exits when a tool is called
//	noisy:        writes junk lines and stderr chatter around its answers
//	plain:        a well-behaved server
//	hang-init:    never answers initialize (but exits when stdin closes)
//	deaf:         answers initialize, then never reads stdin again
//	garbage:      writes 20,000 junk lines and 500 stderr lines before its handshake answer
//	flood:        sends floodRequests elicitation/create requests before answering tools/call
//	big:          answers tools/call with a 500 KiB result
//	env:          a plain server whose tools/call result lists its environment
//	roots:        asks its client roots/list when a tool is called, and answers the call with that answer
//	modern-only:  speaks 2026-07-28 alone: refuses initialize, answers server/discover
//	digest:       reads slowly (sleeps after each line it reads) and answers tools/call
//	              with the length and sha256 of its arguments.data string
//	pad:          answers tools/call with a pad string of arguments.pad bytes
//
// With MCPGW_FAKE_PIDFILE set, it writes its pid there first.
func fakeStdioServer(mode string) int {
	if p := os.Getenv("MCPGW_FAKE_PIDFILE"); p != "" {
		if err := os.WriteFile(p, []byte(strconv.Itoa(os.Getpid())), 0o600); err != nil {
			return 4
		}
	}
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
		if mode == "digest" {
			time.Sleep(20 * time.Millisecond) // let the gateway fill the pipe
		}
		if mode == "noisy" {
			fmt.Fprintln(os.Stderr, "debug: got", m.Method, strings.Repeat("x", 3000))
			fmt.Fprintln(os.Stdout, "this is not JSON")
		}
		switch m.Method {
		case "server/discover":
			if mode == "modern-only" {
				reply(jsonrpc.EncodeResult(m.ID, json.RawMessage(`{"resultType":"complete","supportedVersions":["2026-07-28"],"capabilities":{"tools":{}},"serverInfo":{"name":"modern","version":"1"}}`)))
				continue
			}
			reply(jsonrpc.EncodeError(m.ID, &jsonrpc.Error{Code: -32601, Message: "Method not found"}))
		case "initialize":
			if mode == "modern-only" {
				reply(jsonrpc.EncodeError(m.ID, &jsonrpc.Error{Code: -32601, Message: "Method not found"}))
				continue
			}
			if mode == "garbage" {
				for range 20000 {
					fmt.Fprintln(out, "garbage, not JSON")
				}
				for range 500 {
					fmt.Fprintln(os.Stderr, "stderr chatter")
				}
			}
			if mode == "hang-init" {
				continue
			}
			reply(jsonrpc.EncodeResult(m.ID, initResult("2025-11-25")))
			if mode == "deaf" {
				time.Sleep(30 * time.Second)
				return 0
			}
		case "tools/list":
			reply(toolsPage(m.ID, "boom"))
		case "tools/call":
			if mode == "exit-on-call" {
				return 3
			}
			if mode == "flood" {
				for i := range floodRequests {
					reply(jsonrpc.EncodeRequest(jsonrpc.IntID(int64(1000+i)), "elicitation/create", json.RawMessage(`{"message":"?"}`)))
				}
			}
			if mode == "big" {
				reply(jsonrpc.EncodeResult(m.ID, json.RawMessage(`{"content":[],"pad":"`+strings.Repeat("x", 500<<10)+`"}`)))
				continue
			}
			if mode == "roots" {
				reply(jsonrpc.EncodeRequest(jsonrpc.IntID(900), "roots/list", json.RawMessage(`{}`)))
				if !in.Scan() {
					return 5
				}
				reply(jsonrpc.EncodeResult(m.ID, json.RawMessage(`{"content":[],"rootsAnswer":`+string(in.Bytes())+`}`)))
				continue
			}
			if mode == "digest" || mode == "pad" {
				result, ok := fakeArgsAnswer(mode, m.Params)
				if !ok {
					return 6
				}
				reply(jsonrpc.EncodeResult(m.ID, result))
				continue
			}
			if mode == "env" {
				env, _ := json.Marshal(os.Environ())
				reply(jsonrpc.EncodeResult(m.ID, json.RawMessage(`{"content":[],"env":`+string(env)+`}`)))
				continue
			}
			reply(jsonrpc.EncodeResult(m.ID, json.RawMessage(`{"content":[]}`)))
		case "":
		default:
			reply(jsonrpc.EncodeError(m.ID, &jsonrpc.Error{Code: -32601, Message: "Method not found"}))
		}
	}
	return 0
}

// fakeArgsAnswer is the tools/call result of the digest and pad modes, made
// from the call's arguments; ok is false when params do not parse.
func fakeArgsAnswer(mode string, params json.RawMessage) (result json.RawMessage, ok bool) {
	var p struct {
		Arguments struct {
			Data string `json:"data"`
			Pad  int    `json:"pad"`
		} `json:"arguments"`
	}
	if err := json.Unmarshal(params, &p); err != nil {
		return nil, false
	}
	if mode == "pad" {
		return json.RawMessage(`{"content":[],"pad":"` + strings.Repeat("x", p.Arguments.Pad) + `"}`), true
	}
	sum := sha256.Sum256([]byte(p.Arguments.Data))
	return json.RawMessage(fmt.Sprintf(`{"content":[],"len":%d,"sha256":%q}`, len(p.Arguments.Data), hex.EncodeToString(sum[:]))), true
}

func fakeStdioConfig(t *testing.T, mode string) Config {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return Config{Name: "fake", Transport: TransportStdio, Command: exe, Args: []string{"-test.run=^$"},
		Env: []string{"MCPGW_FAKE_STDIO=" + mode}}
}

// fakeStdioWithPID is fakeStdioConfig for a child that reports its pid; pid
// waits for the report.
func fakeStdioWithPID(t *testing.T, mode string) (cfg Config, pid func() int) {
	pidfile := filepath.Join(t.TempDir(), "pid")
	cfg = fakeStdioConfig(t, mode)
	cfg.Env = append(cfg.Env, "MCPGW_FAKE_PIDFILE="+pidfile)
	return cfg, func() int {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			if b, err := os.ReadFile(pidfile); err == nil && len(b) > 0 {
				pid, err := strconv.Atoi(string(b))
				if err != nil {
					t.Fatal(err)
				}
				return pid
			}
		}
		t.Fatal("the fake child never reported its pid")
		return 0
	}
}

// waitGone waits for a process to be gone (stopped and reaped).
func waitGone(t *testing.T, pid int) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); processAlive(pid) == nil; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("child %d still running", pid)
		}
	}
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

// A child that stops reading its stdin must not wedge the client: a request
// too large for the pipe returns on its caller's deadline, and Close returns
// within its own.
func TestStdioBlockedWriteHonoursDeadlines(t *testing.T) {
	cfg, pidOf := fakeStdioWithPID(t, "deaf")
	cfg.ProtocolVersion = "2025-11-25"
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Info(context.Background(), Options{}); err != nil {
		t.Fatal(err)
	}
	pid := pidOf()
	big := json.RawMessage(`{"blob":"` + strings.Repeat("x", 1<<20) + `"}`)
	done := make(chan error, 1)
	start := time.Now()
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		_, err := c.CallTool(ctx, "t", big, Options{})
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("err = %v, want the caller's deadline", err)
		}
		if elapsed := time.Since(start); elapsed > 2*time.Second {
			t.Errorf("call returned after %s, want about 300ms", elapsed)
		}
	case <-time.After(5 * time.Second):
		killProcess(pid) // unblock the write so the test can end
		<-done
		_ = c.Close(context.Background())
		t.Fatal("a blocked write ignored the caller's deadline")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	start = time.Now()
	closed := make(chan struct{})
	go func() {
		defer close(closed)
		_ = c.Close(ctx)
	}()
	select {
	case <-closed:
		if elapsed := time.Since(start); elapsed > 1500*time.Millisecond {
			t.Errorf("Close took %s with a 1s context", elapsed)
		}
	case <-time.After(5 * time.Second):
		killProcess(pid)
		<-closed
		t.Fatal("Close hung behind a blocked write")
	}
	waitGone(t, pid)
}

// The gateway's own stops (an ephemeral session ending, a dropped session)
// are not crashes: they must not put the next start behind the backoff.
func TestStdioOwnStopsAreNotCrashes(t *testing.T) {
	var logs logBuffer
	cfg := fakeStdioConfig(t, "plain")
	cfg.Logger = logs.logger()
	c := newClient(t, cfg)
	for i := range 3 {
		if _, err := c.CallTool(context.Background(), "t", json.RawMessage(`{}`), Options{Ephemeral: true}); err != nil {
			t.Fatalf("ephemeral call %d: %v", i, err)
		}
	}
	if w := logs.lines("WARN", "upstream process exited"); len(w) != 0 {
		t.Fatalf("stopping our own children was logged as exits: %v", w)
	}
	// A child that really crashes still backs off.
	crash := newClient(t, fakeStdioConfig(t, "exit-on-call"))
	if _, err := crash.CallTool(context.Background(), "boom", json.RawMessage(`{}`), Options{Ephemeral: true}); err == nil {
		t.Fatal("expected the crash to fail the call")
	}
	if _, err := crash.CallTool(context.Background(), "boom", json.RawMessage(`{}`), Options{Ephemeral: true}); err == nil || !strings.Contains(err.Error(), "restart") {
		t.Fatalf("immediate retry after a crash: err = %v, want a backoff refusal", err)
	}
}

// A success clears the backoff a crash set, not only the crash count.
func TestStdioSuccessClearsBackoff(t *testing.T) {
	c := newClient(t, fakeStdioConfig(t, "exit-on-call"))
	ctx := context.Background()
	a := Options{Header: http.Header{"X-Caller": {"a"}}}
	b := Options{Header: http.Header{"X-Caller": {"b"}}}
	for _, o := range []Options{a, b} { // one child per caller
		if _, err := c.ListTools(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.CallTool(ctx, "boom", json.RawMessage(`{}`), a); err == nil {
		t.Fatal("expected a's child to crash")
	}
	if _, err := c.ListTools(ctx, b); err != nil { // b's child still works
		t.Fatal(err)
	}
	if _, err := c.ListTools(ctx, a); err != nil {
		t.Fatalf("after a success, a restart was still refused: %v", err)
	}
}

// Close while a handshake is pending aborts it and leaves no child behind.
func TestCloseDuringStdioSetupLeavesNothingRunning(t *testing.T) {
	cfg, pidOf := fakeStdioWithPID(t, "hang-init")
	cfg.ProtocolVersion = "2025-11-25"
	cfg.RequestTimeout = 3 * time.Second
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := c.ListTools(context.Background(), Options{})
		done <- err
	}()
	pid := pidOf()
	time.Sleep(100 * time.Millisecond) // let the initialize reach the child
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	start := time.Now()
	if err := c.Close(ctx); err != nil {
		t.Errorf("Close: %v", err)
	}
	if elapsed := time.Since(start); elapsed > 1500*time.Millisecond {
		t.Errorf("Close waited %s for a pending handshake", elapsed)
	}
	if err := <-done; !errors.Is(err, ErrClosed) {
		t.Errorf("the caller whose setup Close cut short got %v, want ErrClosed", err)
	}
	if err := processAlive(pid); err == nil {
		t.Fatalf("child %d still running after Close", pid)
	}
}

// TestStdioLegacyCallerModernOnlyChild: a legacy caller's session on a stdio
// upstream in auto mode starts with the legacy handshake; a child that
// refuses it (it speaks only 2026-07-28) is replaced by one spoken to in the
// modern era, and the call succeeds.
func TestStdioLegacyCallerModernOnlyChild(t *testing.T) {
	c := newClient(t, fakeStdioConfig(t, "modern-only"))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	opts := Options{LegacyCaller: true}
	if _, err := c.CallTool(ctx, "boom", json.RawMessage(`{}`), opts); err != nil {
		t.Fatal(err)
	}
	info, err := c.Info(ctx, opts)
	if err != nil || info.Era != mcp.EraModern {
		t.Fatalf("era = %v, err %v; want modern after the refused handshake", info.Era, err)
	}
	if c.deps.legacyCallerSession(opts) {
		t.Fatal("the next legacy caller would start another child to be refused again")
	}
}

// Concurrent messages too large for the pipe go partly through the writer
// goroutine, which finishes one while the next caller waits for stdin: each
// must reach the child with its own bytes (the writer's buffer is handed
// back only after its write). Half of them fit the kept buffer (reuseMax)
// and half do not, so both buffer lifetimes are crossed.
func TestStdioConcurrentPartialWritesKeepTheirBytes(t *testing.T) {
	c := newClient(t, fakeStdioConfig(t, "digest"))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, err := c.Info(ctx, Options{}); err != nil {
		t.Fatal(err)
	}
	sizes := []int{300 << 10, 60 << 10, 300<<10 + 1, 60<<10 + 1, 300<<10 + 2, 60<<10 + 2, 300<<10 + 3, 60<<10 + 3}
	errs := make(chan error, len(sizes))
	for i, n := range sizes {
		data := strings.Repeat(string(rune('a'+i)), n)
		args, err := json.Marshal(map[string]string{"data": data})
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256([]byte(data))
		want := hex.EncodeToString(sum[:])
		go func() {
			res, err := c.CallTool(ctx, "t", args, Options{})
			if err != nil {
				errs <- fmt.Errorf("call %d: %w", i, err)
				return
			}
			var got struct {
				Len    int    `json:"len"`
				SHA256 string `json:"sha256"`
			}
			if err := json.Unmarshal(res.Raw, &got); err != nil {
				errs <- fmt.Errorf("call %d: %w", i, err)
				return
			}
			if got.Len != n || got.SHA256 != want {
				errs <- fmt.Errorf("call %d: the child got %d bytes with sha256 %.12s, want %d bytes with %.12s", i, got.Len, got.SHA256, n, want)
				return
			}
			errs <- nil
		}()
	}
	for range sizes {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}

// A line longer than the reader's bufio buffer is gathered apart; the next
// line on the same stream must start from nothing.
func TestStdioLongLineThenShort(t *testing.T) {
	c := newClient(t, fakeStdioConfig(t, "pad"))
	for i, pad := range []int{200 << 10, 10, 100 << 10, 3} {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		res, err := c.CallTool(ctx, "t", json.RawMessage(fmt.Sprintf(`{"pad":%d}`, pad)), Options{})
		cancel()
		if err != nil {
			t.Fatalf("call %d (pad %d): %v", i, pad, err)
		}
		var got struct {
			Pad string `json:"pad"`
		}
		if err := json.Unmarshal(res.Raw, &got); err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
		if got.Pad != strings.Repeat("x", pad) {
			t.Fatalf("call %d: pad of %d bytes, want %d", i, len(got.Pad), pad)
		}
	}
}
