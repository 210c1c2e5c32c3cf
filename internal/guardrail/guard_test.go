package guardrail

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpgw/mcpgw/internal/config"
	"github.com/mcpgw/mcpgw/internal/fault"
	"github.com/mcpgw/mcpgw/internal/gateway"
)

// TestArgumentTextsRoundTrip: the texts are the strings in a fixed order (members by name),
// and rewritten texts go back to their places, numbers kept as written.
func TestArgumentTextsRoundTrip(t *testing.T) {
	l, err := stringLeaves(json.RawMessage(`{"b":"x","a":["y",{"c":"z"}],"n":1.50}`))
	if err != nil || !reflect.DeepEqual(l.texts, []string{"y", "z", "x"}) {
		t.Fatalf("texts %v %v", l.texts, err)
	}
	out, err := l.rewrite([]string{"Y", "Z", "X"})
	if err != nil || string(out) != `{"a":["Y",{"c":"Z"}],"b":"X","n":1.50}` {
		t.Fatalf("rewrite %s %v", out, err)
	}
	if _, err := l.rewrite([]string{"one"}); err == nil {
		t.Fatal("a rewrite with fewer texts was applied")
	}
}

// TestResultTextsRoundTrip: a result's texts are its text items' then structuredContent's
// strings; other items are left as they are.
func TestResultTextsRoundTrip(t *testing.T) {
	r, err := parseResult(json.RawMessage(`{"content":[{"type":"text","text":"hello"},{"type":"image","data":"AA==","mimeType":"image/png"},{"type":"text","text":"world"}],"structuredContent":{"k":"v"},"isError":false}`))
	if err != nil || !reflect.DeepEqual(r.texts, []string{"hello", "world", "v"}) {
		t.Fatalf("texts %v %v", r.texts, err)
	}
	out, err := r.set([]string{"HELLO", "WORLD", "V"})
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Content []map[string]any `json:"content"`
		SC      map[string]any   `json:"structuredContent"`
	}
	if json.Unmarshal(out, &got) != nil || got.Content[0]["text"] != "HELLO" || got.Content[1]["data"] != "AA==" || got.Content[2]["text"] != "WORLD" || got.SC["k"] != "V" {
		t.Fatalf("set: %s", out)
	}
}

// TestConcurrencyIsBounded: with room for one request, a second waits and, when its timeout
// passes first, fails closed without being sent.
func TestConcurrencyIsBounded(t *testing.T) {
	release := make(chan struct{})
	var mu sync.Mutex
	sent := 0
	h := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		sent++
		mu.Unlock()
		<-release
		_, _ = w.Write([]byte(`{"action":"NONE"}`))
	}))
	defer h.Close()
	g := New(Config{MaxConcurrent: 1, Guardrails: []config.Guardrail{
		{Name: "slow", Modes: []string{config.GuardPre}, APIBase: h.URL, Timeout: 2 * time.Second},
		{Name: "quick", Modes: []string{config.GuardPre}, APIBase: h.URL, Timeout: 200 * time.Millisecond},
	}, Servers: map[string][]string{"s": {"slow"}, "q": {"quick"}}})
	defer g.client.CloseIdleConnections()
	ctx := context.Background()
	args := json.RawMessage(`{"m":"hi"}`)
	done := make(chan *fault.Fault)
	go func() {
		_, f := g.Pre(ctx, gateway.GuardedCall{Server: "s", Tool: "t"}, args)
		done <- f
	}()
	for {
		mu.Lock()
		n := sent
		mu.Unlock()
		if n == 1 {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	// Server q's guardrail waits for room behind server s's request, past its timeout.
	_, f := g.Pre(ctx, gateway.GuardedCall{Server: "q", Tool: "t"}, args)
	if f == nil || f.Class != fault.Unavailable || !strings.Contains(f.Message, "could not be checked") {
		t.Fatalf("a request without room: %+v", f)
	}
	close(release)
	if f := <-done; f != nil {
		t.Fatalf("the first request: %+v", f)
	}
	mu.Lock()
	defer mu.Unlock()
	if sent != 1 {
		t.Fatalf("%d requests sent, want 1", sent)
	}
}
