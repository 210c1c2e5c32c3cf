package upstream

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// h1Counted is an h1Transport whose dials are counted.
func h1Counted(dials *atomic.Int64) *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	d := &net.Dialer{Timeout: 5 * time.Second}
	tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		dials.Add(1)
		return d.DialContext(ctx, network, addr)
	}
	return NewHTTPClient(tr)
}

func h1Post(t *testing.T, c *http.Client, url, body string) (string, *http.Response) {
	t.Helper()
	resp, err := c.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	return string(b), resp
}

// Content-Length, chunked and bodiless answers all leave the connection for
// the next request: many requests, one connection.
func TestH1ReusesConnection(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		switch r.URL.Path {
		case "/chunked":
			w.Write(b[:1])
			w.(http.Flusher).Flush() // forces chunked framing
			w.Write(b[1:])
		case "/empty":
			w.WriteHeader(http.StatusAccepted)
		default:
			w.Header().Set("Content-Length", "1")
			w.Write(b[:1])
		}
	}))
	defer srv.Close()
	var dials atomic.Int64
	c := h1Counted(&dials)
	for i := 0; i < 20; i++ {
		if got, resp := h1Post(t, c, srv.URL+"/chunked", "hello"); got != "hello" || resp.TransferEncoding == nil {
			t.Fatalf("chunked answer %q, framing %v", got, resp.TransferEncoding)
		}
		if got, _ := h1Post(t, c, srv.URL+"/length", "hello"); got != "h" {
			t.Fatalf("sized answer %q", got)
		}
		if got, resp := h1Post(t, c, srv.URL+"/empty", "x"); got != "" || resp.StatusCode != http.StatusAccepted {
			t.Fatalf("empty answer %q %d", got, resp.StatusCode)
		}
	}
	if n := dials.Load(); n != 1 {
		t.Fatalf("%d connections for 60 sequential requests, want 1", n)
	}
}

// A body closed before its end, or an answer that asks to close, takes its
// connection with it: the rest of it must never be read as the next answer.
func TestH1NoReuseAfterPartialReadOrClose(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/close" {
			w.Header().Set("Connection", "close")
		}
		w.Write([]byte(strings.Repeat("x", 100<<10)))
	}))
	defer srv.Close()
	var dials atomic.Int64
	c := h1Counted(&dials)
	resp, err := c.Get(srv.URL + "/big")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := resp.Body.Read(make([]byte, 10)); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if _, err := resp.Body.Read(make([]byte, 10)); err == nil {
		t.Fatal("read after Close succeeded")
	}
	if got, _ := h1Post(t, c, srv.URL+"/close", ""); len(got) != 100<<10 {
		t.Fatalf("answer after a partial read: %d bytes", len(got))
	}
	if got, _ := h1Post(t, c, srv.URL+"/big", ""); len(got) != 100<<10 {
		t.Fatalf("answer after Connection: close: %d bytes", len(got))
	}
	if n := dials.Load(); n != 3 {
		t.Fatalf("%d connections, want 3 (none reused after a partial read or Connection: close)", n)
	}
}

// Cancelling the request's context ends a response stream being read at
// once, and its connection is not reused.
func TestH1CancelEndsStream(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.Write([]byte("data: {}\n\n"))
		w.(http.Flusher).Flush()
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)
	var dials atomic.Int64
	c := h1Counted(&dials)
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(resp.Body)
	if line, err := br.ReadString('\n'); err != nil || line != "data: {}\n" {
		t.Fatalf("first line %q, %v", line, err)
	}
	time.AfterFunc(50*time.Millisecond, cancel)
	start := time.Now()
	_, err = io.Copy(io.Discard, br)
	if err == nil || time.Since(start) > 5*time.Second {
		t.Fatalf("stream read ended with %v after %v, want an error soon after the cancel", err, time.Since(start))
	}
	resp.Body.Close()
}

// A cancelled context before the answer arrives fails the request with the
// context's error.
func TestH1CancelBeforeAnswer(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.ReadAll(r.Body) // then the server notices the connection's end
		<-r.Context().Done()
	}))
	defer srv.Close()
	var dials atomic.Int64
	c := h1Counted(&dials)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL, strings.NewReader("{}"))
	_, err := c.Do(req)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want the context's deadline", err)
	}
}

// rawServer answers each connection with handle; it counts connections.
func rawServer(t *testing.T, handle func(c net.Conn, br *bufio.Reader)) (url string, conns *atomic.Int64) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	conns = new(atomic.Int64)
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns.Add(1)
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				handle(c, bufio.NewReader(c))
			}()
		}
	}()
	return "http://" + ln.Addr().String(), conns
}

