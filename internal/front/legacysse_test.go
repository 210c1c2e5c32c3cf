package front

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpgw/mcpgw/internal/fakemcp"
	"github.com/mcpgw/mcpgw/internal/jsonrpc"
	"github.com/mcpgw/mcpgw/internal/mcp"
	"github.com/mcpgw/mcpgw/internal/sse"
)

// sseClient is one legacy HTTP+SSE connection to the front.
type sseClient struct {
	t        *testing.T
	base     string
	hdr      map[string]string
	messages string // the announced POST URL
	events   chan *jsonrpc.Message
	ended    chan struct{}
	cancel   context.CancelFunc
}

func dialSSE(t *testing.T, base string, hdr map[string]string) *sseClient {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/mcp/sse", nil)
	req.Header.Set("Accept", "text/event-stream")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		cancel()
		resp.Body.Close()
		t.Fatalf("GET /mcp/sse: %d", resp.StatusCode)
	}
	c := &sseClient{t: t, base: base, hdr: hdr, events: make(chan *jsonrpc.Message, 64), ended: make(chan struct{}), cancel: cancel}
	rd := sse.NewReader(resp.Body, 1<<20)
	ev, err := rd.Next()
	if err != nil || ev.Type != "endpoint" {
		cancel()
		resp.Body.Close()
		t.Fatalf("first event %+v %v", ev, err)
	}
	c.messages = base + string(ev.Data)
	go func() {
		defer close(c.ended)
		defer resp.Body.Close()
		for {
			ev, err := rd.Next()
			if err != nil {
				return
			}
			if m, err := jsonrpc.Decode(ev.Data); err == nil {
				c.events <- m
			}
		}
	}()
	t.Cleanup(func() { cancel(); <-c.ended })
	return c
}

