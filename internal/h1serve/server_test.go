package h1serve

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/mcpgw/mcpgw/internal/reqscope"
)

// plainListener hides its connections' file descriptors, so that the
// server falls back to its portable disconnect watch.
type plainListener struct{ net.Listener }

type plainConn struct{ net.Conn }

func (l plainListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return plainConn{c}, nil
}

// countingListener counts accepted connections.
type countingListener struct {
	net.Listener
	n *atomic.Int32
}

func (l countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.n.Add(1)
	}
	return c, err
}

// serve starts s on a loopback listener (wrapped by wrap, if not nil) and
// returns its address; the server is closed when the test ends.
func serve(t *testing.T, s *Server, wrap func(net.Listener) net.Listener) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	if wrap != nil {
		ln = wrap(ln)
	}
	if s.ErrorLog == nil {
		s.ErrorLog = quietLog()
	}
	done := make(chan error, 1)
	go func() { done <- s.Serve(ln) }()
	t.Cleanup(func() {
		s.Close()
		if err := <-done; !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("Serve: %v", err)
		}
	})
	return addr
}

func rawConn(t *testing.T, addr string) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	return c, bufio.NewReader(c)
}

func readResp(t *testing.T, br *bufio.Reader, method string) (*http.Response, string) {
	t.Helper()
	resp, err := http.ReadResponse(br, &http.Request{Method: method})
	if err != nil {
		t.Fatalf("reading response: %v", err)
	}
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading body: %v", err)
	}
	return resp, string(b)
}

func TestKeepAliveReusesConnection(t *testing.T) {
	var n atomic.Int32
	addr := serve(t, &Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		_, _ = w.Write(b)
	})}, func(l net.Listener) net.Listener { return countingListener{l, &n} })
	client := &http.Client{Transport: &http.Transport{}}
	defer client.CloseIdleConnections()
	for i := 0; i < 20; i++ {
		resp, err := client.Post("http://"+addr+"/", "text/plain", strings.NewReader("body"))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(b) != "body" || resp.ContentLength != 4 {
			t.Fatalf("got %q, length %d", b, resp.ContentLength)
		}
	}
	if got := n.Load(); got != 1 {
		t.Errorf("%d connections for 20 requests, want 1", got)
	}
}

// framingHandler answers each path of TestResponseFraming.
func framingHandler(big string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/small":
			_, _ = io.WriteString(w, "<html>hi</html>")
		case "/big":
			w.Header().Set("Content-Type", "text/plain")
			_, _ = io.WriteString(w, big)
		case "/biglength":
			w.Header().Set("Content-Length", "24576")
			_, _ = io.WriteString(w, big)
		case "/flush":
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = io.WriteString(w, "a")
			w.(http.Flusher).Flush()
			_, _ = io.WriteString(w, "b")
		case "/nocontent":
			w.WriteHeader(http.StatusNoContent)
			_, err := io.WriteString(w, "x")
			if !errors.Is(err, http.ErrBodyNotAllowed) {
				panic("write on 204 did not fail")
			}
		case "/short":
			w.Header().Set("Content-Length", "10")
			_, _ = io.WriteString(w, "abc")
		case "/toolong":
			w.Header().Set("Content-Length", "2")
			if _, err := io.WriteString(w, "abc"); !errors.Is(err, http.ErrContentLength) {
				panic("overlong write did not fail")
			}
			_, _ = io.WriteString(w, "ab")
		case "/split":
			w.Header().Set("X-Bad", "a\r\nInjected: 1")
			w.Header()["Bad Key"] = []string{"v"}
		}
	})
}