// An idle connection the upstream closed is not used again: the next
// request, a POST that may not be sent twice, goes on a new connection.
func TestH1IdleClosedByUpstream(t *testing.T) {
	url, conns := rawServer(t, func(c net.Conn, br *bufio.Reader) {
		if _, err := http.ReadRequest(br); err != nil {
			return
		}
		c.Write([]byte("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"))
		// then close, without saying so
	})
	var dials atomic.Int64
	c := h1Counted(&dials)
	for i := 0; i < 3; i++ {
		if got, _ := h1Post(t, c, url, "{}"); got != "ok" {
			t.Fatalf("answer %d: %q", i, got)
		}
		time.Sleep(20 * time.Millisecond) // let the close arrive
	}
	if n := conns.Load(); n != 3 {
		t.Fatalf("%d connections, want 3", n)
	}
}

// Bytes after an answer (nothing is due on an idle connection) keep its
// connection from being reused.
func TestH1TrailingBytesNotReused(t *testing.T) {
	url, conns := rawServer(t, func(c net.Conn, br *bufio.Reader) {
		for {
			if _, err := http.ReadRequest(br); err != nil {
				return
			}
			c.Write([]byte("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokHTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nbad"))
		}
	})
	var dials atomic.Int64
	c := h1Counted(&dials)
	for i := 0; i < 3; i++ {
		if got, _ := h1Post(t, c, url, "{}"); got != "ok" {
			t.Fatalf("answer %d: %q", i, got)
		}
	}
	if n := conns.Load(); n != 3 {
		t.Fatalf("%d connections, want 3", n)
	}
}

// A GET on a reused connection the upstream closed just as it was sent is
// sent again on a new one.
func TestH1ReplaysIdempotentOnStaleConnection(t *testing.T) {
	var served atomic.Int64
	url, conns := rawServer(t, func(c net.Conn, br *bufio.Reader) {
		if _, err := http.ReadRequest(br); err != nil {
			return
		}
		served.Add(1)
		c.Write([]byte("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"))
		// read the next request, then close without answering it
		_, _ = http.ReadRequest(br)
	})
	var dials atomic.Int64
	c := h1Counted(&dials)
	for i := 0; i < 2; i++ {
		resp, err := c.Get(url)
		if err != nil {
			t.Fatalf("GET %d: %v", i, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(b) != "ok" {
			t.Fatalf("GET %d: %q", i, b)
		}
	}
	if conns.Load() != 2 || served.Load() != 2 {
		t.Fatalf("connections %d, served %d; want 2 and 2", conns.Load(), served.Load())
	}
	// A POST on the same kind of connection is not sent twice.
	if _, err := c.Post(url, "application/json", strings.NewReader("{}")); err == nil {
		t.Fatal("POST on a connection closed under it succeeded; want the error, not a replay")
	}
	if served.Load() != 2 {
		t.Fatalf("served %d, want 2", served.Load())
	}
}

// https goes through the fallback transport.
func TestH1FallsBackForTLS(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("tls"))
	}))
	defer srv.Close()
	tr := srv.Client().Transport.(*http.Transport).Clone()
	c := NewHTTPClient(tr)
	if got, _ := h1Post(t, c, srv.URL, ""); got != "tls" {
		t.Fatalf("answer %q", got)
	}
	c.CloseIdleConnections()
}

// FuzzH1Response: whatever an upstream answers, the transport does not
// panic, and a connection it reuses carries the next answer whole: no byte
// of an earlier answer is ever read as part of a later one.
func FuzzH1Response(f *testing.F) {
	for _, s := range []string{
		"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\nX-Trailer: 1\r\n\r\n",
		"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nx",
		"HTTP/1.1 204 No Content\r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabcdef",
		"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabcd",
		"HTTP/1.0 200 OK\r\n\r\nbody",
		"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nbody",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
		"HTTP/1.1 101 Switching Protocols\r\n\r\n",
		"garbage\r\n\r\n",
		"",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, answer []byte) {
		if len(answer) > 4<<10 {
			return
		}
		url, _ := rawServer(t, func(c net.Conn, br *bufio.Reader) {
			if _, err := http.ReadRequest(br); err != nil {
				return
			}
			if _, err := c.Write(answer); err != nil {
				return
			}
			c.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
			if _, err := http.ReadRequest(br); err != nil {
				return // an answer framed by the connection's end
			}
			c.Write([]byte("HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nsecond"))
		})
		var dials atomic.Int64
		c := h1Counted(&dials)
		defer c.CloseIdleConnections()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader([]byte("{}")))
		if resp, err := c.Do(req); err == nil {
			_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
			resp.Body.Close()
		}
		req, _ = http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader([]byte("{}")))
		resp, err := c.Do(req)
		if err != nil || dials.Load() != 1 {
			return // not answered, or on a new connection
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || string(b) != "second" || resp.StatusCode != http.StatusOK {
			t.Fatalf("reused connection answered %d %q (%v) after %q", resp.StatusCode, b, err, answer)
		}
	})
}
