package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpgw/mcpgw/internal/testpeers"
)

// wireTap records the JSON-RPC messages the gateway sends one upstream.
type wireTap struct {
	mu   sync.Mutex
	msgs []map[string]any
	file string // stdio: the file the child's stdin is copied to
}

func (w *wireTap) add(raw []byte) {
	var m map[string]any
	if json.Unmarshal(raw, &m) == nil {
		w.mu.Lock()
		w.msgs = append(w.msgs, m)
		w.mu.Unlock()
	}
}

// sent returns every message seen so far.
func (w *wireTap) sent() []map[string]any {
	if w.file != "" {
		b, _ := os.ReadFile(w.file)
		var out []map[string]any
		sc := bufio.NewScanner(bytes.NewReader(b))
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			var m map[string]any
			if json.Unmarshal(sc.Bytes(), &m) == nil {
				out = append(out, m)
			}
		}
		return out
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]map[string]any(nil), w.msgs...)
}

// find waits until a message with method (and, when pred is set, matching
// it) was sent upstream.
func (w *wireTap) find(t *testing.T, method string, pred func(map[string]any) bool, wait time.Duration) map[string]any {
	t.Helper()
	for deadline := time.Now().Add(wait); ; time.Sleep(20 * time.Millisecond) {
		for _, m := range w.sent() {
			if m["method"] == method && (pred == nil || pred(m)) {
				return m
			}
		}
		if time.Now().After(deadline) {
			return nil
		}
	}
}

// stdioTap runs server-everything over stdio behind a shell that copies the
// child's stdin to a file: what the gateway wrote is read back from it.
func stdioTap(t *testing.T) (command string, args []string, tap *wireTap) {
	argv := testpeers.NodeEverything(t)
	log := filepath.Join(t.TempDir(), "stdin.jsonl")
	tap = &wireTap{file: log}
	return "/bin/sh", []string{"-c", `/usr/bin/tee -a "$0" | exec "$1" "$2" stdio`, log, argv[0], argv[1]}, tap
}