func TestResponseFraming(t *testing.T) {
	big := strings.Repeat("x", 3*writeBufSize)
	addr := serve(t, &Server{Handler: framingHandler(big)}, nil)
	cases := []struct {
		method, path, proto string
		status              int
		length              int64
		chunked             bool
		body                string
		closed              bool
	}{
		{"GET", "/small", "HTTP/1.1", 200, 15, false, "<html>hi</html>", false},
		{"GET", "/big", "HTTP/1.1", 200, -1, true, big, false},
		{"GET", "/biglength", "HTTP/1.1", 200, int64(len(big)), false, big, false},
		{"GET", "/flush", "HTTP/1.1", 200, -1, true, "ab", false},
		{"GET", "/nocontent", "HTTP/1.1", 204, 0, false, "", false},
		{"HEAD", "/small", "HTTP/1.1", 200, 15, false, "", false},
		{"HEAD", "/big", "HTTP/1.1", 200, -1, false, "", false},
		{"GET", "/big", "HTTP/1.0", 200, -1, false, big, true},
		{"GET", "/toolong", "HTTP/1.1", 200, 2, false, "ab", false},
		{"GET", "/split", "HTTP/1.1", 200, 0, false, "", false},
	}
	for _, tc := range cases {
		t.Run(tc.method+tc.path+tc.proto, func(t *testing.T) {
			c, br := rawConn(t, addr)
			_, _ = io.WriteString(c, tc.method+" "+tc.path+" "+tc.proto+"\r\nHost: a\r\n\r\n")
			resp, body := readResp(t, br, tc.method)
			if resp.StatusCode != tc.status || resp.ContentLength != tc.length || body != tc.body {
				t.Errorf("got %d, length %d, body %.20q; want %d, %d, %.20q", resp.StatusCode, resp.ContentLength, body, tc.status, tc.length, tc.body)
			}
			if chunked := len(resp.TransferEncoding) > 0; chunked != tc.chunked {
				t.Errorf("chunked %v, want %v", chunked, tc.chunked)
			}
			if resp.Header.Get("Date") == "" {
				t.Error("no Date header")
			}
			if tc.path == "/small" && resp.Header.Get("Content-Type") != "text/html; charset=utf-8" {
				t.Errorf("sniffed Content-Type %q", resp.Header.Get("Content-Type"))
			}
			if tc.path == "/split" && (resp.Header.Get("Injected") != "" || resp.Header.Get("X-Bad") != "a  Injected: 1") {
				t.Errorf("header injection: %v", resp.Header)
			}
			if tc.proto == "HTTP/1.1" {
				// The connection stays usable.
				_, _ = io.WriteString(c, "GET /small HTTP/1.1\r\nHost: a\r\n\r\n")
				if r2, _ := readResp(t, br, "GET"); r2.StatusCode != 200 {
					t.Errorf("second request: %d", r2.StatusCode)
				}
			}
			if tc.closed {
				if _, err := br.ReadByte(); err != io.EOF {
					t.Errorf("connection not closed after a response without length: %v", err)
				}
			}
		})
	}
	t.Run("short body closes", func(t *testing.T) {
		c, br := rawConn(t, addr)
		_, _ = io.WriteString(c, "GET /short HTTP/1.1\r\nHost: a\r\n\r\n")
		resp, err := http.ReadResponse(br, nil)
		if err != nil || resp.ContentLength != 10 {
			t.Fatalf("%v %v", resp, err)
		}
		if _, err := io.ReadAll(resp.Body); err == nil {
			t.Error("a body shorter than its Content-Length read without error")
		}
	})
}

func TestExpectContinue(t *testing.T) {
	addr := serve(t, &Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		_, _ = w.Write(b)
	})}, nil)
	c, br := rawConn(t, addr)
	_, _ = io.WriteString(c, "POST / HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n")
	line, err := br.ReadString('\n')
	if err != nil || line != "HTTP/1.1 100 Continue\r\n" {
		t.Fatalf("got %q, %v", line, err)
	}
	if l, _ := br.ReadString('\n'); l != "\r\n" {
		t.Fatalf("got %q after the 100", l)
	}
	_, _ = io.WriteString(c, "hello")
	if resp, body := readResp(t, br, "POST"); resp.StatusCode != 200 || body != "hello" {
		t.Fatalf("got %d %q", resp.StatusCode, body)
	}

	// A handler that answers without reading: no 100, and the connection
	// closes (the client may never send the body).
	addr = serve(t, &Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusUnauthorized)
	})}, nil)
	c, br = rawConn(t, addr)
	_, _ = io.WriteString(c, "POST / HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n")
	if resp, _ := readResp(t, br, "POST"); resp.StatusCode != 401 || !resp.Close {
		t.Fatalf("got %d, close %v", resp.StatusCode, resp.Close)
	}
}

