package e2e

import (
	"bufio"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mcpgw/mcpgw/internal/h1serve"
)

// TestStreamsReopenAfterTheClientLeft: served by h1serve, a legacy
// session's GET stream and an /mcp/sse stream whose client closes its
// connection are seen to end without any write to them (the disconnect
// watch of a held stream): the session takes a new GET stream (409 while
// the old one is held) and an event reaches it; the /mcp/sse stream's
// session ends with it, and a new /mcp/sse stream serves its messages.
func TestStreamsReopenAfterTheClientLeft(t *testing.T) {
	t.Setenv(h1serve.Env, "h1serve")
	p := newFollowPeer(t)
	addr := serveEdge(t, "general_settings:\n  master_key: "+testKey+"\nmcp_servers:\n  fp:\n    url: "+p.url+"/mcp\n", nil)
	auth := "Authorization: Bearer " + testKey + "\r\n"

	t.Run("legacy GET stream", func(t *testing.T) {
		sid := initLegacy(t, "http://"+addr+"/mcp", testKey)
		get := "GET /mcp HTTP/1.1\r\nHost: " + addr + "\r\n" + auth + "Accept: text/event-stream\r\n" +
			"Mcp-Session-Id: " + sid + "\r\nMCP-Protocol-Version: 2025-11-25\r\n\r\n"
		c, br := openStream(t, addr, get)
		readUntil(t, c, br, "stream open")
		if _, _, status := tryStream(t, addr, get); status != http.StatusConflict {
			t.Fatalf("a second GET stream while the first is held: %d, want 409", status)
		}
		c.Close()
		var again net.Conn
		var abr *bufio.Reader
		waitUntil(t, 5*time.Second, "the session to take a new GET stream", func() bool {
			var status int
			again, abr, status = tryStream(t, addr, get)
			if status != http.StatusOK && status != http.StatusConflict {
				t.Fatalf("reopening the GET stream: %d", status)
			}
			return again != nil
		})
		readUntil(t, again, abr, "stream open")
		p.change()
		readUntil(t, again, abr, "notifications/tools/list_changed")
	})

	t.Run("HTTP+SSE stream", func(t *testing.T) {
		open := "GET /mcp/sse HTTP/1.1\r\nHost: " + addr + "\r\n" + auth + "Accept: text/event-stream\r\n\r\n"
		c, br := openStream(t, addr, open)
		first := strings.TrimSpace(strings.TrimPrefix(readUntil(t, c, br, "/mcp/sse/messages"), "data:"))
		c.Close()
		waitUntil(t, 5*time.Second, "the closed stream's session to end", func() bool { return sseInitialize(t, addr, first) == http.StatusNotFound })
		again, abr := openStream(t, addr, open)
		endpoint := strings.TrimSpace(strings.TrimPrefix(readUntil(t, again, abr, "/mcp/sse/messages"), "data:"))
		if endpoint == first {
			t.Fatalf("the new stream has the closed one's session %q", first)
		}
		if status := sseInitialize(t, addr, endpoint); status != http.StatusAccepted {
			t.Fatalf("a message to the new stream's session: %d", status)
		}
		readUntil(t, again, abr, `"id":"i1"`)
	})
}
