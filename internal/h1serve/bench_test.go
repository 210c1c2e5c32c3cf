package h1serve

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"strconv"
	"testing"
)

// BenchmarkServe measures one keep-alive request through each server: a
// POST with a gateway tools/call's headers and body, answered with a small
// JSON body, from a raw client (so that the client adds little to the
// allocations counted).
func BenchmarkServe(b *testing.B) {
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{}}}`
	req := []byte("POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:4000\r\nUser-Agent: Go-http-client/1.1\r\nContent-Length: " +
		strconv.Itoa(len(body)) + "\r\nAccept: application/json, text/event-stream\r\nAuthorization: Bearer sk-bench-master-key\r\n" +
		"Content-Type: application/json\r\nMcp-Method: tools/call\r\nMcp-Name: echo\r\nMcp-Protocol-Version: 2026-07-28\r\n" +
		"Accept-Encoding: gzip\r\n\r\n" + body)
	answer := []byte(`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"hi"}]}}`)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(answer)
	})
	for _, name := range []string{"h1serve", "net-http"} {
		b.Run(name, func(b *testing.B) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				b.Fatal(err)
			}
			var srv interface {
				Serve(net.Listener) error
				Close() error
			} = &Server{Handler: h}
			if name == "net-http" {
				srv = &http.Server{Handler: h}
			}
			done := make(chan struct{})
			go func() { defer close(done); _ = srv.Serve(ln) }()
			defer func() { srv.Close(); <-done }()
			c, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			buf := make([]byte, 4096)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := c.Write(req); err != nil {
					b.Fatal(err)
				}
				n := 0
				for !bytes.HasSuffix(buf[:n], answer) {
					m, err := c.Read(buf[n:])
					if err != nil {
						b.Fatal(err)
					}
					n += m
				}
			}
		})
	}
}
