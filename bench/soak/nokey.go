package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

const (
	uploads      = 100     // stalled no-key uploads
	uploadSize   = 4 << 20 // announced Content-Length (the gateway's body limit)
	uploadHold   = 15 * time.Second
	idleConns    = 2000 // idle keep-alive connections
	trickleBytes = 1 << 20
)

// noServers is a config with a master key and no upstream.
func (h *harness) noServers() string {
	return "general_settings:\n  master_key: " + h.key + "\nmcp_servers: {}\n"
}

// upload is one stalled no-key POST.
type upload struct {
	conn    net.Conn
	written atomic.Int64
	status  atomic.Int64 // HTTP status the gateway answered, 0 for none
	closed  atomic.Bool  // the gateway closed the connection
}

// nokeyUpload: 100 connections without a credential announce a 4 MiB body,
// send all but its last byte and stall.
func nokeyUpload(ctx context.Context, h *harness, r *result) error {
	g, err := h.startGateway(r, h.noServers())
	if err != nil {
		return err
	}
	r.begin(h, g)
	read0 := g.readChar()
	start := time.Now()
	deadline := start.Add(uploadHold)
	ups := make([]*upload, uploads)
	var wg sync.WaitGroup
	for i := range ups {
		ups[i] = &upload{}
		wg.Go(func() { ups[i].run(g.addr, deadline) })
	}
	wg.Wait()
	sleepUntil(ctx, deadline)
	r.endPeak()
	read1 := g.readChar()
	var sent int64
	statuses := map[int64]int{}
	closed := 0
	for _, u := range ups {
		sent += u.written.Load()
		statuses[u.status.Load()]++
		if u.closed.Load() {
			closed++
		}
		if u.conn != nil {
			u.conn.Close()
		}
	}
	r.note("client wrote %.0f of %.0f MB (socket buffers take some the gateway never reads)", float64(sent)/1e6, float64(uploads*(uploadSize-1))/1e6)
	if read := read1 - read0; read0 >= 0 && read1 >= 0 {
		r.note("gateway read %.1f MB (%.2f MB per connection, /proc/PID/io rchar)", float64(read)/1e6, float64(read)/1e6/uploads)
	}
	r.note("answered within %s: %s; closed by the gateway: %d", uploadHold, statusSummary(statuses), closed)
	r.settle(ctx, 2*time.Second)
	return nil
}

// run sends the headers and uploadSize-1 body bytes without a credential,
// until deadline, and notes any answer or close.
func (u *upload) run(addr string, deadline time.Time) {
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return
	}
	u.conn = c
	_ = c.SetDeadline(deadline)
	go func() {
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err == nil {
			u.status.Store(int64(resp.StatusCode))
			_, err = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		if err != nil && !isTimeout(err) {
			u.closed.Store(true)
		}
	}()
	head := fmt.Sprintf("POST /mcp HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: %d\r\n\r\n", addr, uploadSize)
	if _, err := io.WriteString(c, head); err != nil {
		return
	}
	prefix := `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"pad":"`
	k, err := io.WriteString(c, prefix)
	u.written.Add(int64(k))
	if err != nil {
		return
	}
	chunk := []byte(strings.Repeat("a", 64<<10))
	for left := uploadSize - 1 - len(prefix); left > 0; {
		k, err := c.Write(chunk[:min(left, len(chunk))])
		u.written.Add(int64(k))
		left -= k
		if err != nil {
			return
		}
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

func statusSummary(m map[int64]int) string {
	var keys []int64
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i] < keys[j] })
	var parts []string
	for _, k := range keys {
		name := fmt.Sprintf("HTTP %d", k)
		if k == 0 {
			name = "no answer"
		}
		parts = append(parts, fmt.Sprintf("%s ×%d", name, m[k]))
	}
	return strings.Join(parts, ", ")
}

func sleepUntil(ctx context.Context, t time.Time) {
	select {
	case <-ctx.Done():
	case <-time.After(time.Until(t)):
	}
}

// slowConns: one no-key POST whose body trickles at 1 byte/s, and 2,000
// keep-alive connections left idle after one request; the gateway has -wait
// to cut them.
func slowConns(ctx context.Context, h *harness, r *result) error {
	g, err := h.startGateway(r, h.noServers())
	if err != nil {
		return err
	}
	r.begin(h, g)
	trickled := make(chan string, 1)
	go func() { trickled <- trickle(ctx, g.addr, h.wait) }()

	start := time.Now()
	conns := make([]net.Conn, idleConns)
	var opened, closed atomic.Int64
	var closedAfter sync.Map
	parallel(ctx, idleConns, 16, func(i int) {
		c, err := idleConn(g.addr)
		if err != nil {
			return
		}
		conns[i] = c
		opened.Add(1)
		idleAt := time.Now()
		go func() {
			_, _ = c.Read(make([]byte, 1)) // returns when either side closes
			if time.Since(idleAt) < h.wait+time.Minute {
				closed.Add(1)
				closedAfter.Store(i, time.Since(idleAt))
			}
		}()
	})
	openTook := time.Since(start)
	sleepUntil(ctx, start.Add(openTook).Add(h.wait))
	stillOpen := opened.Load() - closed.Load()
	r.endPeak()
	r.note("idle keep-alive connections (one request each, opened in %.1f s): %d of %d still open after %s", openTook.Seconds(), stillOpen, opened.Load(), h.wait)
	if c := closed.Load(); c > 0 {
		var first time.Duration = -1
		closedAfter.Range(func(_, v any) bool {
			if d := v.(time.Duration); first < 0 || d < first {
				first = d
			}
			return true
		})
		r.note("first idle connection cut after %.1f s", first.Seconds())
	}
	r.note("body trickled at 1 byte/s without a credential: %s", <-trickled)
	for _, c := range conns {
		if c != nil {
			c.Close()
		}
	}
	r.settle(ctx, 2*time.Second)
	return nil
}

// idleConn makes one request on a new connection, reads the answer and
// returns the connection, kept alive.
func idleConn(addr string) (net.Conn, error) {
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return nil, err
	}
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Write(rawRequest("GET", addr, "/health/liveliness", nil, "")); err != nil {
		c.Close()
		return nil, err
	}
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		c.Close()
		return nil, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	_ = c.SetDeadline(time.Time{})
	return c, nil
}

// trickle sends a no-key POST's body one byte a second, for at most wait;
// it reports when and how the gateway cut it.
func trickle(ctx context.Context, addr string, wait time.Duration) string {
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return "could not connect: " + err.Error()
	}
	defer c.Close()
	start := time.Now()
	head := fmt.Sprintf("POST /mcp HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n{", addr, trickleBytes)
	if _, err := io.WriteString(c, head); err != nil {
		return "cut before the body: " + err.Error()
	}
	answered := make(chan string, 1)
	go func() {
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			answered <- "closed without an answer"
			return
		}
		resp.Body.Close()
		answered <- fmt.Sprintf("answered HTTP %d", resp.StatusCode)
	}()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for sent := 1; time.Since(start) < wait; sent++ {
		select {
		case how := <-answered:
			return fmt.Sprintf("cut after %.0f s (%s, %d bytes sent)", time.Since(start).Seconds(), how, sent)
		case <-ctx.Done():
			return "interrupted"
		case <-tick.C:
		}
		if _, err := c.Write([]byte(" ")); err != nil {
			return fmt.Sprintf("cut after %.0f s (write failed, %d bytes sent)", time.Since(start).Seconds(), sent)
		}
	}
	return fmt.Sprintf("**not cut** after %.0f s", wait.Seconds())
}
