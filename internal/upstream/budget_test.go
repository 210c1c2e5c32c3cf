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
	"github.com/mcpgw/mcpgw/internal/later"
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
	first, second, third := &budgetReader{b: b}, &budgetReader{b: b}, &budgetReader{b: b}
	if err := b.acquire(ctx, 80, first); err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	if err := b.acquire(short, 30, second); !errors.As(err, new(*BudgetError)) {
		t.Fatalf("over budget: err = %v, want a BudgetError", err)
	}
	got := make(chan error, 1)
	go func() { got <- b.acquire(ctx, 30, second) }()
	time.Sleep(10 * time.Millisecond)
	b.release(50, first.rank) // wakes the waiter
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	b.release(60, second.rank)
	if err := b.acquire(ctx, 1000, third); err != nil || b.inUse() != 100 {
		t.Fatalf("an answer as large as the whole budget: err=%v inUse=%d", err, b.inUse())
	}
	b.release(100, third.rank)
	if b.inUse() != 0 || len(b.holders) != 0 || len(b.blocked) != 0 {
		t.Fatalf("inUse = %d, holders %v, blocked %v", b.inUse(), b.holders, b.blocked)
	}
}

// Answers read in pieces must not deadlock: when two answers each hold part
// of the budget and both need more, the younger gives up at once (releasing
// what it held) and the older completes; a holder that is not waiting (it
// will give bytes back) means no deadlock, so nobody gives up; a shared
// stream reader is never made to give up.
func TestByteBudgetJuniorAnswerYields(t *testing.T) {
	b := NewByteBudget(100)
	ctx := context.Background()
	senior := &budgetReader{b: b, yield: true}
	junior := &budgetReader{b: b, yield: true}
	for _, br := range []*budgetReader{senior, junior} {
		if err := b.acquire(ctx, 40, br); err != nil {
			t.Fatal(err)
		}
		br.held = 40
	}
	seniorDone := make(chan error, 1)
	go func() { seniorDone <- b.acquire(ctx, 40, senior) }()
	time.Sleep(10 * time.Millisecond)
	// While a third holder is not waiting, the junior waits too.
	idle := &budgetReader{b: b, yield: true}
	if err := b.acquire(ctx, 20, idle); err != nil {
		t.Fatal(err)
	}
	idle.held = 20
	patient, cancelPatient := context.WithTimeout(ctx, 30*time.Millisecond)
	if err := b.acquire(patient, 40, junior); !errors.As(err, new(*BudgetError)) || patient.Err() == nil {
		t.Fatalf("junior with an idle holder around: err %v after its deadline %v; want it to wait", err, patient.Err())
	}
	cancelPatient()
	idle.releaseHeld()
	start := time.Now()
	if err := b.acquire(ctx, 40, junior); !errors.As(err, new(*BudgetError)) {
		t.Fatalf("junior answer: err = %v, want a BudgetError at once", err)
	}
	if took := time.Since(start); took > time.Second {
		t.Fatalf("the junior waited %v before giving up", took)
	}
	junior.releaseHeld()
	select {
	case err := <-seniorDone:
		if err != nil {
			t.Fatalf("senior: %v", err)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("the senior answer never got the bytes the junior gave back")
	}
	senior.held += 40
	// A shared stream holding bytes waits rather than fails.
	stream := &budgetReader{b: b}
	if err := b.acquire(ctx, 10, stream); err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 30*time.Millisecond)
	defer cancel()
	start = time.Now()
	if err := b.acquire(short, 40, stream); !errors.As(err, new(*BudgetError)) || time.Since(start) < 25*time.Millisecond {
		t.Fatalf("a shared stream gave up after %v (err %v); want it to wait out its deadline", time.Since(start), err)
	}
	senior.releaseHeld()
	stream.held = 10
	stream.releaseHeld()
	if b.inUse() != 0 || len(b.holders) != 0 {
		t.Fatalf("inUse %d, holders %v", b.inUse(), b.holders)
	}
}

// An answer keeps its share of the budget until the downstream request that
// asked for it has written its own answer (internal/later): the budget
// bounds answers for their whole stay in the gateway. Without a request
// list, the share is given back when the call returns.
func TestAnswerBudgetHeldUntilTheAnswerIsWritten(t *testing.T) {
	budget := NewByteBudget(1 << 20)
	big := json.RawMessage(`{"content":[],"pad":"` + strings.Repeat("y", 100<<10) + `"}`)
	srv := legacyServer(t, "2025-11-25", func(w http.ResponseWriter, r *http.Request, m *jsonrpc.Message) {
		writeJSON(w, 200, jsonrpc.EncodeResult(m.ID, big))
	})
	c := newClient(t, Config{Name: "a", URL: srv.url(), ProtocolVersion: "2025-11-25", AnswerBudget: budget})
	ctx, written := later.With(context.Background())
	if _, err := c.CallTool(ctx, "t", json.RawMessage(`{}`), Options{}); err != nil {
		t.Fatal(err)
	}
	if held := budget.inUse(); held < 100<<10 {
		t.Fatalf("after the call, before the answer was written: %d bytes held, want the answer's", held)
	}
	written()
	if held := budget.inUse(); held != 0 {
		t.Fatalf("after the answer was written: %d bytes held", held)
	}
	if _, err := c.CallTool(context.Background(), "t", json.RawMessage(`{}`), Options{}); err != nil {
		t.Fatal(err)
	}
	if held := budget.inUse(); held != 0 {
		t.Fatalf("without a request list: %d bytes held after the call", held)
	}
}

// An answer's announced size is allocated before it is read only when it is
// small: an upstream that announces 30 MiB and sends five bytes costs no
// 30 MiB buffer outside the byte budget.
func TestAnnouncedSizeAllocatedOnlyWhenSmall(t *testing.T) {
	for _, tc := range []struct {
		name      string
		announced int64
		maxCap    int
	}{
		{"small, allocated at once", 5, 6},
		{"large, grown with what is read", 30 << 20, 4 << 10},
	} {
		b, err := readLimitedSized(strings.NewReader("hello"), 32<<20, tc.announced)
		if err != nil || string(b) != "hello" {
			t.Fatalf("%s: %q, %v", tc.name, b, err)
		}
		if cap(b) > tc.maxCap {
			t.Fatalf("%s: buffer of %d bytes for a 5-byte body announced as %d", tc.name, cap(b), tc.announced)
		}
	}
}
