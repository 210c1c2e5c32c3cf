package h1serve

import (
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpgw/mcpgw/internal/admit"
)

// A refused request's answer ends at once behind the listener serve uses
// (admit.LimitListener): its connection's sending side closes before the
// server lingers to drain the client, so the client sees the whole answer
// without waiting out the linger.
func TestRefusalEndsPromptlyBehindLimitListener(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{Handler: http.NotFoundHandler(), ErrorLog: quietLog()}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); _ = s.Serve(admit.LimitListener(ln, 4)) }()
	t.Cleanup(func() { s.Close(); wg.Wait() })
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	start := time.Now()
	if _, err := c.Write([]byte("GET / HTTP/1.1\r\nHost: a\r\nBad Header: x\r\n\r\n")); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	answer, err := io.ReadAll(c)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(answer), "HTTP/1.1 400 ") {
		t.Fatalf("answer %q, want a 400", answer)
	}
	if took := time.Since(start); took >= lingerTime/2 {
		t.Fatalf("the answer ended after %v: the connection's sending side was not closed before the linger (%v)", took, lingerTime)
	}
}
