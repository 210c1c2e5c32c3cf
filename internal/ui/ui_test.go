package ui

import (
	"context"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/mcpgw/mcpgw/internal/fault"
	"github.com/mcpgw/mcpgw/internal/observe"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestSessionsAreBounded: a session ends after its idle time and its lifetime, and beyond the
// cap the least recently used one goes.
func TestSessionsAreBounded(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	s := NewSessions(2, time.Minute, time.Hour)
	s.now = func() time.Time { return now }
	a, _ := s.create("key-a", "a")
	b, _ := s.create("key-b", "b")
	now = now.Add(time.Second)
	if s.get(a) == nil { // a is now the more recently used
		t.Fatal("a fresh session is gone")
	}
	c, _ := s.create("key-c", "c")
	if s.get(b) != nil || s.get(a) == nil || s.get(c) == nil || s.Len() != 2 {
		t.Fatalf("after a third session: b %v, a %v, c %v, len %d; want b evicted", s.get(b) != nil, s.get(a) != nil, s.get(c) != nil, s.Len())
	}
	now = now.Add(2 * time.Minute)
	if s.get(a) != nil {
		t.Error("a session unused for longer than its idle time is still live")
	}
	d, _ := s.create("key-d", "d")
	start := now
	for i := 0; i < 70; i++ {
		now = now.Add(59 * time.Second)
		if s.get(d) == nil {
			if now.Sub(start) <= time.Hour {
				t.Fatalf("a used session ended after %v", now.Sub(start))
			}
			return
		}
	}
	t.Error("a session outlived its lifetime")
}

// TestCSRFTokenCompare: only the session's own token passes.
func TestCSRFTokenCompare(t *testing.T) {
	s := NewSessions(0, 0, 0)
	_, sess := s.create("k", "w")
	if !sess.csrfOK(sess.csrf) || sess.csrfOK("") || sess.csrfOK(strings.Repeat("0", 64)) {
		t.Error("csrfOK accepts a wrong token or refuses the right one")
	}
}

// TestLiveRingStreamsAndStats: the ring keeps the latest entries oldest first, a stream gets new
// entries without blocking the reporter when it is full, the stream cap holds, and the
// per-server statistics count calls, errors by class and latency quantiles.
func TestLiveRingStreamsAndStats(t *testing.T) {
	l := NewLive(3, 1)
	ctx := context.Background()
	ch, cancel, ok := l.subscribe()
	if !ok {
		t.Fatal("first stream refused")
	}
	if _, _, ok := l.subscribe(); ok {
		t.Error("a stream beyond the cap was opened")
	}
	for i := 0; i < subscriberQueue+10; i++ { // more than the queue: must not block
		l.EndRequest(ctx, &observe.Request{Method: "tools/call", Target: string(rune('a' + i%26)), Status: 200,
			Caller: observe.Caller{KeyAlias: "alice"}, Start: time.Now()})
	}
	if got := len(ch); got != subscriberQueue {
		t.Errorf("stream queued %d entries, want %d", got, subscriberQueue)
	}
	if e := <-ch; e.Caller != "alice" || e.Method != "tools/call" {
		t.Errorf("streamed entry %+v", e)
	}
	recent := l.Recent()
	if len(recent) != 3 || recent[2].Target != string(rune('a'+(subscriberQueue+9)%26)) {
		t.Errorf("ring = %+v, want the 3 latest, oldest first", recent)
	}
	cancel()
	if _, _, ok := l.subscribe(); !ok {
		t.Error("a stream could not open after another closed")
	}
	for i := 0; i < 100; i++ {
		c := &observe.Call{Server: "s", Method: "tools/call", Duration: 3 * time.Millisecond}
		if i == 99 {
			c.Duration = 3 * time.Second
			c.Fault = fault.Timeout
		}
		l.EndCall(ctx, c)
	}
	st := l.Stats()
	if len(st) != 1 || st[0].Calls != 100 || st[0].Errors[fault.Timeout.String()] != 1 || st[0].P50MS != 5 || st[0].P99MS != 5 {
		t.Errorf("stats = %+v", st)
	}
	l.EndCall(ctx, &observe.Call{Server: "s", Duration: 3 * time.Second})
	if st := l.Stats(); st[0].P99MS != 5000 {
		t.Errorf("p99 after two slow calls of 101 = %v, want 5000", st[0].P99MS)
	}
	l.Close()
	if _, _, ok := l.subscribe(); ok {
		t.Error("a stream opened after Close")
	}
}
