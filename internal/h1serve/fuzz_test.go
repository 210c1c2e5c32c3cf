package h1serve

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// byteConn is a connection that reads b and discards what is written.
type byteConn struct {
	r   *bytes.Reader
	out bytes.Buffer
}

func (c *byteConn) Read(p []byte) (int, error)       { return c.r.Read(p) }
func (c *byteConn) Write(p []byte) (int, error)      { return c.out.Write(p) }
func (c *byteConn) Close() error                     { return nil }
func (c *byteConn) LocalAddr() net.Addr              { return &net.TCPAddr{} }
func (c *byteConn) RemoteAddr() net.Addr             { return &net.TCPAddr{} }
func (c *byteConn) SetDeadline(time.Time) error      { return nil }
func (c *byteConn) SetReadDeadline(time.Time) error  { return nil }
func (c *byteConn) SetWriteDeadline(time.Time) error { return nil }

// FuzzRequest serves arbitrary bytes as a connection's input. It must not
// panic, and a request the server hands to its handler must be one
// net/http's parser reads the same way (Server may refuse more, never
// accept more).
func FuzzRequest(f *testing.F) {
	for _, tc := range diffCases {
		f.Add([]byte(tc.raw))
	}
	f.Add([]byte("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n1;a=b\r\nx\r\n0\r\nT: v\r\n\r\n"))
	f.Add([]byte("GET /?a=b HTTP/1.1\r\nHost: a\r\nX: 1\r\nx: 2\r\n\r\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		var mu sync.Mutex
		var logged strings.Builder
		type seen struct {
			method, uri string
			header      http.Header
			cl          int64
			body        []byte
		}
		var got []seen
		s := &Server{ErrorLog: newLockedLog(&logged, &mu), MaxHeaderBytes: 4096, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			b, _ := io.ReadAll(r.Body)
			got = append(got, seen{r.Method, r.RequestURI, r.Header.Clone(), r.ContentLength, b})
			_, _ = w.Write([]byte("ok"))
		})}
		c := s.newConn(&byteConn{r: bytes.NewReader(in)})
		c.serve()
		mu.Lock()
		if strings.Contains(logged.String(), "panic") {
			t.Fatalf("panic: %s", logged.String())
		}
		mu.Unlock()
		if len(got) == 0 {
			return
		}
		req, err := http.ReadRequest(bufio.NewReader(bytes.NewReader(in)))
		if err != nil {
			t.Fatalf("served a request net/http refuses (%v): %q", err, in)
		}
		g := got[0]
		if req.Method != g.method || req.RequestURI != g.uri {
			t.Fatalf("request line: got %s %s, net/http %s %s", g.method, g.uri, req.Method, req.RequestURI)
		}
		if _, ok := g.header["Host"]; ok {
			t.Fatal("Host left in the header")
		}
		for k, vv := range g.header {
			if strings.Join(req.Header[k], "\x00") != strings.Join(vv, "\x00") {
				t.Fatalf("header %s: got %q, net/http %q", k, vv, req.Header[k])
			}
		}
		b, err := io.ReadAll(req.Body)
		if err == nil && !bytes.Equal(b, g.body) {
			t.Fatalf("body: got %q, net/http %q", g.body, b)
		}
	})
}
