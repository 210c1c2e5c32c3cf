package main

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
// logging, every 5 s) reach the legacy sessions following that upstream on
// their GET streams (and /mcp/sse streams), over stdio and streamable HTTP, each at the level the
// caller set: two callers share one upstream session, and the one that asked
// for emergency only never sees a lower level.
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
			setLevel(verbose, "debug") // the shared upstream session now sends every level
			status, _, body := rpc(t, gw.url+"/mcp", legacyHeaders(testKey, verbose), `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"`+server+`-toggle-simulated-logging","arguments":{}}}`)
			if status != 200 || body["result"] == nil {
				t.Fatalf("toggle-simulated-logging: %d %v", status, body)
			}
			deadline := time.Now().Add(16 * time.Second)
			for (len(vs.logs()) < 2 || len(ss.logs()) < 1) && time.Now().Before(deadline) {
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
			if len(ss.logs()) == 0 {
				t.Fatal("no log line reached the /mcp/sse stream")
			}
			for _, p := range qs.logs() {
				if p["level"] != "emergency" {
					t.Fatalf("a caller at level emergency received %v", p)
				}
			}
		})
	}
}

// openSSESession opens an initialized /mcp/sse connection and collects the
// messages of its stream until the test ends.
func openSSESession(t *testing.T, base string) *streamLog {
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
		`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
	} {
		r := postRaw(t, context.Background(), base+ep, map[string]string{"Authorization": "Bearer " + testKey}, "application/json", body)
		r.Body.Close()
	}
	return s
}
