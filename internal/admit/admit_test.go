package admit

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// get sends GET path to h on a real server and returns the status.
func get(t *testing.T, base, path string) int {
	t.Helper()
	resp, err := http.Get(base + path)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// background sends GET url from a goroutine of its own, ignoring the answer.
func background(url string) {
	if resp, err := http.Get(url); err == nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
}

// The in-flight bound refuses the request over it with 503 and Retry-After
// at once; health probes are never counted or refused; a stream that
// called KeepOpen and work that called HoldSlot leave and keep their places.
func TestInflightBound(t *testing.T) {
	block := make(chan struct{})
	entered := make(chan string, 4)
	var held func()
	h := Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/block":
			entered <- "block"
			<-block
		case "/stream":
			KeepOpen(w, r)
			entered <- "stream"
			<-block
		case "/hold":
			held = HoldSlot(r)
		}
	}), Config{MaxInflight: 1})
	srv := httptest.NewServer(h)
	defer srv.Close()
	defer close(block)

	// A stream gives its place back: another request fits beside it.
	go background(srv.URL + "/stream")
	if got := <-entered; got != "stream" {
		t.Fatalf("entered %q", got)
	}
	if s := get(t, srv.URL, "/ok"); s != http.StatusOK {
		t.Fatalf("beside a stream: %d, want 200", s)
	}

	// A held place outlives its handler until released.
	if s := get(t, srv.URL, "/hold"); s != http.StatusOK {
		t.Fatalf("hold: %d", s)
	}
	resp, err := http.Get(srv.URL + "/ok")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") != "1" {
		t.Fatalf("while a place is held: %d Retry-After %q, want 503 and 1", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	if s := get(t, srv.URL, "/health/liveliness"); s != http.StatusOK {
		t.Fatalf("health while full: %d, want 200", s)
	}
	held()
	held() // a second release is a no-op, not a second place
	if s := get(t, srv.URL, "/ok"); s != http.StatusOK {
		t.Fatalf("after release: %d, want 200", s)
	}

	// A request running holds its place; the next is refused.
	go background(srv.URL + "/block")
	<-entered
	if s := get(t, srv.URL, "/ok"); s != http.StatusServiceUnavailable {
		t.Fatalf("while full: %d, want 503", s)
	}
}

// A body trickled slower than the read deadline is cut; one read in time
// is served, and its deadline does not outlive the read.
func TestBodyReadDeadline(t *testing.T) {
	got := make(chan error, 1)
	h := Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, err := io.ReadAll(r.Body)
		if err == nil {
			time.Sleep(150 * time.Millisecond) // past the deadline, after the body
			_, err = w.Write([]byte("ok"))
		}
		got <- err
	}), Config{BodyReadTimeout: 100 * time.Millisecond})
	srv := httptest.NewServer(h)
	defer srv.Close()

	resp, err := http.Post(srv.URL+"/mcp", "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err := <-got; err != nil || string(b) != "ok" {
		t.Fatalf("prompt body: %v %q", err, b)
	}

	pr, pw := io.Pipe()
	go func() {
		_, _ = pw.Write([]byte(`{"a":`))
		time.Sleep(400 * time.Millisecond)
		_ = pw.CloseWithError(io.ErrUnexpectedEOF)
	}()
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/mcp", pr)
	if resp, err := http.DefaultClient.Do(req); err == nil {
		resp.Body.Close()
	}
	if err := <-got; err == nil {
		t.Fatal("a trickled body was read to its end past the deadline")
	}
}

// A request from a rebinding page is refused before the handler runs.
func TestGuardRunsFirst(t *testing.T) {
	reached := false
	h := Handler(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { reached = true }), Config{})
	r := httptest.NewRequest(http.MethodPost, "http://evil.example/mcp", strings.NewReader(`{}`))
	r = r.WithContext(context.WithValue(r.Context(), http.LocalAddrContextKey, &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 4000}))
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	if w.Code != http.StatusForbidden || reached || !strings.Contains(w.Body.String(), `"code":-32600`) {
		t.Fatalf("rebinding request: %d reached=%v %s", w.Code, reached, w.Body)
	}
}
