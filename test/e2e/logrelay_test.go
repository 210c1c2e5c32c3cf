package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpgw/mcpgw/internal/mcp"
)

// streamLog collects the JSON-RPC messages of one SSE stream.
type streamLog struct {
	mu   sync.Mutex
	msgs []map[string]any
}

func (s *streamLog) logs() []map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []map[string]any
	for _, m := range s.msgs {
		if m["method"] == "notifications/message" {
			p, _ := m["params"].(map[string]any)
			out = append(out, p)
		}
	}
	return out
}

// openGETStream opens a legacy session's GET stream and collects its
// messages until the test ends.
func openGETStream(t *testing.T, url, sid string) *streamLog {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	for k, v := range legacyHeaders(testKey, sid) {
		req.Header.Set(k, v)
	}
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET stream: %v %v", resp, err)
	}
	s := &streamLog{}
	go func() {
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			d, ok := strings.CutPrefix(sc.Text(), "data: ")
			var m map[string]any
			if ok && json.Unmarshal([]byte(d), &m) == nil {
				s.mu.Lock()
				s.msgs = append(s.msgs, m)
				s.mu.Unlock()
			}
		}
	}()
	return s
}

// Log lines server-everything sends outside any request (its simulated
// logging, every 5 s, switched on per upstream session) reach the legacy
// session whose upstream session sends them, on its GET stream, over stdio
// and streamable HTTP. A caller that set its level has an upstream session
// of its own: the log lines another caller switched on in its own session
// never reach it, nor an /mcp/sse caller presenting the same key.
func TestUpstreamLogsOutsideRequestsReachGETStreams(t *testing.T) {
	gw, _ := everythingTaps(t, "")
	for _, server := range []string{"stdio", "http"} {
		t.Run(server, func(t *testing.T) {
			t.Parallel()
			verbose := initLegacy(t, gw.url+"/mcp", testKey)
			quiet := initLegacy(t, gw.url+"/mcp", testKey)
			vs := openGETStream(t, gw.url+"/mcp", verbose)
			qs := openGETStream(t, gw.url+"/mcp", quiet)
			setLevel := func(sid, level string) {
				status, _, body := rpc(t, gw.url+"/mcp", legacyHeaders(testKey, sid), `{"jsonrpc":"2.0","id":2,"method":"logging/setLevel","params":{"level":"`+level+`"}}`)
				if status != 200 || body["result"] == nil {
					t.Fatalf("setLevel: %d %v", status, body)
				}
			}
			ss := openSSESession(t, gw.url)
			setLevel(quiet, "emergency")
			setLevel(verbose, "debug") // verbose's own upstream session now sends every level
			status, _, body := rpc(t, gw.url+"/mcp", legacyHeaders(testKey, verbose), `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"`+server+`-toggle-simulated-logging","arguments":{}}}`)
			if status != 200 || body["result"] == nil {
				t.Fatalf("toggle-simulated-logging: %d %v", status, body)
			}
			deadline := time.Now().Add(16 * time.Second)
			for len(vs.logs()) < 2 && time.Now().Before(deadline) {
				time.Sleep(100 * time.Millisecond)
			}
			got := vs.logs()
			if len(got) < 2 {
				t.Fatalf("log lines on the GET stream: %v (want one every 5 s)", got)
			}
			for _, p := range got {
				if level, _ := p["level"].(string); !mcp.ValidLogLevel(level) || !strings.Contains(p["data"].(string), "message") {
					t.Fatalf("log line relayed: %v", p)
				}
			}
			if got := ss.logs(); len(got) != 0 {
				t.Fatalf("the /mcp/sse caller received log lines of another caller's upstream session: %v", got)
			}
			if got := qs.logs(); len(got) != 0 {
				t.Fatalf("a caller received log lines of another caller's upstream session: %v", got)
			}
		})
	}
}

// openSSESession opens an initialized /mcp/sse connection and collects the
// messages of its stream until the test ends.
func openSSESession(t *testing.T, base string) *streamLog {
	t.Helper()
	s, _ := openSSESessionCaps(t, base, `{}`)
	return s
}

// openSSESessionCaps is openSSESession for a client declaring caps; it also
// returns the URL to post the session's messages to.
func openSSESessionCaps(t *testing.T, base, caps string) (*streamLog, string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/mcp/sse", nil)
	req.Header.Set("Authorization", "Bearer "+testKey)
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("/mcp/sse: %v %v", resp, err)
	}
	s := &streamLog{}
	endpoint := make(chan string, 1)
	go func() {
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			d, ok := strings.CutPrefix(sc.Text(), "data: ")
			if !ok {
				continue
			}
			if strings.HasPrefix(d, "/mcp/sse/messages") {
				endpoint <- d
				continue
			}
			var m map[string]any
			if json.Unmarshal([]byte(d), &m) == nil {
				s.mu.Lock()
				s.msgs = append(s.msgs, m)
				s.mu.Unlock()
			}
		}
	}()
	ep := <-endpoint
	for _, body := range []string{
		`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":` + caps + `,"clientInfo":{"name":"t","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
	} {
		r := postRaw(t, context.Background(), base+ep, map[string]string{"Authorization": "Bearer " + testKey}, "application/json", body)
		r.Body.Close()
	}
	return s, base + ep
}

// answer waits for the response with id on the stream.
func (s *streamLog) answer(t *testing.T, id float64) map[string]any {
	t.Helper()
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		s.mu.Lock()
		for _, m := range s.msgs {
			if m["id"] == id && m["method"] == nil {
				s.mu.Unlock()
				return m
			}
		}
		s.mu.Unlock()
	}
	t.Fatalf("no answer with id %v on the stream", id)
	return nil
}