func TestUnreadBody(t *testing.T) {
	var n atomic.Int32
	addr := serve(t, &Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {})},
		func(l net.Listener) net.Listener { return countingListener{l, &n} })
	c, br := rawConn(t, addr)
	// A small unread body is read past; the connection stays.
	_, _ = io.WriteString(c, "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nhelloGET / HTTP/1.1\r\nHost: a\r\n\r\n")
	readResp(t, br, "POST")
	if resp, _ := readResp(t, br, "GET"); resp.StatusCode != 200 {
		t.Fatal(resp.StatusCode)
	}
	// A large one closes it.
	big, br := rawConn(t, addr)
	wrote := make(chan struct{})
	go func() {
		defer close(wrote)
		_, _ = io.WriteString(big, "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 10000000\r\n\r\n")
		_, _ = big.Write(make([]byte, 1<<20))
	}()
	defer func() { big.Close(); <-wrote }()
	if resp, _ := readResp(t, br, "POST"); !resp.Close {
		t.Error("response to a request with a large unread body keeps the connection")
	}
	// A large body that does not come is not waited for: the answer is
	// sent at once and the connection closed.
	c, br = rawConn(t, addr)
	_, _ = io.WriteString(c, "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 4000000\r\n\r\nabc")
	_ = c.SetReadDeadline(time.Now().Add(time.Second))
	if resp, _ := readResp(t, br, "POST"); !resp.Close {
		t.Error("response to a request with a large unread body keeps the connection")
	}
}

// TestDisconnectCancels checks that a handler's context ends when its
// client goes away (reset or FIN), through the watcher and through the
// portable fallback, and that a pipelined request is not taken for a
// disconnect.
func TestDisconnectCancels(t *testing.T) {
	for _, mode := range []string{"watcher", "fallback", "watcher failed"} {
		t.Run(mode, func(t *testing.T) {
			var wrap func(net.Listener) net.Listener
			if mode == "fallback" {
				wrap = func(l net.Listener) net.Listener { return plainListener{l} }
			}
			cancelled := make(chan string, 4)
			srv := &Server{}
			srv.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.ReadAll(r.Body)
				if r.URL.Path == "/pipelined" {
					select {
					case <-r.Context().Done():
						cancelled <- "pipelined"
					case <-time.After(100 * time.Millisecond):
					}
					return
				}
				if r.URL.Path == "/stream" {
					w.(http.Flusher).Flush()
				}
				select {
				case <-r.Context().Done():
					cancelled <- r.URL.Path
				case <-time.After(5 * time.Second):
				}
			})
			addr := serve(t, srv, wrap)
			if mode == "watcher failed" {
				failWatcher(t, srv, addr)
			}
			for _, tc := range []struct{ path, body string }{{"/reset", ""}, {"/fin", ""}, {"/stream", ""}, {"/withbody", "abc"}} {
				c, err := net.Dial("tcp", addr)
				if err != nil {
					t.Fatal(err)
				}
				req := "POST " + tc.path + " HTTP/1.1\r\nHost: a\r\nContent-Length: " + strconv.Itoa(len(tc.body)) + "\r\n\r\n" + tc.body
				_, _ = io.WriteString(c, req)
				time.Sleep(30 * time.Millisecond)
				if tc.path == "/reset" {
					_ = c.(*net.TCPConn).SetLinger(0)
				}
				if tc.path == "/fin" {
					_ = c.(*net.TCPConn).CloseWrite()
				} else {
					c.Close()
				}
				select {
				case p := <-cancelled:
					if p != tc.path {
						t.Errorf("%s: cancelled %s", tc.path, p)
					}
				case <-time.After(2 * time.Second):
					t.Errorf("%s: the handler's context was not cancelled", tc.path)
				}
				c.Close()
			}
			c, br := rawConn(t, addr)
			_, _ = io.WriteString(c, "GET /pipelined HTTP/1.1\r\nHost: a\r\n\r\nGET /pipelined HTTP/1.1\r\nHost: a\r\n\r\n")
			readResp(t, br, "GET")
			readResp(t, br, "GET")
			select {
			case <-cancelled:
				t.Error("a pipelined request cancelled the running one")
			default:
			}
		})
	}
}

