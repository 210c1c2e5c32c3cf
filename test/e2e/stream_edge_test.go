package e2e

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mcpgw/mcpgw/internal/testpeers"
)

// openStream sends a raw request on a fresh connection and returns the
// stream's reader once its status is 200.
func openStream(t *testing.T, addr, request string) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, br, status := tryStream(t, addr, request)
	if c == nil {
		t.Fatalf("stream: %d", status)
	}
	return c, br
}

// tryStream is openStream that reports the status instead of failing on
// one other than 200 (its connection then closed).
func tryStream(t *testing.T, addr, request string) (net.Conn, *bufio.Reader, int) {
	t.Helper()
	c := dial(t, addr)
	if _, err := io.WriteString(c, request); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		c.Close()
		return nil, nil, resp.StatusCode
	}
	return c, bufio.NewReader(resp.Body), resp.StatusCode
}

// readUntil reads stream lines until one contains want.
func readUntil(t *testing.T, c net.Conn, br *bufio.Reader, want string) string {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	for {
		line, err := br.ReadString('\n')
		if strings.Contains(line, want) {
			return line
		}
		if err != nil {
			t.Fatalf("stream ended before %q: %v", want, err)
		}
	}
}

// stillOpen asserts that the stream has neither ended nor been cut.
func stillOpen(t *testing.T, c net.Conn, br *bufio.Reader) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	for {
		_, err := br.ReadString('\n')
		if err == nil {
			continue // the rest of an event, or a new one: still open
		}
		var ne net.Error
		if !errors.As(err, &ne) || !ne.Timeout() {
			t.Fatalf("the stream ended: %v", err)
		}
		return
	}
}

// notBusy asserts that an open stream holds no place in the in-flight
// bound: another request is still served.
func notBusy(t *testing.T, addr string) {
	t.Helper()
	resp, err := http.Post("http://"+addr+"/mcp", "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("a request beside an open stream: %d, want 401", resp.StatusCode)
	}
}

// TestStreamsOutliveServerTimeouts: the GET stream of a legacy session, a
// subscriptions/listen and the HTTP+SSE transport keep going well past the
// read, write and idle timeouts that cut everything else, and hold no place
// in the in-flight bound.
func TestStreamsOutliveServerTimeouts(t *testing.T) {
	limits := "  http_read_timeout: 1\n  http_write_timeout: 1\n  http_idle_timeout: 1\n  max_inflight_requests: 1\n"
	addr := serveEdge(t, edgeConfig(limits), nil)
	auth := "Authorization: Bearer " + testKey + "\r\n"
	const wait = 2500 * time.Millisecond

	t.Run("legacy GET stream", func(t *testing.T) {
		sid := initLegacy(t, "http://"+addr+"/mcp", testKey)
		c, br := openStream(t, addr, "GET /mcp HTTP/1.1\r\nHost: "+addr+"\r\n"+auth+"Accept: text/event-stream\r\n"+
			"Mcp-Session-Id: "+sid+"\r\nMCP-Protocol-Version: 2025-11-25\r\n\r\n")
		readUntil(t, c, br, "stream open")
		time.Sleep(wait)
		stillOpen(t, c, br)
		notBusy(t, addr)
	})

	t.Run("subscriptions/listen", func(t *testing.T) {
		// A listen needs an upstream that keeps it open.
		addr := serveEdge(t, "general_settings:\n  master_key: "+testKey+"\n"+limits+
			"mcp_servers:\n  live:\n    url: "+testpeers.StartGoFixtureHTTP(t, false)+"\n", nil)
		body := `{"jsonrpc":"2.0","id":"l1","method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true},` + modernMeta + `}}`
		c, br := openStream(t, addr, "POST /mcp HTTP/1.1\r\nHost: "+addr+"\r\n"+auth+"Accept: application/json, text/event-stream\r\n"+
			"Content-Type: application/json\r\nMCP-Protocol-Version: 2026-07-28\r\nMcp-Method: subscriptions/listen\r\n"+
			"Content-Length: "+itoa(len(body))+"\r\n\r\n"+body)
		readUntil(t, c, br, "notifications/subscriptions/acknowledged")
		time.Sleep(wait)
		stillOpen(t, c, br)
		notBusy(t, addr)
	})

	t.Run("HTTP+SSE transport", func(t *testing.T) {
		c, br := openStream(t, addr, "GET /mcp/sse HTTP/1.1\r\nHost: "+addr+"\r\n"+auth+"Accept: text/event-stream\r\n\r\n")
		line := readUntil(t, c, br, "/mcp/sse/messages")
		endpoint := strings.TrimSpace(strings.TrimPrefix(line, "data:"))
		time.Sleep(wait)
		// An answer written after the write timeout still reaches the client.
		if status := sseInitialize(t, addr, endpoint); status != http.StatusAccepted {
			t.Fatalf("message POST: %d", status)
		}
		readUntil(t, c, br, `"id":"i1"`)
		stillOpen(t, c, br)
	})
}

// sseInitialize POSTs an initialize with id "i1" to an /mcp/sse
// connection's message endpoint and returns the status.
func sseInitialize(t *testing.T, addr, endpoint string) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, "http://"+addr+endpoint, strings.NewReader(
		`{"jsonrpc":"2.0","id":"i1","method":"initialize","params":{"protocolVersion":"2024-11-05","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`))
	req.Header.Set("Authorization", "Bearer "+testKey)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func itoa(n int) string {
	b := []byte{}
	for {
		b = append([]byte{byte('0' + n%10)}, b...)
		n /= 10
		if n == 0 {
			return string(b)
		}
	}
}
