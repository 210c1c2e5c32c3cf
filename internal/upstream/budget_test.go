package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mcpgw/mcpgw/internal/jsonrpc"
)

// Upstream answers are buffered within one byte budget shared by every
// client given it: while one caller's large answer holds the budget, another
// caller's answer (JSON, SSE or a stdio line) waits for budget within its own
// deadline and then fails with a retryable, classified error; once the first
// answer is done, the budget is back.
func TestAnswerBytesShareOneBudget(t *testing.T) {
	budget := NewByteBudget(1 << 20)
	stall := make(chan struct{})
	hog := legacyServer(t, "2025-11-25", func(w http.ResponseWriter, r *http.Request, m *jsonrpc.Message) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(200)
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"pad":"%s`, m.ID.Raw(), strings.Repeat("x", 900<<10))
		w.(http.Flusher).Flush()
		select { // never finishes the answer while the test runs
		case <-stall:
		case <-r.Context().Done():
		}
	})
	big := json.RawMessage(`{"content":[],"pad":"` + strings.Repeat("y", 500<<10) + `"}`)
	answer := legacyServer(t, "2025-11-25", func(w http.ResponseWriter, r *http.Request, m *jsonrpc.Message) {
		if r.URL.Query().Get("sse") != "" {
			writeSSE(w, jsonrpc.EncodeResult(m.ID, big))
			return
		}
		writeJSON(w, 200, jsonrpc.EncodeResult(m.ID, big))
	})
	hc := newClient(t, Config{Name: "hog", URL: hog.url(), ProtocolVersion: "2025-11-25", AnswerBudget: budget})
	hctx, stop := context.WithCancel(context.Background())
	hogDone := make(chan error, 1)
	go func() {
		_, err := hc.CallTool(hctx, "t", json.RawMessage(`{}`), Options{})
		hogDone <- err
	}()
	defer close(stall)
	for deadline := time.Now().Add(5 * time.Second); budget.inUse() < 800<<10; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the hog's answer holds %d bytes", budget.inUse())
		}
	}
	stdio := fakeStdioConfig(t, "big")
	clients := map[string]Config{
		"json":  {Name: "json", URL: answer.url(), ProtocolVersion: "2025-11-25"},
		"sse":   {Name: "sse", URL: answer.url() + "?sse=1", ProtocolVersion: "2025-11-25"},
		"stdio": stdio,
	}
	for name, cfg := range clients {
		cfg.AnswerBudget = budget
		cfg.RequestTimeout = 500 * time.Millisecond
		c := newClient(t, cfg)
		if _, err := c.Info(context.Background(), Options{}); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		_, err := c.CallTool(context.Background(), "t", json.RawMessage(`{}`), Options{})
		cl := Classify(err)
		if name != "stdio" && (!errors.As(err, new(*BudgetError)) || cl.HTTPStatus != http.StatusServiceUnavailable || !strings.Contains(cl.Message, "retry")) {
			t.Fatalf("%s: err = %v (%+v), want a budget error", name, err, cl)
		}
		if name == "stdio" && err == nil {
			t.Fatalf("stdio: a 500 KiB line was read past the budget")
		}
	}
	stop()
	<-hogDone
	// The stdio reader, which waited, now finishes its line and lets it go.
	for deadline := time.Now().Add(5 * time.Second); budget.inUse() != 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d bytes still held after every answer ended", budget.inUse())
		}
	}
	for name, cfg := range clients {
		cfg.AnswerBudget = budget
		c := newClient(t, cfg)
		if _, err := c.CallTool(context.Background(), "t", json.RawMessage(`{}`), Options{}); err != nil {
			t.Fatalf("%s after the budget came back: %v", name, err)
		}
	}
}

func TestByteBudget(t *testing.T) {
	b := NewByteBudget(100)
	ctx := context.Background()
	if err := b.acquire(ctx, 80); err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	if err := b.acquire(short, 30); !errors.As(err, new(*BudgetError)) {
		t.Fatalf("over budget: err = %v, want a BudgetError", err)
	}
	got := make(chan error, 1)
	go func() { got <- b.acquire(ctx, 30) }()
	time.Sleep(10 * time.Millisecond)
	b.release(50) // wakes the waiter
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	b.release(60)
	if err := b.acquire(ctx, 1000); err != nil || b.inUse() != 100 {
		t.Fatalf("an answer as large as the whole budget: err=%v inUse=%d", err, b.inUse())
	}
	b.release(100)
	if b.inUse() != 0 {
		t.Fatalf("inUse = %d", b.inUse())
	}
}
