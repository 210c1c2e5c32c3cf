package upstream

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestLineLimiter(t *testing.T) {
	now := time.Unix(0, 0)
	l := newLineLimiter(3, time.Minute, func() time.Time { return now })
	type step struct {
		advance        time.Duration
		ok             bool
		wantSuppressed int
	}
	for i, s := range []step{
		{0, true, 0}, {time.Second, true, 0}, {time.Second, true, 0},
		{time.Second, false, 0}, {time.Second, false, 0}, // over the limit: counted
		{time.Minute, true, 2}, // a new window reports what was suppressed, once
		{0, true, 0}, {0, true, 0}, {0, false, 0},
		{2 * time.Minute, true, 1},
	} {
		now = now.Add(s.advance)
		ok, n := l.allow()
		if ok != s.ok || n != s.wantSuppressed {
			t.Fatalf("step %d: allow() = %v, %d; want %v, %d", i, ok, n, s.ok, s.wantSuppressed)
		}
	}
}

// A stdio server that prints garbage on stdout (and chatter on stderr)
// gets a bounded number of log lines, not one per line it writes.
func TestStdioGarbageIsRateLimited(t *testing.T) {
	var logs logBuffer
	cfg := fakeStdioConfig(t, "garbage")
	cfg.Logger = logs.logger()
	c := newClient(t, cfg)
	if _, err := c.CallTool(context.Background(), "t", json.RawMessage(`{}`), Options{}); err != nil {
		t.Fatal(err)
	}
	_ = c.Close(context.Background())
	if n := len(logs.lines("WARN", "not a JSON-RPC message")); n == 0 || n > msgLinesPerMin {
		t.Fatalf("%d warnings for 20,000 junk lines, want 1..%d", n, msgLinesPerMin)
	}
	if n := len(logs.lines("INFO", "upstream stderr")); n == 0 || n > stderrLinesPerMin {
		t.Fatalf("%d stderr lines logged, want 1..%d", n, stderrLinesPerMin)
	}
}

// Garbage on a streamable HTTP session's GET stream is rate limited too.
func TestGetStreamGarbageIsRateLimited(t *testing.T) {
	f := legacyServer(t, "2025-11-25", okCall)
	sent := make(chan struct{})
	f.srv.Config.Handler = getHook(f.srv.Config.Handler, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(200)
		for range 5000 {
			fmt.Fprint(w, "data: not json\n\n")
		}
		w.(http.Flusher).Flush()
		close(sent)
		<-r.Context().Done()
	})
	var logs logBuffer
	c := newClient(t, Config{Name: "up", URL: f.url(), ProtocolVersion: "2025-11-25", Logger: logs.logger()})
	_, release, err := c.FollowContext(context.Background(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	<-sent
	_ = c.Close(context.Background())
	if n := len(logs.lines("WARN", "not a JSON-RPC message")); n == 0 || n > msgLinesPerMin {
		t.Fatalf("%d warnings for 5,000 junk events, want 1..%d", n, msgLinesPerMin)
	}
}

// Debug lines per upstream message have a limit of their own: a flood of
// them never suppresses the warnings operators need.
func TestDebugFloodLeavesWarnings(t *testing.T) {
	var logs logBuffer
	c := newClient(t, Config{Name: "up", URL: "http://127.0.0.1:1/mcp", ProtocolVersion: "2025-11-25", Logger: logs.logger()})
	for i := 0; i < 500; i++ {
		c.msgDebug("ignored response with an unmatched id")
	}
	c.msgWarn("upstream failed: connection refused")
	if !strings.Contains(logs.String(), "upstream failed: connection refused") {
		t.Fatal("a debug flood suppressed the next warning")
	}
}