func TestTimeouts(t *testing.T) {
	wrote := make(chan error, 1)
	addr := serve(t, &Server{
		ReadHeaderTimeout: 200 * time.Millisecond,
		IdleTimeout:       300 * time.Millisecond,
		WriteTimeout:      300 * time.Millisecond,
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/slow" {
				time.Sleep(400 * time.Millisecond)
				_, _ = w.Write(bytes.Repeat([]byte("x"), 1<<20))
				wrote <- http.NewResponseController(w).Flush()
			}
		}),
	}, nil)
	closedWithin := func(c net.Conn, d time.Duration) bool {
		_ = c.SetReadDeadline(time.Now().Add(d))
		_, err := io.Copy(io.Discard, c)
		return err == nil
	}
	t.Run("read header", func(t *testing.T) {
		c, _ := rawConn(t, addr)
		_, _ = io.WriteString(c, "GET / HTTP/1.1\r\nHost: a\r\n")
		if !closedWithin(c, 2*time.Second) {
			t.Error("a slow head was not cut")
		}
	})
	t.Run("idle", func(t *testing.T) {
		c, br := rawConn(t, addr)
		_, _ = io.WriteString(c, "GET / HTTP/1.1\r\nHost: a\r\n\r\n")
		readResp(t, br, "GET")
		start := time.Now()
		if !closedWithin(c, 2*time.Second) || time.Since(start) < 200*time.Millisecond {
			t.Errorf("idle connection closed after %v", time.Since(start))
		}
	})
	t.Run("write", func(t *testing.T) {
		c, _ := rawConn(t, addr)
		_, _ = io.WriteString(c, "GET /slow HTTP/1.1\r\nHost: a\r\n\r\n")
		select {
		case err := <-wrote:
			if !errors.Is(err, syscall.ETIMEDOUT) && !isTimeout(err) {
				t.Errorf("write past WriteTimeout: %v", err)
			}
		case <-time.After(3 * time.Second):
			t.Error("the handler's write did not end")
		}
	})
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

func TestShutdown(t *testing.T) {
	release := make(chan struct{})
	started := make(chan struct{}, 1)
	s := &Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/wait" {
			started <- struct{}{}
			<-release
		}
		_, _ = io.WriteString(w, "done")
	})}
	addr := serve(t, s, nil)
	idle, ibr := rawConn(t, addr)
	_, _ = io.WriteString(idle, "GET / HTTP/1.1\r\nHost: a\r\n\r\n")
	readResp(t, ibr, "GET")
	busy, bbr := rawConn(t, addr)
	_, _ = io.WriteString(busy, "GET /wait HTTP/1.1\r\nHost: a\r\n\r\n")
	<-started

	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if err := s.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Shutdown with a busy handler: %v", err)
	}
	if _, err := ibr.ReadByte(); err != io.EOF {
		t.Errorf("idle connection not closed: %v", err)
	}
	if _, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		t.Error("still accepting after Shutdown")
	}
	done := make(chan error, 1)
	go func() { done <- s.Shutdown(context.Background()) }()
	close(release)
	resp, body := readResp(t, bbr, "GET")
	if body != "done" || !resp.Close {
		t.Errorf("in-flight request: %q, close %v", body, resp.Close)
	}
	if err := <-done; err != nil {
		t.Errorf("Shutdown: %v", err)
	}
}

func TestPanicRecovered(t *testing.T) {
	var logged bytes.Buffer
	var mu sync.Mutex
	s := &Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/panic" {
			panic("boom")
		}
	})}
	s.ErrorLog = newLockedLog(&logged, &mu)
	addr := serve(t, s, nil)
	c, br := rawConn(t, addr)
	_, _ = io.WriteString(c, "GET /panic HTTP/1.1\r\nHost: a\r\n\r\n")
	if _, err := br.ReadByte(); err != io.EOF {
		t.Errorf("connection of a panicking handler: %v", err)
	}
	c2, br2 := rawConn(t, addr)
	_, _ = io.WriteString(c2, "GET / HTTP/1.1\r\nHost: a\r\n\r\n")
	if resp, _ := readResp(t, br2, "GET"); resp.StatusCode != 200 {
		t.Error(resp.StatusCode)
	}
	mu.Lock()
	defer mu.Unlock()
	if !strings.Contains(logged.String(), "boom") {
		t.Errorf("panic not logged: %q", logged.String())
	}
}

