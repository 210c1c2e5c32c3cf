package sse_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"testing/iotest"

	"github.com/mcpgw/mcpgw/internal/allocstest"
	"github.com/mcpgw/mcpgw/internal/sse"
)

func TestWriterFormat(t *testing.T) {
	tests := []struct {
		name string
		ev   sse.Event
		want string
	}{
		{name: "data only", ev: d("a"), want: "data: a\n\n"},
		{name: "nil data", ev: sse.Event{}, want: "data:\n\n"},
		{name: "priming", ev: sse.Event{ID: "1"}, want: "id: 1\ndata:\n\n"},
		{name: "all fields", ev: ev("t", "x", "7", 1500), want: "event: t\nid: 7\nretry: 1500\ndata: x\n\n"},
		{name: "line endings", ev: d("a\r\nb\rc\nd"), want: "data: a\ndata: b\ndata: c\ndata: d\n\n"},
		{name: "trailing newline", ev: d("a\n"), want: "data: a\ndata:\n\n"},
		{name: "trailing CR", ev: d("a\r"), want: "data: a\ndata:\n\n"},
		{name: "CR CR LF", ev: d("a\r\r\nb"), want: "data: a\ndata:\ndata: b\n\n"},
		{name: "only newline", ev: d("\n"), want: "data:\ndata:\n\n"},
		{name: "leading space kept", ev: ev(" t", " x", " i", 0), want: "event:  t\nid:  i\ndata:  x\n\n"},
		{name: "colon in values", ev: ev("a:b", ":", "c:d", 0), want: "event: a:b\nid: c:d\ndata: :\n\n"},
		{name: "NUL allowed in type and data", ev: ev("\x00", "\x00", "", 0), want: "event: \x00\ndata: \x00\n\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := sse.NewWriter(&buf).WriteEvent(tt.ev); err != nil {
				t.Fatal(err)
			}
			if buf.String() != tt.want {
				t.Errorf("wrote %q, want %q", buf.String(), tt.want)
			}
		})
	}
}

func TestWriterRejectsInvalid(t *testing.T) {
	bad := []sse.Event{
		{Type: "a\nb"}, {Type: "a\r"}, {ID: "1\n"}, {ID: "\r1"}, {ID: "a\x00"}, {Retry: -1},
	}
	for _, e := range bad {
		var buf bytes.Buffer
		w := sse.NewWriter(&buf)
		if err := w.WriteEvent(e); !errors.Is(err, sse.ErrInvalidEvent) {
			t.Errorf("WriteEvent(%+v) = %v, want ErrInvalidEvent", e, err)
		}
		if buf.Len() != 0 {
			t.Errorf("WriteEvent(%+v) wrote %q", e, buf.String())
		}
		// Not sticky: a bad event is the caller's mistake, not a broken stream.
		if err := w.WriteEvent(d("ok")); err != nil {
			t.Errorf("valid event after invalid one: %v", err)
		}
	}
	var buf bytes.Buffer
	w := sse.NewWriter(&buf)
	for _, c := range []string{"a\nb", "a\r", "\r\n"} {
		if err := w.WriteComment(c); !errors.Is(err, sse.ErrInvalidEvent) {
			t.Errorf("WriteComment(%q) = %v, want ErrInvalidEvent", c, err)
		}
	}
	if buf.Len() != 0 {
		t.Errorf("wrote %q", buf.String())
	}
}

func TestWriterComment(t *testing.T) {
	var buf bytes.Buffer
	w := sse.NewWriter(&buf)
	if err := w.WriteComment("ping"); err != nil {
		t.Fatal(err)
	}
	if err := w.WriteComment(""); err != nil {
		t.Fatal(err)
	}
	if err := w.WriteEvent(d("x")); err != nil {
		t.Fatal(err)
	}
	if want := ": ping\n\n:\n\ndata: x\n\n"; buf.String() != want {
		t.Fatalf("wrote %q, want %q", buf.String(), want)
	}
	r := sse.NewReader(&buf, 0)
	got, err := readAll(r)
	if err != io.EOF || !eventsEqual(got, []sse.Event{d("x")}) || r.Comments() != 2 {
		t.Fatalf("read back %s, %v, comments %d", fmtEvents(got), err, r.Comments())
	}
}

