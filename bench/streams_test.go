package bench

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpgw/mcpgw/internal/h1serve"
	"github.com/mcpgw/mcpgw/internal/testpeers"
)

// TestHeldStreamCost holds MCPGW_HELD_STREAMS (default 200) streams of each
// kind on the in-process gateway (raw client connections, so the client side
// adds no goroutines) and reports the gateway's goroutines and Go memory
// (heap in use + stacks, after a collection) per held stream. With
// MCPGW_HELD_STREAMS_PROFILE=FILE it also writes the goroutine profile with
// the streams held. The gateway is served by the server serve uses
// (internal/h1serve); MCPGW_HTTP_SERVER=stdlib measures net/http's instead.
// Skipped unless MCPGW_HELD_STREAMS is set.
func TestHeldStreamCost(t *testing.T) {
	nStr := os.Getenv("MCPGW_HELD_STREAMS")
	if nStr == "" {
		t.Skip("set MCPGW_HELD_STREAMS=N to measure")
	}
	n, err := strconv.Atoi(nStr)
	if err != nil || n <= 0 {
		t.Fatalf("MCPGW_HELD_STREAMS=%q", nStr)
	}
	if os.Getenv("MCPGW_HELD_STREAMS_PROFILE") != "" {
		runtime.MemProfileRate = 1024 // fine enough to attribute a few KB per stream
	}
	fixture := testpeers.StartGoFixtureHTTP(t, true)
	var dials atomic.Int64
	gwURL := startGatewayWith(t, fixture, 1, &dials, "  max_listeners_per_caller: "+strconv.Itoa(2*n)+"\n")
	u, _ := url.Parse(gwURL)
	addr := u.Host
	client := countingClient(&dials)
	idle := runtime.NumGoroutine()
	for _, kind := range []string{"listen", "sse", "legacy"} {
		t.Run(kind, func(t *testing.T) {
			settle(idle)
			g0, m0, s0, a0 := goMem()
			conns := make([]net.Conn, 0, n)
			defer func() {
				for _, c := range conns {
					c.Close()
				}
			}()
			for i := 0; i < n; i++ {
				c, err := openHeld(client, gwURL, addr, kind, i)
				if err != nil {
					t.Fatalf("stream %d: %v", i, err)
				}
				conns = append(conns, c)
			}
			time.Sleep(500 * time.Millisecond)
			g1, m1, s1, a1 := goMem()
			if p := os.Getenv("MCPGW_HELD_STREAMS_PROFILE"); p != "" {
				f, _ := os.Create(p + "." + kind)
				_ = pprof.Lookup("goroutine").WriteTo(f, 1)
				f.Close()
				f, _ = os.Create(p + "." + kind + ".heap")
				_ = pprof.Lookup("heap").WriteTo(f, 0)
				f.Close()
			}
			t.Logf("%s server, %s: %d held: %.1f goroutines and %.1f KB (heap in use + stacks; stacks %.1f KB; live objects %.2f KB) per stream",
				serverName(), kind, n, float64(g1-g0)/float64(n), float64(m1-m0)/1024/float64(n), float64(s1-s0)/1024/float64(n), float64(a1-a0)/1024/float64(n))
		})
	}
}

// settle waits, at most 10 s, for the goroutines to come back to idle
// (plus a few): the streams of the kind measured before are torn down
// asynchronously, and what they still hold would otherwise be counted
// in the next kind's baseline.
func settle(idle int) {
	for deadline := time.Now().Add(10 * time.Second); runtime.NumGoroutine() > idle+5 && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
	}
}

// serverName names the HTTP server serveApp uses: the one h1serve.Pick
// picks for MCPGW_HTTP_SERVER.
func serverName() string {
	_, name, err := h1serve.Pick(&http.Server{}, os.Getenv(h1serve.Env))
	switch {
	case err != nil:
		return "unknown (" + err.Error() + ")"
	case name == "":
		return "h1serve" // an unknown choice is served by h1serve
	}
	return name
}

// goMem reads, after a collection, the goroutines, heap in use (whole
// spans) plus stacks, stacks, and the bytes of live heap objects (finer
// than spans: it does not move with how the held objects share spans
// with the set-up's garbage).
func goMem() (goroutines int, heapAndStacks, stacks, live int64) {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return runtime.NumGoroutine(), int64(ms.HeapInuse + ms.StackInuse), int64(ms.StackInuse), int64(ms.HeapAlloc)
}

// openHeld opens one stream of kind on a raw connection and returns it once
// the gateway has answered 200 and sent the first bytes.
func openHeld(client *http.Client, gwURL, addr, kind string, i int) (net.Conn, error) {
	var req string
	switch kind {
	case "listen":
		body := fmt.Sprintf(`{"jsonrpc":"2.0","id":"L%d","method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true},`+
			`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`, i)
		req = "POST /mcp HTTP/1.1\r\nHost: " + addr + "\r\nAuthorization: Bearer " + benchKey +
			"\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\n" +
			"Mcp-Method: subscriptions/listen\r\nContent-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + body
	case "sse":
		req = "GET /mcp/sse HTTP/1.1\r\nHost: " + addr + "\r\nAuthorization: Bearer " + benchKey + "\r\nAccept: text/event-stream\r\n\r\n"
	case "legacy":
		sid, err := legacySession(client, gwURL, i)
		if err != nil {
			return nil, err
		}
		req = "GET /mcp HTTP/1.1\r\nHost: " + addr + "\r\nAuthorization: Bearer " + benchKey + "\r\nAccept: text/event-stream\r\n" +
			"Mcp-Session-Id: " + sid + "\r\nMCP-Protocol-Version: 2025-11-25\r\n\r\n"
	}
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return nil, err
	}
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Write([]byte(req)); err != nil {
		c.Close()
		return nil, err
	}
	br := bufio.NewReaderSize(c, 512)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		c.Close()
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		c.Close()
		return nil, fmt.Errorf("status %d", resp.StatusCode)
	}
	if _, err := resp.Body.Read(make([]byte, 1)); err != nil {
		c.Close()
		return nil, err
	}
	_ = c.SetDeadline(time.Time{})
	return c, nil
}

func legacySession(client *http.Client, gwURL string, i int) (string, error) {
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"held-%d","version":"1"}}}`, i)
	req, _ := http.NewRequestWithContext(context.Background(), http.MethodPost, gwURL, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+benchKey)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := client.Do(req)
	if err != nil {
		return "", err
	}
	resp.Body.Close()
	sid := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != http.StatusOK || sid == "" {
		return "", fmt.Errorf("initialize: %d", resp.StatusCode)
	}
	req, _ = http.NewRequestWithContext(context.Background(), http.MethodPost, gwURL, strings.NewReader(`{"jsonrpc":"2.0","method":"notifications/initialized"}`))
	req.Header.Set("Authorization", "Bearer "+benchKey)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Session-Id", sid)
	req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	resp, err = client.Do(req)
	if err != nil {
		return "", err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		return "", fmt.Errorf("initialized: %d", resp.StatusCode)
	}
	return sid, nil
}
