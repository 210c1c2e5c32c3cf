package front

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/mcpgw/mcpgw/internal/admit"

	"github.com/mcpgw/mcpgw/internal/fakemcp"
	"github.com/mcpgw/mcpgw/internal/mcp"
)

// postSSE posts one tools/call on an HTTP+SSE connection and returns the
// POST's status (its answer, if any, goes on the stream).
func postSSE(t *testing.T, c *sseClient, id int) int {
	t.Helper()
	resp, _ := post(t, c.messages, c.hdr, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"fs-slow","arguments":{"pad":"%0512d"}}}`, id, 0))
	return resp.StatusCode
}

// Attack: one caller posts request after request on one /mcp/sse
// connection to a slow upstream; each got 202 and a goroutine holding its
// body, with nothing bounding how many.
func TestSSEPendingRequestsAreBounded(t *testing.T) {
	up := fakemcp.New(t, fakemcp.Opts{Legacy: true, Lists: map[string][]json.RawMessage{mcp.MethodToolsList: fakemcp.Tools("slow")},
		Delay: map[string]time.Duration{mcp.MethodToolsCall: time.Minute}})
	f := newTestFront(t, frontSpec{ups: []upSpec{{name: "fs", fake: up}},
		cfg: MCPConfig{Sessions: SessionConfig{MaxSSEPending: 4}}})
	c := dialSSE(t, f.url, map[string]string{"Authorization": "Bearer " + testKey})
	c.initialize(1)
	for i := range 4 {
		if s := postSSE(t, c, 10+i); s != http.StatusAccepted {
			t.Fatalf("request %d: %d, want 202", i, s)
		}
	}
	for i := range 3 {
		if s := postSSE(t, c, 20+i); s != http.StatusServiceUnavailable {
			t.Fatalf("request beyond the bound: %d, want 503", s)
		}
	}
	// Another connection of the same caller has its own bound.
	other := dialSSE(t, f.url, map[string]string{"Authorization": "Bearer " + testKey})
	other.initialize(1)
	if s := postSSE(t, other, 30); s != http.StatusAccepted {
		t.Fatalf("another connection's request: %d, want 202", s)
	}
}

// The default bound is DefaultMaxSSEPending.
func TestSSEPendingDefault(t *testing.T) {
	up := fakemcp.New(t, fakemcp.Opts{Legacy: true, Lists: map[string][]json.RawMessage{mcp.MethodToolsList: fakemcp.Tools("slow")},
		Delay: map[string]time.Duration{mcp.MethodToolsCall: time.Minute}})
	f := newTestFront(t, frontSpec{ups: []upSpec{{name: "fs", fake: up}}})
	c := dialSSE(t, f.url, map[string]string{"Authorization": "Bearer " + testKey})
	c.initialize(1)
	for i := range DefaultMaxSSEPending {
		if s := postSSE(t, c, 10+i); s != http.StatusAccepted {
			t.Fatalf("request %d: %d, want 202", i, s)
		}
	}
	if s := postSSE(t, c, 99); s != http.StatusServiceUnavailable {
		t.Fatalf("request %d: %d, want 503", DefaultMaxSSEPending+1, s)
	}
}

// Requests answered on the stream keep their place in the in-flight bound
// until answered, so /mcp/sse cannot be used to run more at once than the
// gateway admits.
func TestSSEPendingCountsAgainstInflight(t *testing.T) {
	up := fakemcp.New(t, fakemcp.Opts{Legacy: true, Lists: map[string][]json.RawMessage{mcp.MethodToolsList: fakemcp.Tools("slow")},
		Delay: map[string]time.Duration{mcp.MethodToolsCall: time.Minute}})
	f := newTestFront(t, frontSpec{ups: []upSpec{{name: "fs", fake: up}}, admission: &admit.Config{MaxInflight: 3}})
	c := dialSSE(t, f.url, map[string]string{"Authorization": "Bearer " + testKey})
	c.initialize(1)
	for i := range 3 {
		if s := postSSE(t, c, 10+i); s != http.StatusAccepted {
			t.Fatalf("request %d: %d, want 202", i, s)
		}
	}
	if s := postSSE(t, c, 20); s != http.StatusServiceUnavailable {
		t.Fatalf("a request beyond the in-flight bound: %d, want 503", s)
	}
	c.cancel() // the connection ends: its requests are abandoned and give their places back
	<-c.ended
	if !eventually(5*time.Second, func() bool {
		resp, _ := post(t, f.url+"/mcp", map[string]string{"Authorization": "Bearer " + testKey, "MCP-Protocol-Version": mcp.V20251125},
			`{"jsonrpc":"2.0","id":1,"method":"ping"}`)
		return resp.StatusCode != http.StatusServiceUnavailable
	}) {
		t.Fatal("the in-flight places of abandoned requests were never given back")
	}
}