// TestWriterFlushesRecorder checks that each event is flushed, and is
// complete in the body, when it is flushed.
func TestWriterFlushesRecorder(t *testing.T) {
	rec := httptest.NewRecorder()
	sse.SetHeaders(rec.Header())
	w := sse.NewWriter(rec)
	for i := range 5 {
		rec.Flushed = false
		if err := w.WriteEvent(ev("message", fmt.Sprint(i), fmt.Sprint(i), 0)); err != nil {
			t.Fatal(err)
		}
		if !rec.Flushed {
			t.Fatalf("event %d not flushed", i)
		}
		got, err := readAll(sse.NewReader(bytes.NewReader(rec.Body.Bytes()), 0))
		if err != io.EOF || len(got) != i+1 || string(got[i].Data) != fmt.Sprint(i) {
			t.Fatalf("after event %d body has %s, %v", i, fmtEvents(got), err)
		}
	}
	rec.Flushed = false
	if err := w.WriteComment("keepalive"); err != nil {
		t.Fatal(err)
	}
	if !rec.Flushed {
		t.Fatal("comment not flushed")
	}
	if ct := rec.Header().Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("Content-Type = %q", ct)
	}
}

// middleware hides the recorder's Flush method but exposes it via Unwrap,
// like most logging/metrics wrappers do.
type middleware struct{ http.ResponseWriter }

func (m middleware) Unwrap() http.ResponseWriter { return m.ResponseWriter }

// plainRW is a ResponseWriter that cannot flush at all.
type plainRW struct {
	bytes.Buffer
	h http.Header
}

func (p *plainRW) Header() http.Header { return p.h }
func (p *plainRW) WriteHeader(int)     {}

// countingFlusher counts Flush calls and records the bytes present at each.
type countingFlusher struct {
	bytes.Buffer
	at  []int
	err error
}

func (c *countingFlusher) Flush() error {
	c.at = append(c.at, c.Len())
	return c.err
}

// httpFlusher has an http.Flusher-style Flush without a result.
type httpFlusher struct {
	bytes.Buffer
	n int
}

func (h *httpFlusher) Flush() { h.n++ }

func TestWriterFlushVariants(t *testing.T) {
	t.Run("wrapped ResponseWriter", func(t *testing.T) {
		rec := httptest.NewRecorder()
		w := sse.NewWriter(middleware{rec})
		if err := w.WriteEvent(d("a")); err != nil {
			t.Fatal(err)
		}
		if !rec.Flushed {
			t.Fatal("not flushed through Unwrap")
		}
	})
	t.Run("unflushable ResponseWriter", func(t *testing.T) {
		p := &plainRW{h: http.Header{}}
		w := sse.NewWriter(p)
		if err := w.WriteEvent(d("a")); err != nil {
			t.Fatal(err)
		}
		if p.String() != "data: a\n\n" {
			t.Fatalf("wrote %q", p.String())
		}
	})
	t.Run("Flush() error", func(t *testing.T) {
		c := &countingFlusher{}
		w := sse.NewWriter(c)
		for range 3 {
			if err := w.WriteEvent(d("a")); err != nil {
				t.Fatal(err)
			}
		}
		if want := []int{9, 18, 27}; fmt.Sprint(c.at) != fmt.Sprint(want) {
			t.Fatalf("flushed at %v, want %v", c.at, want)
		}
		c.err = errBoom
		err := w.WriteEvent(d("a"))
		if !errors.Is(err, errBoom) {
			t.Fatalf("err = %v, want boom", err)
		}
		if err2 := w.WriteComment("x"); err2 != err {
			t.Fatalf("flush error not sticky: %v", err2)
		}
	})
	t.Run("http.Flusher", func(t *testing.T) {
		h := &httpFlusher{}
		w := sse.NewWriter(h)
		_ = w.WriteEvent(d("a"))
		_ = w.WriteComment("b")
		if h.n != 2 {
			t.Fatalf("flushes = %d, want 2", h.n)
		}
	})
}

