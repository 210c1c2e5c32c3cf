package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"
)

const (
	modernVersion = "2026-07-28"
	legacyVersion = "2025-11-25"
	modernMeta    = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"soak","version":"1"}}`
)

func newClient(conns int) *http.Client {
	return &http.Client{
		Timeout: 60 * time.Second,
		Transport: &http.Transport{
			Proxy:               nil,
			DialContext:         (&net.Dialer{Timeout: 5 * time.Second}).DialContext,
			MaxIdleConns:        conns,
			MaxIdleConnsPerHost: conns,
			IdleConnTimeout:     30 * time.Second,
			DisableCompression:  true,
		},
	}
}

// answer is what came back from one POST: the status, the body's length and
// its first 4 KB.
type answer struct {
	status int
	n      int64
	head   []byte
	hdr    http.Header
	err    error
}

func (a answer) ok() bool {
	return a.err == nil && a.status == http.StatusOK && bytes.Contains(a.head, []byte(`"result"`)) &&
		!bytes.Contains(a.head, []byte(`"isError":true`))
}

// post sends body to url with hdr; the answer's body is read to its end and
// counted, only its head kept.
func post(ctx context.Context, c *http.Client, url string, hdr map[string]string, body string) answer {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		return answer{err: err}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := c.Do(req)
	if err != nil {
		return answer{err: err}
	}
	defer resp.Body.Close()
	head := make([]byte, 4096)
	k, _ := io.ReadFull(resp.Body, head)
	n, err := io.Copy(io.Discard, resp.Body)
	return answer{status: resp.StatusCode, n: int64(k) + n, head: head[:k], hdr: resp.Header, err: err}
}

// modernHeaders are a 2026-07-28 request's headers.
func (h *harness) modernHeaders(method, name string) map[string]string {
	hdr := map[string]string{"Authorization": "Bearer " + h.key, "MCP-Protocol-Version": modernVersion, "Mcp-Method": method}
	if name != "" {
		hdr["Mcp-Name"] = name
	}
	return hdr
}

// callTool sends a modern tools/call of tool with the given arguments JSON.
func (h *harness) callTool(ctx context.Context, g *gateway, c *http.Client, tool, args string, extra map[string]string) answer {
	hdr := h.modernHeaders("tools/call", tool)
	for k, v := range extra {
		hdr[k] = v
	}
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":%q,"arguments":%s,%s}}`, tool, args, modernMeta)
	return post(ctx, c, g.url+"/mcp", hdr, body)
}

// listTools sends a modern tools/list.
func (h *harness) listTools(ctx context.Context, g *gateway) answer {
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{` + modernMeta + `}}`
	return post(ctx, g.client, g.url+"/mcp", h.modernHeaders("tools/list", ""), body)
}

// rawRequest renders an HTTP/1.1 request.
func rawRequest(method, addr, path string, hdr map[string]string, body string) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "%s %s HTTP/1.1\r\nHost: %s\r\n", method, path, addr)
	keys := make([]string, 0, len(hdr))
	for k := range hdr {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		fmt.Fprintf(&b, "%s: %s\r\n", k, hdr[k])
	}
	if body != "" {
		fmt.Fprintf(&b, "Content-Length: %d\r\n", len(body))
	}
	b.WriteString("\r\n")
	b.WriteString(body)
	return b.Bytes()
}

// openStream sends req on a new connection and waits (within 10 s) for a 200
// answer and its first body bytes; the connection is then held as it is.
func openStream(addr string, req []byte) (*net.TCPConn, error) {
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return nil, err
	}
	tc := c.(*net.TCPConn)
	_ = tc.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := tc.Write(req); err != nil {
		tc.Close()
		return nil, err
	}
	resp, err := http.ReadResponse(bufio.NewReaderSize(tc, 4096), nil)
	if err != nil {
		tc.Close()
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		tc.Close()
		return nil, fmt.Errorf("status %d", resp.StatusCode)
	}
	if _, err := resp.Body.Read(make([]byte, 1)); err != nil {
		tc.Close()
		return nil, fmt.Errorf("no event: %w", err)
	}
	_ = tc.SetDeadline(time.Time{})
	return tc, nil
}

// cut closes connections abruptly (RST, no FIN handshake).
func cut(conns []*net.TCPConn) {
	for _, c := range conns {
		_ = c.SetLinger(0)
		_ = c.Close()
	}
}

// parallel runs fn(i) for i in [0,n) on workers goroutines, stopping early
// when ctx ends.
func parallel(ctx context.Context, n, workers int, fn func(i int)) {
	var wg sync.WaitGroup
	next := make(chan int)
	for range workers {
		wg.Go(func() {
			for i := range next {
				fn(i)
			}
		})
	}
	for i := 0; i < n && ctx.Err() == nil; i++ {
		next <- i
	}
	close(next)
	wg.Wait()
}

// latencies summarises durations: p50 and max in ms.
func latencies(ds []time.Duration) (p50, maxMS float64) {
	if len(ds) == 0 {
		return 0, 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return ms(s[(len(s)-1)/2]), ms(s[len(s)-1])
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
