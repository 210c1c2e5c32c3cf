package main

import (
	"context"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

const (
	heldStreams = 1000
	streamHold  = 3 * time.Second
	afterCut    = 2 * time.Second // at least; then until back near the baseline
)

// scenarios lists every scenario, in the order they run.
func scenarios() []scenario {
	return []scenario{
		{"nokey-upload", "100 no-key POSTs announcing 4 MiB, sending 4 MiB − 1 and stalling", nokeyUpload},
		{"slow-conns", "no-key body trickled at 1 B/s; 2,000 idle keep-alive connections", slowConns},
		{"stdio-env", "stdio upstream looks for the gateway's secrets in its environment", stdioEnv},
		{"upstream-sessions", "2,000 distinct values of a forwarded header (extra_headers)", upstreamSessions},
		{"request-flood", "upstream answers one call with 100,000 roots/list requests", requestFlood},
		{"stdio-garbage", "stdio upstream writes garbage lines on stdout", stdioGarbage},
		{"big-answers", "20 callers × 30 MB upstream answers at once", bigAnswers},
		{"streams-legacy", "1,000 legacy GET streams on /mcp (after initialize), held then cut", streamsOf(openLegacyGET)},
		{"streams-listen", "1,000 modern subscriptions/listen streams, held then cut", streamsOf(openListen)},
		{"streams-sse", "1,000 /mcp/sse streams, held then cut", streamsOf(openSSE)},
		{"reload", "tools/call at C=10 on an unchanged server while the config file is rewritten 50 times", reloadSoak},
	}
}

// streamsOf opens heldStreams streams with open, holds them, cuts them
// (RST) and waits for the gateway to let go of them.
func streamsOf(open func(ctx context.Context, h *harness, g *gateway, i int) (*net.TCPConn, error)) func(context.Context, *harness, *result) error {
	return func(ctx context.Context, h *harness, r *result) error {
		fx, stop, err := h.startFixture(true)
		if err != nil {
			return err
		}
		defer stop()
		g, err := h.startGateway(r, fmt.Sprintf("general_settings:\n  master_key: %s\n  max_listeners_per_caller: %d\nmcp_servers:\n  fx:\n    url: %s\n", h.key, 2*heldStreams, fx))
		if err != nil {
			return err
		}
		h.listTools(ctx, g)
		r.begin(h, g)
		start := time.Now()
		conns := make([]*net.TCPConn, heldStreams)
		var opened atomic.Int64
		var firstErr sync.Once
		var errText string
		parallel(ctx, heldStreams, 16, func(i int) {
			c, err := open(ctx, h, g, i)
			if err != nil {
				firstErr.Do(func() { errText = err.Error() })
				return
			}
			conns[i] = c
			opened.Add(1)
		})
		took := time.Since(start)
		sleepUntil(ctx, time.Now().Add(streamHold))
		r.endPeak()
		r.note("opened %d of %d in %.1f s, held %s", opened.Load(), heldStreams, took.Seconds(), streamHold)
		if errText != "" {
			r.note("first failure: %s", clip(errText, 120))
		}
		var held []*net.TCPConn
		for _, c := range conns {
			if c != nil {
				held = append(held, c)
			}
		}
		cut(held)
		g.client.CloseIdleConnections()
		r.settle(ctx, afterCut)
		r.note("after the cut: goroutines %+d, fds %+d, VmRSS %+.1f MB vs baseline",
			r.after.Goroutines-r.base.Goroutines, r.after.FDs-r.base.FDs, float64(r.after.RSSKB-r.base.RSSKB)*1024/1e6)
		return nil
	}
}

// openLegacyGET opens a legacy session (initialize, notifications/initialized)
// and then its GET stream on /mcp.
func openLegacyGET(ctx context.Context, h *harness, g *gateway, i int) (*net.TCPConn, error) {
	auth := map[string]string{"Authorization": "Bearer " + h.key}
	a := post(ctx, g.client, g.url+"/mcp", auth,
		fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":%q,"capabilities":{},"clientInfo":{"name":"soak-%d","version":"1"}}}`, legacyVersion, i))
	sid := a.hdr.Get("Mcp-Session-Id")
	if a.err != nil || a.status != 200 || sid == "" {
		return nil, fmt.Errorf("initialize: HTTP %d %v", a.status, a.err)
	}
	hdr := map[string]string{"Authorization": "Bearer " + h.key, "Mcp-Session-Id": sid, "MCP-Protocol-Version": legacyVersion}
	if a := post(ctx, g.client, g.url+"/mcp", hdr, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); a.status != 202 {
		return nil, fmt.Errorf("notifications/initialized: HTTP %d %v", a.status, a.err)
	}
	hdr["Accept"] = "text/event-stream"
	return openStream(g.addr, rawRequest("GET", g.addr, "/mcp", hdr, ""))
}

// openListen opens a modern subscriptions/listen stream.
func openListen(_ context.Context, h *harness, g *gateway, i int) (*net.TCPConn, error) {
	hdr := h.modernHeaders("subscriptions/listen", "")
	hdr["Content-Type"] = "application/json"
	hdr["Accept"] = "application/json, text/event-stream"
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":"L%d","method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true},%s}}`, i, modernMeta)
	return openStream(g.addr, rawRequest("POST", g.addr, "/mcp", hdr, body))
}

// openSSE opens a legacy HTTP+SSE stream on /mcp/sse.
func openSSE(_ context.Context, h *harness, g *gateway, _ int) (*net.TCPConn, error) {
	hdr := map[string]string{"Authorization": "Bearer " + h.key, "Accept": "text/event-stream"}
	return openStream(g.addr, rawRequest("GET", g.addr, "/mcp/sse", hdr, ""))
}
