package h1serve

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpgw/mcpgw/internal/shallow"

	"github.com/mcpgw/mcpgw/internal/handoff"
	"github.com/mcpgw/mcpgw/internal/shallow/shallowtest"
)

// wrapped is a middleware with its own ResponseWriter wrapper, as the
// gateway's observers have: it notes "after" through handoff.After once
// its handler returned, or at once when the response was not handed off.
func wrapped(next http.Handler, events chan<- string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next.ServeHTTP(unwrapper{w}, r)
		events <- "wrapper returned"
		handoff.Finally(w, func() { events <- "after" })
	})
}

type unwrapper struct{ http.ResponseWriter }

func (u unwrapper) Unwrap() http.ResponseWriter { return u.ResponseWriter }

// handedOff opens a stream, hands the rest to the server and returns: the
// continuation (cont) runs after the whole chain returned.
func handedOff(events chan<- string, cont func(w http.ResponseWriter, r *http.Request)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, "open\n")
		_ = http.NewResponseController(w).Flush()
		if !handoff.Continue(w, func() { cont(w, r) }) {
			events <- "not continued"
			return
		}
		if handoff.Continue(w, func() {}) {
			events <- "continued twice"
		}
		events <- "handler returned"
	})
}

func next(t *testing.T, events <-chan string) string {
	t.Helper()
	select {
	case e := <-events:
		return e
	case <-time.After(5 * time.Second):
		t.Fatal("timed out waiting for an event")
		return ""
	}
}

func expect(t *testing.T, events <-chan string, want ...string) {
	t.Helper()
	for _, w := range want {
		if got := next(t, events); got != w {
			t.Fatalf("event %q, want %q", got, w)
		}
	}
}

// TestHandoffRunsAfterChain: the continuation runs once the handler chain
// has returned, not on top of its frames; it writes to the same response,
// the wrapper's after-work runs when it returned, and the connection then
// serves its next request.
func TestHandoffRunsAfterChain(t *testing.T) {
	events := make(chan string, 16)
	h := wrapped(handedOff(events, func(w http.ResponseWriter, r *http.Request) {
		buf := make([]byte, 8<<10)
		stack := string(buf[:runtime.Stack(buf, false)])
		if strings.Contains(stack, "HandlerFunc.ServeHTTP") {
			events <- "continuation runs on the handler's frames:\n" + stack
			return
		}
		events <- "continuation"
		_, _ = io.WriteString(w, "more\n")
	}), events)
	addr := serve(t, &Server{Handler: h}, nil)
	c, br := rawConn(t, addr)
	_, _ = io.WriteString(c, "GET /a HTTP/1.1\r\nHost: a\r\n\r\n")
	expect(t, events, "handler returned", "wrapper returned", "continuation", "after")
	resp, body := readResp(t, br, "GET")
	if resp.StatusCode != 200 || body != "open\nmore\n" || resp.Close {
		t.Fatalf("%d %q close %v", resp.StatusCode, body, resp.Close)
	}
	_, _ = io.WriteString(c, "GET /b HTTP/1.1\r\nHost: a\r\n\r\n")
	expect(t, events, "handler returned", "wrapper returned", "continuation", "after")
	if _, body := readResp(t, br, "GET"); body != "open\nmore\n" {
		t.Fatalf("second response %q", body)
	}
}

// TestHandoffNotHandedOff: without a continuation a wrapper's After
// reports false and the wrapper does its work itself; a continuation can
// not be set once the handler returned.
func TestHandoffNotHandedOff(t *testing.T) {
	late := make(chan http.ResponseWriter, 1)
	events := make(chan string, 16)
	h := wrapped(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "plain")
		late <- w
	}), events)
	addr := serve(t, &Server{Handler: h}, nil)
	c, br := rawConn(t, addr)
	_, _ = io.WriteString(c, "GET / HTTP/1.1\r\nHost: a\r\n\r\n")
	expect(t, events, "wrapper returned", "after")
	if _, body := readResp(t, br, "GET"); body != "plain" {
		t.Fatalf("%q", body)
	}
	if handoff.Continue(<-late, func() {}) {
		t.Error("a continuation was taken after the handler returned")
	}
}