// TestStreamHoldsNoBuffers checks that a handler that flushed holds no
// read or write buffer while it waits, and that the controller's
// deadlines reach the connection.
func TestStreamHoldsNoBuffers(t *testing.T) {
	checked := make(chan string, 1)
	addr := serve(t, &Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body)
		rc := http.NewResponseController(w)
		if err := rc.SetReadDeadline(time.Time{}); err != nil {
			checked <- err.Error()
			return
		}
		if err := rc.SetWriteDeadline(time.Time{}); err != nil {
			checked <- err.Error()
			return
		}
		w.Header().Set("X-Before", "1")
		_, _ = io.WriteString(w, "event\n\n")
		if err := rc.Flush(); err != nil {
			checked <- err.Error()
			return
		}
		rw := w.(*response)
		switch {
		case rw.out != nil:
			checked <- "write buffer held"
		case rw.c.rd.buf != nil:
			checked <- "read buffer held"
		case rw.hdr != nil:
			checked <- "header map held after the head was sent"
		default:
			checked <- ""
		}
		w.Header().Set("X-After", "1") // usable, without effect
		_, _ = io.WriteString(w, "more\n\n")
	})}, nil)
	c, br := rawConn(t, addr)
	_, _ = io.WriteString(c, "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\n\r\n{}")
	if msg := <-checked; msg != "" {
		t.Fatal(msg)
	}
	resp, body := readResp(t, br, "POST")
	if body != "event\n\nmore\n\n" || resp.Header.Get("X-Before") != "1" || resp.Header.Get("X-After") != "" {
		t.Fatalf("%d %q %v", resp.StatusCode, body, resp.Header)
	}
}

// TestWriteAfterHandler checks that a goroutine the handler started, using
// the ResponseWriter after the handler returned (a misuse net/http
// forbids), gets errors and writes nothing into the connection's next
// response; run with -race.
func TestWriteAfterHandler(t *testing.T) {
	release := make(chan struct{})
	lateErr := make(chan error, 1)
	addr := serve(t, &Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/1" {
			go func() {
				<-release
				w.WriteHeader(http.StatusTeapot)
				_, err := io.WriteString(w, "LATE")
				_, err2 := w.Write([]byte("LATE"))
				w.(http.Flusher).Flush()
				lateErr <- errors.Join(err, err2)
			}()
		}
		_, _ = io.WriteString(w, r.URL.Path)
	})}, nil)
	c, br := rawConn(t, addr)
	_, _ = io.WriteString(c, "GET /1 HTTP/1.1\r\nHost: a\r\n\r\n")
	if _, body := readResp(t, br, "GET"); body != "/1" {
		t.Fatalf("first body %q", body)
	}
	close(release) // the test saw the response on the wire: no happens-before with the server's goroutine
	err := <-lateErr
	if err == nil {
		t.Error("a write after the handler returned succeeded")
	}
	_, _ = io.WriteString(c, "GET /2 HTTP/1.1\r\nHost: a\r\n\r\n")
	resp, body := readResp(t, br, "GET")
	if resp.StatusCode != 200 || body != "/2" {
		t.Errorf("second response: %d %q", resp.StatusCode, body)
	}
}

// TestRefusedUploadAnswered checks that a client still uploading a body
// the handler refused without reading it gets the answer, not a reset:
// the server lingers before it closes, as net/http does.
func TestRefusedUploadAnswered(t *testing.T) {
	addr := serve(t, &Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusRequestEntityTooLarge)
	})}, nil)
	body := bytes.Repeat([]byte("x"), 8<<20)
	for i := 0; i < 10; i++ {
		client := &http.Client{Transport: &http.Transport{}}
		resp, err := client.Post("http://"+addr+"/", "text/plain", bytes.NewReader(body))
		if err != nil {
			t.Fatalf("attempt %d: %v", i, err)
		}
		resp.Body.Close()
		client.CloseIdleConnections()
		if resp.StatusCode != http.StatusRequestEntityTooLarge {
			t.Fatalf("attempt %d: %d", i, resp.StatusCode)
		}
	}
}