// httpTap fronts a streamable HTTP upstream and records what it is sent.
func httpTap(t *testing.T, target string) (string, *wireTap) {
	tap := &wireTap{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		tap.add(body)
		forwardStreaming(w, r, target, body)
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/mcp", tap
}

// everythingTaps fronts server-everything over stdio ("stdio") and
// streamable HTTP ("http"), each tapped.
func everythingTaps(t *testing.T, extra string) (*gatewayUnderTest, map[string]*wireTap) {
	cmd, args, stdioTap := stdioTap(t)
	httpURL, hTap := httpTap(t, testpeers.StartNodeEverything(t, "streamableHttp"))
	quoted, _ := json.Marshal(args)
	gw := startGateway(t, fmt.Sprintf(`
general_settings:
  master_key: %s
mcp_servers:
  stdio:
    transport: stdio
    command: %s
    args: %s
%s
  http:
    url: %s
%s
`, testKey, cmd, quoted, extra, httpURL, extra), nil)
	return gw, map[string]*wireTap{"stdio": stdioTap, "http": hTap}
}

// postRaw posts body and returns the response, unread.
func postRaw(t *testing.T, ctx context.Context, url string, hdr map[string]string, accept, body string) *http.Response {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", accept)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

func longCall(id, server, meta string) string {
	if meta != "" {
		meta = "," + meta
	}
	return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"` + server +
		`-trigger-long-running-operation","arguments":{"duration":6,"steps":3}` + meta + `}}`
}

// upstreamCallID waits for the tools/call of the long-running tool upstream
// and returns the gateway's own request id for it.
func upstreamCallID(t *testing.T, tap *wireTap, seen int) json.RawMessage {
	t.Helper()
	var calls []map[string]any
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		calls = calls[:0]
		for _, m := range tap.sent() {
			if m["method"] == "tools/call" {
				calls = append(calls, m)
			}
		}
		if len(calls) > seen {
			id, _ := json.Marshal(calls[seen]["id"])
			return id
		}
	}
	t.Fatal("the call never reached the upstream")
	return nil
}

// A caller's notifications/cancelled (legacy, its stream kept open) reaches
// server-everything as notifications/cancelled for the gateway's own id, and
// the caller gets no response for the cancelled request; a modern caller
// cancels by closing the request's stream, which reaches the upstream too.
func TestCancelReachesRealUpstreamAndNoResponseFollows(t *testing.T) {
	gw, taps := everythingTaps(t, "")
	for _, server := range []string{"stdio", "http"} {
		tap := taps[server]
		calls := 0
		for _, c := range []struct {
			name, accept, transport string
		}{
			{"legacy /mcp JSON answer", "application/json, text/event-stream", "mcp"},
			{"legacy /mcp SSE answer", "application/json, text/event-stream", "mcp-progress"},
			{"legacy /mcp/sse", "", "sse"},
			{"modern: stream closed", "application/json, text/event-stream", "modern"},
		} {
			t.Run(server+"/"+c.name, func(t *testing.T) {
				callerID := fmt.Sprintf(`"caller-%s-%d"`, server, calls)
				if c.transport == "mcp" {
					callerID = fmt.Sprint(700 + calls) // numeric ids, as the TypeScript SDK sends
				}
				var got []string // messages the caller received after cancelling
				switch c.transport {
				case "mcp", "mcp-progress":
					sid := initLegacy(t, gw.url+"/mcp", testKey)
					meta := ""
					if c.transport == "mcp-progress" {
						meta = `"_meta":{"progressToken":"p1"}`
					}
					respc := make(chan *http.Response, 1)
					go func() {
						respc <- postRaw(t, context.Background(), gw.url+"/mcp", legacyHeaders(testKey, sid), c.accept, longCall(callerID, server, meta))
					}()
					id := upstreamCallID(t, tap, calls)
					if status, _, _ := rpc(t, gw.url+"/mcp", legacyHeaders(testKey, sid), `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":`+callerID+`,"reason":"user"}}`); status != 202 {
						t.Fatalf("notifications/cancelled: %d", status)
					}
					expectUpstreamCancel(t, tap, id)
					select {
					case resp := <-respc:
						body, _ := io.ReadAll(resp.Body)
						resp.Body.Close()
						if strings.Contains(string(body), callerID) {
							got = append(got, string(body))
						}
					case <-time.After(4 * time.Second):
						t.Fatal("the cancelled request's POST did not end")
					}
				case "sse":
					got = cancelOverSSE(t, gw.url, server, callerID, tap, calls)
				case "modern":
					ctx, cancel := context.WithCancel(context.Background())
					hdr := modernHeaders("tools/call", server+"-trigger-long-running-operation")
					go func() {
						req, _ := http.NewRequestWithContext(ctx, http.MethodPost, gw.url+"/mcp", strings.NewReader(longCall(callerID, server, modernMeta)))
						req.Header.Set("Content-Type", "application/json")
						req.Header.Set("Accept", c.accept)
						for k, v := range hdr {
							req.Header.Set(k, v)
						}
						if resp, err := http.DefaultClient.Do(req); err == nil {
							_, _ = io.Copy(io.Discard, resp.Body)
							resp.Body.Close()
						}
					}()
					id := upstreamCallID(t, tap, calls)
					cancel()
					expectUpstreamCancelOrClose(t, server, tap, id)
				}
				calls++
				if len(got) > 0 {
					t.Fatalf("the caller received an answer for its cancelled request: %q", got)
				}
			})
		}
	}
}

func expectUpstreamCancel(t *testing.T, tap *wireTap, id json.RawMessage) {
	t.Helper()
	m := tap.find(t, "notifications/cancelled", func(m map[string]any) bool {
		p, _ := m["params"].(map[string]any)
		got, _ := json.Marshal(p["requestId"])
		return string(got) == string(id)
	}, 5*time.Second)
	if m == nil {
		t.Fatalf("the upstream was not sent notifications/cancelled for the gateway's id %s", id)
	}
}

// expectUpstreamCancelOrClose: over stdio the upstream must be told with
// notifications/cancelled; a legacy HTTP upstream too (its session outlives
// the request).
func expectUpstreamCancelOrClose(t *testing.T, server string, tap *wireTap, id json.RawMessage) {
	t.Helper()
	expectUpstreamCancel(t, tap, id)
}

// cancelOverSSE runs the long call on a /mcp/sse connection, cancels it and
// returns the messages the caller received for it afterwards.
func cancelOverSSE(t *testing.T, base, server, callerID string, tap *wireTap, seen int) []string {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/mcp/sse", nil)
	req.Header.Set("Authorization", "Bearer "+testKey)
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	events := make(chan string, 64)
	go func() {
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				events <- d
			}
		}
		close(events)
	}()
	endpoint := <-events
	post := func(body string) {
		r := postRaw(t, context.Background(), base+endpoint, map[string]string{"Authorization": "Bearer " + testKey}, "application/json", body)
		r.Body.Close()
	}
	post(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	<-events
	post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	post(longCall(callerID, server, ""))
	id := upstreamCallID(t, tap, seen)
	post(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":` + callerID + `,"reason":"user"}}`)
	expectUpstreamCancel(t, tap, id)
	var got []string
	timeout := time.After(7 * time.Second) // past the tool's own duration
	for {
		select {
		case ev, ok := <-events:
			if !ok {
				return got
			}
			if strings.Contains(ev, callerID) {
				got = append(got, ev)
			}
		case <-timeout:
			return got
		}
	}
}

// The v1 TypeScript SDK client cancels with an AbortSignal: it sends
// notifications/cancelled and keeps its streams open. Through the gateway to
// server-everything over stdio, on /mcp and /mcp/sse, the upstream is told
// for the gateway's id and no response for the cancelled id reaches the
// client.
func TestTypeScriptClientCancel(t *testing.T) {
	node, dir := tsClients(t)
	gw, taps := everythingTaps(t, "")
	tap := taps["stdio"]
	for i, c := range []struct{ mode, path string }{{"v1-http", "/mcp"}, {"v1-sse", "/mcp/sse"}} {
		t.Run(c.mode, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), tsClientTimeout)
			defer cancel()
			cmd := exec.CommandContext(ctx, node, "cancel.mjs", c.mode, gw.url+c.path, testKey, "stdio-trigger-long-running-operation")
			cmd.Dir = dir
			cmd.WaitDelay = 5 * time.Second
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			runErr := cmd.Run()
			var res struct {
				Aborted bool   `json:"aborted"`
				Late    []any  `json:"late"`
				Error   string `json:"error"`
			}
			if err := json.Unmarshal([]byte(tsLastLine(stdout.String())), &res); err != nil || !res.Aborted || res.Error != "" {
				t.Fatalf("cancel.mjs: %v %v %+v; stderr %s", runErr, err, res, tsTail(stderr.String(), 4<<10))
			}
			expectUpstreamCancel(t, tap, upstreamCallID(t, tap, i))
			if len(res.Late) > 0 {
				t.Fatalf("the client received a response for its cancelled request: %v", res.Late)
			}
		})
	}
}