// failWriter fails every write.
type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errBoom }

func TestWriterWriteErrorSticky(t *testing.T) {
	w := sse.NewWriter(failWriter{})
	err := w.WriteEvent(d("a"))
	if !errors.Is(err, errBoom) || !strings.Contains(err.Error(), "sse") {
		t.Fatalf("err = %v", err)
	}
	if err2 := w.WriteEvent(d("b")); err2 != err {
		t.Fatalf("not sticky: %v", err2)
	}
}

func TestWriterOneWritePerEvent(t *testing.T) {
	var writes int
	cw := writerFunc(func(p []byte) (int, error) { writes++; return len(p), nil })
	w := sse.NewWriter(cw)
	_ = w.WriteEvent(ev("t", "a\nb\nc", "1", 3))
	_ = w.WriteComment("k")
	if writes != 2 {
		t.Fatalf("writes = %d, want 2", writes)
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// TestWriterConcurrent writes events and keepalives from several goroutines
// and checks that nothing is interleaved.
func TestWriterConcurrent(t *testing.T) {
	var buf bytes.Buffer
	w := sse.NewWriter(&buf)
	const workers, per = 8, 200
	var wg sync.WaitGroup
	for g := range workers {
		wg.Go(func() {
			for i := range per {
				data := strings.Repeat(fmt.Sprintf("%d-%d\n", g, i), 5)
				if err := w.WriteEvent(ev("m", data, fmt.Sprint(g), 0)); err != nil {
					t.Error(err)
				}
				if err := w.WriteComment("ka"); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	r := sse.NewReader(&buf, 0)
	got, err := readAll(r)
	if err != io.EOF || len(got) != workers*per {
		t.Fatalf("read %d events, err %v", len(got), err)
	}
	for _, e := range got {
		var g, i int
		if _, err := fmt.Sscanf(string(e.Data), "%d-%d", &g, &i); err != nil || e.ID != fmt.Sprint(g) ||
			string(e.Data) != strings.Repeat(fmt.Sprintf("%d-%d\n", g, i), 5) {
			t.Fatalf("corrupt event %+v", e)
		}
	}
}

// randString returns a random string over an alphabet that stresses SSE
// framing, excluding the bytes in forbid.
func randString(rng *rand.Rand, maxLen int, forbid string) string {
	alphabet := []string{"a", "Z", "0", " ", ":", "\r", "\n", "\r\n", "\x00", "é", "\xff", "data", "id: ", "\t", "{\"jsonrpc\":\"2.0\"}"}
	var b strings.Builder
	for range rng.IntN(maxLen + 1) {
		s := alphabet[rng.IntN(len(alphabet))]
		if strings.ContainsAny(s, forbid) {
			continue
		}
		b.WriteString(s)
	}
	return b.String()
}

// normalizeNewlines maps CRLF and CR to LF, as a Writer/Reader pair does.
func normalizeNewlines(b []byte) []byte {
	b = bytes.ReplaceAll(b, []byte("\r\n"), []byte("\n"))
	return bytes.ReplaceAll(b, []byte("\r"), []byte("\n"))
}

// TestRoundTripRandom writes many random events and reads them back.
func TestRoundTripRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(0x5e5, 2025))
	for round := range 50 {
		var events []sse.Event
		var buf bytes.Buffer
		w := sse.NewWriter(&buf)
		for range 1 + rng.IntN(100) {
			e := sse.Event{
				Type: randString(rng, 5, "\r\n"),
				Data: []byte(randString(rng, 30, "")),
				ID:   randString(rng, 3, "\r\n\x00"),
			}
			if rng.IntN(4) == 0 {
				e.Retry = rng.IntN(100000)
			}
			if rng.IntN(3) == 0 {
				e.Data = nil
			}
			if err := w.WriteEvent(e); err != nil {
				t.Fatal(err)
			}
			if rng.IntN(5) == 0 {
				if err := w.WriteComment(randString(rng, 5, "\r\n")); err != nil {
					t.Fatal(err)
				}
			}
			events = append(events, e)
		}
		var src io.Reader = bytes.NewReader(buf.Bytes())
		if round%2 == 1 {
			src = iotest.OneByteReader(src)
		}
		r := sse.NewReader(src, 0)
		lastID := ""
		for i, want := range events {
			got, err := r.Next()
			if err != nil {
				t.Fatalf("round %d event %d: %v", round, i, err)
			}
			if want.ID != "" {
				lastID = want.ID
			}
			if got.Type != want.Type || got.ID != want.ID || got.Retry != want.Retry ||
				!bytes.Equal(got.Data, normalizeNewlines(want.Data)) || r.LastEventID() != lastID {
				t.Fatalf("round %d event %d:\n got %s lastID %q\nwant %s lastID %q", round, i,
					fmtEvents([]sse.Event{got}), r.LastEventID(), fmtEvents([]sse.Event{want}), lastID)
			}
		}
		if _, err := r.Next(); err != io.EOF {
			t.Fatalf("round %d: trailing %v", round, err)
		}
	}
}

// TestHTTPRoundTrip streams events over a real HTTP connection.
func TestHTTPRoundTrip(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, req *http.Request) {
		sse.SetHeaders(rw.Header())
		w := sse.NewWriter(rw)
		_ = w.WriteEvent(sse.Event{ID: "p0"}) // MCP priming event
		for i := range 3 {
			_ = w.WriteComment("keepalive")
			_ = w.WriteEvent(ev("message", fmt.Sprintf(`{"jsonrpc":"2.0","id":%d}`, i), fmt.Sprint(i), 0))
		}
	}))
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != sse.ContentType {
		t.Fatalf("Content-Type %q", ct)
	}
	r := sse.NewReader(resp.Body, 1<<10)
	got, err := readAll(r)
	if err != io.EOF || len(got) != 4 || len(got[0].Data) != 0 || got[0].ID != "p0" ||
		string(got[3].Data) != `{"jsonrpc":"2.0","id":2}` || r.LastEventID() != "2" || r.Comments() != 3 {
		t.Fatalf("got %s, %v, lastID %q", fmtEvents(got), err, r.LastEventID())
	}
}

// TestWriterLeanHoldsNoBuffer: a lean writer writes what any writer does
// and keeps no buffer between writes; a default one keeps its buffer.
func TestWriterLeanHoldsNoBuffer(t *testing.T) {
	for _, lean := range []bool{false, true} {
		var buf bytes.Buffer
		w := sse.NewWriter(&buf)
		if lean {
			w.Lean()
		}
		if err := w.WriteEvent(ev("message", "a\nb", "", 0)); err != nil {
			t.Fatal(err)
		}
		if got := w.Buffered(); (got == 0) != lean {
			t.Errorf("lean=%v: holds a buffer of %d bytes after an event", lean, got)
		}
		if err := w.WriteComment("keepalive"); err != nil {
			t.Fatal(err)
		}
		if got := w.Buffered(); (got == 0) != lean {
			t.Errorf("lean=%v: holds a buffer of %d bytes after a comment", lean, got)
		}
		if want := "event: message\ndata: a\ndata: b\n\n: keepalive\n\n"; buf.String() != want {
			t.Errorf("lean=%v: wrote %q, want %q", lean, buf.String(), want)
		}
	}
}

// A lean writer pays one allocation per event, of the event's size, not a
// buffer grown from nothing (the HTTP+SSE transport's stream is lean and
// carries every call's answer).
func TestWriterLeanAllocatesOncePerEvent(t *testing.T) {
	w := sse.NewWriter(io.Discard)
	w.Lean()
	e := ev("message", strings.Repeat("x", 64<<10), "7", 0)
	if n := allocstest.Least(50, func() {
		if err := w.WriteEvent(e); err != nil {
			t.Fatal(err)
		}
	}); n > 1 {
		t.Errorf("a lean 64 KiB event costs %.0f allocations, want 1", n)
	}
}