// TestHandoffDisconnect: a client leaving while its stream is handed off
// cancels the request's context, through the watcher and the fallback.
func TestHandoffDisconnect(t *testing.T) {
	for _, mode := range []string{"watcher", "fallback"} {
		t.Run(mode, func(t *testing.T) {
			var wrap func(net.Listener) net.Listener
			if mode == "fallback" {
				wrap = func(l net.Listener) net.Listener { return plainListener{l} }
			}
			events := make(chan string, 16)
			h := wrapped(handedOff(events, func(w http.ResponseWriter, r *http.Request) {
				events <- "continuation"
				select {
				case <-r.Context().Done():
					events <- "cancelled"
				case <-time.After(5 * time.Second):
					events <- "not cancelled"
				}
			}), events)
			addr := serve(t, &Server{Handler: h}, wrap)
			c, br := rawConn(t, addr)
			_, _ = io.WriteString(c, "GET / HTTP/1.1\r\nHost: a\r\n\r\n")
			expect(t, events, "handler returned", "wrapper returned", "continuation")
			if line, _ := br.ReadString('\n'); !strings.HasPrefix(line, "HTTP/1.1 200") {
				t.Fatalf("status line %q", line)
			}
			time.Sleep(60 * time.Millisecond) // past the watcher's first scan
			c.Close()
			expect(t, events, "cancelled", "after")
		})
	}
}

// TestHandoffShutdown: Shutdown counts a handed-off stream as active and
// waits for it; Close cancels it, and the after-work still runs.
func TestHandoffShutdown(t *testing.T) {
	events := make(chan string, 16)
	h := wrapped(handedOff(events, func(w http.ResponseWriter, r *http.Request) {
		events <- "continuation"
		<-r.Context().Done()
		events <- "cancelled"
	}), events)
	s := &Server{Handler: h}
	addr := serve(t, s, nil)
	c, _ := rawConn(t, addr)
	_, _ = io.WriteString(c, "GET / HTTP/1.1\r\nHost: a\r\n\r\n")
	expect(t, events, "handler returned", "wrapper returned", "continuation")
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if err := s.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Shutdown with a handed-off stream: %v", err)
	}
	select {
	case e := <-events:
		t.Fatalf("the stream ended at Shutdown: %q", e)
	default:
	}
	s.Close()
	expect(t, events, "cancelled", "after")
}

// TestHandoffPanic: a panic in a continuation is logged and closes its
// connection only; the wrappers' after-work still runs.
func TestHandoffPanic(t *testing.T) {
	var logged bytes.Buffer
	var mu sync.Mutex
	events := make(chan string, 16)
	h := wrapped(handedOff(events, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/panic" {
			panic("continuation boom")
		}
	}), events)
	s := &Server{Handler: h, ErrorLog: newLockedLog(&logged, &mu)}
	addr := serve(t, s, nil)
	c, br := rawConn(t, addr)
	_, _ = io.WriteString(c, "GET /panic HTTP/1.1\r\nHost: a\r\n\r\n")
	expect(t, events, "handler returned", "wrapper returned", "after")
	if _, err := io.ReadAll(br); err != nil {
		t.Errorf("connection of a panicking continuation: %v", err)
	}
	c2, br2 := rawConn(t, addr)
	_, _ = io.WriteString(c2, "GET / HTTP/1.1\r\nHost: a\r\n\r\n")
	expect(t, events, "handler returned", "wrapper returned", "after")
	if resp, body := readResp(t, br2, "GET"); resp.StatusCode != 200 || body != "open\n" {
		t.Errorf("%d %q", resp.StatusCode, body)
	}
	mu.Lock()
	defer mu.Unlock()
	if !strings.Contains(logged.String(), "continuation boom") {
		t.Errorf("panic not logged: %q", logged.String())
	}
}

// TestHandoffPanicInAStepNamesItsSite: a panic in a step a continuation
// runs through shallow.Do is logged with the frames where it happened,
// which the held goroutine's own stack does not show.
func TestHandoffPanicInAStepNamesItsSite(t *testing.T) {
	var logged bytes.Buffer
	var mu sync.Mutex
	events := make(chan string, 16)
	h := wrapped(handedOff(events, func(w http.ResponseWriter, r *http.Request) {
		shallow.Do(stepThatPanics)
	}), events)
	addr := serve(t, &Server{Handler: h, ErrorLog: newLockedLog(&logged, &mu)}, nil)
	c, br := rawConn(t, addr)
	_, _ = io.WriteString(c, "GET / HTTP/1.1\r\nHost: a\r\n\r\n")
	expect(t, events, "handler returned", "wrapper returned", "after")
	_, _ = io.ReadAll(br)
	mu.Lock()
	defer mu.Unlock()
	if out := logged.String(); !strings.Contains(out, "step boom") || !strings.Contains(out, "stepThatPanics") {
		t.Errorf("logged %q, want the value and the step's frame", out)
	}
}

//go:noinline
func stepThatPanics() { panic("step boom") }