// TestPipelinedAfterOddResponses checks that after a response that went
// wrong or had a body it must not carry, a pipelined request is either
// answered intact or the connection closes: it is never read from bytes
// of the previous exchange, nor its response from stray bytes.
func TestPipelinedAfterOddResponses(t *testing.T) {
	addr := serve(t, &Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/next":
			_, _ = io.WriteString(w, "next")
		case "/over":
			w.Header().Set("Content-Length", "3")
			_, _ = io.WriteString(w, "abcdef")
		case "/short":
			w.Header().Set("Content-Length", "10")
			_, _ = io.WriteString(w, "abc")
		case "/head":
			_, _ = w.Write(bytes.Repeat([]byte("h"), 20000))
		case "/nocontent":
			w.WriteHeader(http.StatusNoContent)
			_, _ = io.WriteString(w, "body")
		case "/panic":
			_, _ = io.WriteString(w, "partial")
			panic("boom")
		case "/abort":
			w.(http.Flusher).Flush()
			panic(http.ErrAbortHandler)
		}
	})}, nil)
	next := "GET /next HTTP/1.1\r\nHost: a\r\n\r\nGET /next HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n"
	for _, tc := range []struct {
		name, req, method string
		closes            bool // after the first response (none for a panic)
	}{
		{"over content length", "GET /over HTTP/1.1\r\nHost: a\r\n\r\n", "GET", true},
		{"short content length", "GET /short HTTP/1.1\r\nHost: a\r\n\r\n", "GET", true},
		{"head with body", "HEAD /head HTTP/1.1\r\nHost: a\r\n\r\n", "HEAD", false},
		{"204 with body", "GET /nocontent HTTP/1.1\r\nHost: a\r\n\r\n", "GET", false},
		{"unread chunked body", "POST /next HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nGET\r\n0\r\n\r\n", "POST", false},
		{"bad chunked body", "POST /next HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nGETxx0\r\n\r\n", "POST", true},
		{"continue not sent", "POST /next HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\nContent-Length: 3\r\n\r\nabc", "POST", true},
		{"panic", "GET /panic HTTP/1.1\r\nHost: a\r\n\r\n", "", true},
		{"abort", "GET /abort HTTP/1.1\r\nHost: a\r\n\r\n", "GET", true}, // a truncated chunked body
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			_ = c.SetDeadline(time.Now().Add(5 * time.Second))
			_, _ = io.WriteString(c, tc.req+next)
			all, _ := io.ReadAll(c)
			br := bufio.NewReader(bytes.NewReader(all))
			if tc.method != "" {
				resp, err := http.ReadResponse(br, &http.Request{Method: tc.method})
				if err != nil {
					t.Fatalf("first response: %v (%q)", err, all)
				}
				_, _ = io.Copy(io.Discard, resp.Body)
			}
			nexts := 0
			for {
				resp, err := http.ReadResponse(br, &http.Request{Method: "GET"})
				if err != nil {
					break
				}
				b, err := io.ReadAll(resp.Body)
				if resp.StatusCode != 200 || string(b) != "next" || err != nil {
					t.Fatalf("a pipelined response: %d %q %v (all: %q)", resp.StatusCode, b, err, all)
				}
				nexts++
			}
			if rest, _ := io.ReadAll(br); len(rest) != 0 {
				t.Errorf("stray bytes: %q", rest)
			}
			if want := map[bool]int{true: 0, false: 2}[tc.closes]; nexts != want {
				t.Errorf("%d pipelined responses, want %d (all: %q)", nexts, want, all)
			}
		})
	}
}

// TestRequestScopeNeedsNoCopy: each request's context carries a request
// scope of its own, so the first value a handler sets (reqscope.With) is
// written in place and the request is not copied for it; a second
// request on the connection gets a scope of its own.
func TestRequestScopeNeedsNoCopy(t *testing.T) {
	var copied, leaked atomic.Int32
	addr := serve(t, &Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if reqscope.Value(r.Context(), reqscope.Later) != nil {
			leaked.Add(1)
		}
		if reqscope.Request(reqscope.With(r.Context(), reqscope.Later, r.URL.Path), r) != r {
			copied.Add(1)
		}
		_, _ = io.WriteString(w, reqscope.Value(r.Context(), reqscope.Later).(string))
	})}, nil)
	c, br := rawConn(t, addr)
	for _, path := range []string{"/a", "/b"} {
		if _, err := io.WriteString(c, "GET "+path+" HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		if _, body := readResp(t, br, http.MethodGet); body != path {
			t.Fatalf("%s answered %q", path, body)
		}
	}
	if copied.Load() != 0 || leaked.Load() != 0 {
		t.Fatalf("requests copied for their first value: %d; a value seen by the next request: %d", copied.Load(), leaked.Load())
	}
}