// call posts a request and waits for its answer on the stream.
func (c *sseClient) call(id int, method, params string) *jsonrpc.Message {
	c.t.Helper()
	resp, _ := post(c.t, c.messages, c.hdr, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`, id, method, params))
	if resp.StatusCode != http.StatusAccepted {
		c.t.Fatalf("%s: POST answered %d", method, resp.StatusCode)
	}
	want := fmt.Sprint(id)
	for {
		select {
		case m := <-c.events:
			if m.IsResponse() && m.ID.String() == want {
				return m
			}
		case <-time.After(10 * time.Second):
			c.t.Fatalf("no answer to %s", method)
		}
	}
}

func (c *sseClient) initialize(id int) {
	c.t.Helper()
	m := c.call(id, mcp.MethodInitialize, `{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}`)
	if m.Error != nil {
		c.t.Fatalf("initialize: %v", m.Error)
	}
}

// subscribableUpstream is a legacy upstream that counts resource
// subscriptions per URI.
func subscribableUpstream(t *testing.T) (*fakemcp.Server, func(method, uri string) int) {
	var mu sync.Mutex
	seen := map[string]int{}
	count := func(method string) fakemcp.Handler {
		return func(params json.RawMessage) (json.RawMessage, *jsonrpc.Error) {
			uri, _ := jsonrpc.StringMember(params, "uri")
			mu.Lock()
			seen[method+" "+uri]++
			mu.Unlock()
			return json.RawMessage(`{}`), nil
		}
	}
	up := fakemcp.New(t, fakemcp.Opts{Legacy: true, Caps: `{"resources":{"subscribe":true}}`,
		Lists: map[string][]json.RawMessage{mcp.MethodResourcesList: fakemcp.Resources("file:///r1", "file:///r2", "file:///r3")}, Handlers: map[string]fakemcp.Handler{
			mcp.MethodResourcesSubscribe:   count(mcp.MethodResourcesSubscribe),
			mcp.MethodResourcesUnsubscribe: count(mcp.MethodResourcesUnsubscribe),
		}})
	return up, func(method, uri string) int {
		mu.Lock()
		defer mu.Unlock()
		return seen[method+" "+uri]
	}
}

// Re-initializing an HTTP+SSE connection must end the session it replaces:
// its background follows and upstream subscriptions must not live on until
// the connection (or the process) ends.
func TestSSEReinitializeReleasesTheOldSession(t *testing.T) {
	up, seen := subscribableUpstream(t)
	f := newTestFront(t, frontSpec{ups: []upSpec{{name: "fs", fake: up}}})
	c := dialSSE(t, f.url, map[string]string{"Authorization": "Bearer " + testKey})
	var sessions []*live
	for i := 1; i <= 3; i++ {
		c.initialize(i * 10)
		sessions = append(sessions, f.mcp.sseConnSession(t, c.messages))
		uri := fmt.Sprintf("file:///r%d", i)
		if m := c.call(i*10+1, mcp.MethodResourcesSubscribe, `{"uri":"`+uri+`"}`); m.Error != nil {
			t.Fatalf("subscribe %s: %v", uri, m.Error)
		}
		if !eventually(5*time.Second, func() bool { return seen(mcp.MethodResourcesSubscribe, uri) == 1 }) {
			t.Fatalf("upstream did not get the subscription to %s", uri)
		}
		// The upstream counts the subscription before answering it; let
		// the answer reach the gateway (a subscription cut off in flight is
		// the gateway's to undo, not this test's subject).
		time.Sleep(200 * time.Millisecond)
	}
	for i, uri := range []string{"file:///r1", "file:///r2"} {
		if !eventually(5*time.Second, func() bool { return seen(mcp.MethodResourcesUnsubscribe, uri) == 1 }) {
			t.Errorf("the upstream subscription of replaced session %d (%s) was not released", i+1, uri)
		}
		if !ended(sessions[i], 5*time.Second) {
			t.Errorf("replaced session %d still holds goroutines", i+1)
		}
	}
	if seen(mcp.MethodResourcesUnsubscribe, "file:///r3") != 0 {
		t.Error("the current session's subscription was released")
	}
}

// ended reports whether a session was ended and its background work
// finished within d.
func ended(l *live, d time.Duration) bool {
	select {
	case <-l.done:
	case <-time.After(d):
		return false
	}
	finished := make(chan struct{})
	go func() { l.work.Wait(); close(finished) }()
	select {
	case <-finished:
		return true
	case <-time.After(d):
		return false
	}
}

// sseConnSession returns the current session of the HTTP+SSE connection
// whose messages URL is url.
func (h *MCP) sseConnSession(t *testing.T, url string) *live {
	t.Helper()
	_, id, _ := strings.Cut(url, "session_id=")
	conn := h.sseConns.get(id)
	if conn == nil {
		t.Fatal("no such connection")
	}
	conn.mu.Lock()
	defer conn.mu.Unlock()
	if conn.sess == nil {
		t.Fatal("connection not initialized")
	}
	return conn.sess
}

// A revoked caller's HTTP+SSE stream ends, as its GET stream and listens do.
func TestSSEStreamEndsWhenCallerRevoked(t *testing.T) {
	hook, set := switchableWebhook(t)
	set(`{"user_id":"alice","object_permission":{"mcp_servers":["fs"]}}`)
	up := fakemcp.New(t, fakemcp.Opts{Legacy: true})
	f := newTestFront(t, frontSpec{ups: []upSpec{{name: "fs", fake: up}}, webhook: hook,
		cfg: MCPConfig{Sessions: SessionConfig{RecheckInterval: 50 * time.Millisecond}}})
	c := dialSSE(t, f.url, map[string]string{"Authorization": "Bearer sk-alice-key-00000001"})
	c.initialize(1)
	select {
	case <-c.ended:
		t.Fatal("the stream ended while the caller was still allowed")
	case <-time.After(300 * time.Millisecond):
	}
	set("")
	select {
	case <-c.ended:
	case <-time.After(5 * time.Second):
		t.Fatal("a revoked caller's /mcp/sse stream stayed open")
	}
}