// TestHandoffWriteAfterEnd: a goroutine a continuation left behind gets
// errors once the response ended and writes nothing into the next one.
func TestHandoffWriteAfterEnd(t *testing.T) {
	release := make(chan struct{})
	lateErr := make(chan error, 1)
	events := make(chan string, 16)
	h := wrapped(handedOff(events, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/1" {
			return
		}
		go func() {
			<-release
			_, err := io.WriteString(w, "LATE")
			lateErr <- errors.Join(err, http.NewResponseController(w).Flush())
		}()
	}), events)
	addr := serve(t, &Server{Handler: h}, nil)
	c, br := rawConn(t, addr)
	_, _ = io.WriteString(c, "GET /1 HTTP/1.1\r\nHost: a\r\n\r\n")
	expect(t, events, "handler returned", "wrapper returned", "after")
	if _, body := readResp(t, br, "GET"); body != "open\n" {
		t.Fatalf("first body %q", body)
	}
	close(release)
	if err := <-lateErr; err == nil {
		t.Error("a write after the continuation returned succeeded")
	}
	_, _ = io.WriteString(c, "GET /2 HTTP/1.1\r\nHost: a\r\n\r\n")
	expect(t, events, "handler returned", "wrapper returned", "after")
	if resp, body := readResp(t, br, "GET"); resp.StatusCode != 200 || body != "open\n" {
		t.Errorf("second response: %d %q", resp.StatusCode, body)
	}
}

// TestHandoffHandlerPanics: a handler that panics after handing its
// stream off still has its continuation run (its request's context
// cancelled), so what the stream holds is released, and the wrappers'
// after-work runs; the connection closes, the server goes on.
func TestHandoffHandlerPanics(t *testing.T) {
	var logged bytes.Buffer
	var mu sync.Mutex
	events := make(chan string, 16)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer handoff.Finally(w, func() { events <- "after" })
		handoff.Continue(w, func() {
			if r.Context().Err() != nil {
				events <- "continuation, cancelled"
				return
			}
			events <- "continuation, live"
		})
		if r.URL.Path == "/panic" {
			panic("handler boom")
		}
	})
	s := &Server{Handler: h, ErrorLog: newLockedLog(&logged, &mu)}
	addr := serve(t, s, nil)
	c, br := rawConn(t, addr)
	_, _ = io.WriteString(c, "GET /panic HTTP/1.1\r\nHost: a\r\n\r\n")
	expect(t, events, "continuation, cancelled", "after")
	if _, err := io.ReadAll(br); err != nil {
		t.Errorf("connection of a panicking handler: %v", err)
	}
	c2, br2 := rawConn(t, addr)
	_, _ = io.WriteString(c2, "GET / HTTP/1.1\r\nHost: a\r\n\r\n")
	expect(t, events, "continuation, live", "after")
	if resp, _ := readResp(t, br2, "GET"); resp.StatusCode != 200 {
		t.Errorf("status %d", resp.StatusCode)
	}
	mu.Lock()
	defer mu.Unlock()
	if !strings.Contains(logged.String(), "handler boom") {
		t.Errorf("panic not logged: %q", logged.String())
	}
}

// TestHandoffRunsOnAFreshGoroutine: the continuation runs on a goroutine
// started for it, not on the handler's, whose stack the handler grew; the
// connection goes on there (its next request is served).
func TestHandoffRunsOnAFreshGoroutine(t *testing.T) {
	events := make(chan string, 16)
	var handlerG string
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		handlerG = shallowtest.GoroutineID()
		handoff.Continue(w, func() {
			if g := shallowtest.GoroutineID(); g == handlerG {
				events <- "continuation on the handler's goroutine " + g
				return
			}
			events <- "continuation"
		})
	})
	addr := serve(t, &Server{Handler: h}, nil)
	c, br := rawConn(t, addr)
	for range 2 {
		_, _ = io.WriteString(c, "GET / HTTP/1.1\r\nHost: a\r\n\r\n")
		expect(t, events, "continuation")
		if resp, _ := readResp(t, br, "GET"); resp.StatusCode != 200 {
			t.Fatalf("status %d", resp.StatusCode)
		}
	}
}

// TestHandoffHeldStackIs2KB: held continuations that only wait keep a
// 2 KB stack each after a collection, though their handlers grew theirs
// to 16 KB (run on the handler's goroutine, 4 KB at best).
func TestHandoffHeldStackIs2KB(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector's stack guard makes every goroutine outgrow 2 KB")
	}
	const n = 200
	waiting := make(chan struct{}, n)
	release := make(chan struct{})
	defer close(release)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		shallowtest.Deep(12)
		handoff.Continue(w, func() {
			waiting <- struct{}{}
			<-release
		})
	})
	addr := serve(t, &Server{Handler: h}, nil)
	before := shallowtest.StackInuse()
	for range n {
		c, _ := rawConn(t, addr)
		_, _ = io.WriteString(c, "GET / HTTP/1.1\r\nHost: a\r\n\r\n")
		<-waiting
	}
	per := float64(shallowtest.StackInuse()-before) / n
	t.Logf("stack per held continuation: %.0f B", per)
	if per > 3<<10 {
		t.Fatalf("stack per held continuation %.0f B, want 2 KB", per)
	}
}
