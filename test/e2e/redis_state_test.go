package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/redis/go-redis/v9"

	"github.com/mcpgw/mcpgw/internal/redistest"
	"github.com/mcpgw/mcpgw/internal/testpeers"
)

// replicaEnv is the environment of replicas sharing one salt key and srv's Redis.
func replicaEnv(srv *redistest.Server) map[string]string {
	return map[string]string{"LITELLM_SALT_KEY": "replica-shared-salt-0123456789", "REDIS_URL": srv.URL()}
}

// deleteSession ends a legacy session with DELETE on url.
func deleteSession(t *testing.T, url, sid string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodDelete, url, nil)
	req.Header.Set("Authorization", "Bearer "+testKey)
	req.Header.Set("Mcp-Session-Id", sid)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("DELETE: %d", resp.StatusCode)
	}
}

// TestRedisDeletedSessionEndsOnEveryReplica: a legacy session DELETEd on
// replica A gets 404 on replica B, and still after both restart on the same
// Redis; a session not deleted is served by B (and by a restarted B).
func TestRedisDeletedSessionEndsOnEveryReplica(t *testing.T) {
	srvRedis := redistest.Start(t)
	upstream := fmt.Sprintf("general_settings:\n  master_key: %s\nmcp_servers:\n  fx:\n    url: %s\n", testKey, testpeers.StartGoFixtureHTTP(t, true))
	env := replicaEnv(srvRedis)
	a, b := startGateway(t, upstream, env), startGateway(t, upstream, env)
	list := `{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{}}`

	ended, kept := initLegacy(t, a.url+"/mcp", testKey), initLegacy(t, a.url+"/mcp", testKey)
	for _, sid := range []string{ended, kept} {
		if status, _, body := rpc(t, b.url+"/mcp", legacyHeaders(testKey, sid), list); status != 200 || len(toolsOf(body)) == 0 {
			t.Fatalf("B serving A's session before the DELETE: %d %v", status, body)
		}
	}
	deleteSession(t, a.url+"/mcp", ended)
	if status, _, _ := rpc(t, b.url+"/mcp", legacyHeaders(testKey, ended), list); status != 404 {
		t.Fatalf("B after the DELETE on A: %d; want 404", status)
	}

	a.stop()
	b.stop()
	a2, b2 := startGateway(t, upstream, env), startGateway(t, upstream, env)
	for _, gw := range []*gatewayUnderTest{a2, b2} {
		if status, _, _ := rpc(t, gw.url+"/mcp", legacyHeaders(testKey, ended), list); status != 404 {
			t.Fatalf("restarted replica serving the deleted session: %d; want 404", status)
		}
		if status, _, body := rpc(t, gw.url+"/mcp", legacyHeaders(testKey, kept), list); status != 200 || len(toolsOf(body)) == 0 {
			t.Fatalf("restarted replica refusing a live session: %d %v", status, body)
		}
	}
}

// elicitingUpstream is a go-sdk server (2025-11-25, stateful, over HTTP)
// whose tool "ask" asks its caller for a name and answers "Hello, <name>!".
func elicitingUpstream(t *testing.T) string {
	t.Helper()
	srv := sdk.NewServer(&sdk.Implementation{Name: "eliciting", Version: "1"}, nil)
	srv.AddTool(&sdk.Tool{Name: "ask", InputSchema: map[string]any{"type": "object"}}, func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		res, err := req.Session.Elicit(ctx, &sdk.ElicitParams{Message: "Your name?", RequestedSchema: map[string]any{
			"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}}})
		if err != nil {
			return nil, err
		}
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: fmt.Sprintf("Hello, %v! (%s)", res.Content["name"], res.Action)}}}, nil
	})
	h := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil))
	t.Cleanup(h.Close)
	return h.URL
}

// sseMessages posts body to url and returns the JSON-RPC messages of its
// answer as they arrive (an event stream, or one JSON body); the channel
// closes when the answer ends.
func sseMessages(t *testing.T, ctx context.Context, url string, hdr map[string]string, body string) <-chan map[string]any {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader([]byte(body)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	out := make(chan map[string]any, 8)
	go func() {
		defer close(out)
		defer resp.Body.Close()
		rd := bufio.NewReader(resp.Body)
		for {
			line, err := rd.ReadString('\n')
			data, isData := strings.CutPrefix(strings.TrimRight(line, "\r\n"), "data: ")
			if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
				data, isData = line, strings.TrimSpace(line) != ""
			}
			if isData {
				var m map[string]any
				if json.Unmarshal([]byte(data), &m) == nil {
					out <- m
				}
			}
			if err != nil {
				return
			}
		}
	}()
	return out
}

// next is the next message of msgs, failing the test after d.
func next(t *testing.T, msgs <-chan map[string]any, d time.Duration, what string) map[string]any {
	t.Helper()
	select {
	case m, ok := <-msgs:
		if !ok {
			t.Fatalf("%s: the answer ended", what)
		}
		return m
	case <-time.After(d):
		t.Fatalf("%s: nothing within %s", what, d)
	}
	return nil
}

// TestRedisElicitationAnswerOnAnotherReplica: a legacy caller's tool call
// on replica A makes its upstream (a go-sdk server) elicit; the caller
// posts its answer to replica B; the call completes on A with the answer.
// With Redis stopped an answer posted to A still completes a call there
// (single replica); once Redis is back, answers posted to B reach A again.
func TestRedisElicitationAnswerOnAnotherReplica(t *testing.T) {
	srvRedis := redistest.Start(t)
	cfg := fmt.Sprintf("general_settings:\n  master_key: %s\nmcp_servers:\n  up:\n    url: %s\n    allow_elicitation: true\n", testKey, elicitingUpstream(t))
	env := replicaEnv(srvRedis)
	a, b := startGateway(t, cfg, env), startGateway(t, cfg, env)
	status, hdr, body := rpc(t, a.url+"/mcp", legacyHeaders(testKey, ""), `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{}},"clientInfo":{"name":"t","version":"1"}}}`)
	sid := hdr.Get("Mcp-Session-Id")
	if status != 200 || sid == "" {
		t.Fatalf("initialize: %d %v", status, body)
	}
	if status, _, _ := rpc(t, a.url+"/mcp", legacyHeaders(testKey, sid), `{"jsonrpc":"2.0","method":"notifications/initialized"}`); status != 202 {
		t.Fatalf("notifications/initialized: %d", status)
	}

	call := func(n int, answerTo string, name string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		msgs := sseMessages(t, ctx, a.url+"/mcp", legacyHeaders(testKey, sid),
			fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"up-ask","arguments":{}}}`, 10+n))
		ask := next(t, msgs, 10*time.Second, "the elicitation request")
		id, _ := json.Marshal(ask["id"])
		if ask["method"] != "elicitation/create" {
			t.Fatalf("first message of the call: %v", ask)
		}
		answer := fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"action":"accept","content":{"name":%q}}}`, id, name)
		if status, _, body := rpc(t, answerTo+"/mcp", legacyHeaders(testKey, sid), answer); status != 202 {
			t.Fatalf("answer posted: %d %v", status, body)
		}
		res := next(t, msgs, 10*time.Second, "the call's result")
		if text := fmt.Sprint(res["result"]); !strings.Contains(text, "Hello, "+name+"!") || !strings.Contains(text, "accept") {
			t.Fatalf("call result: %v", res)
		}
	}
	waitSubscribers(t, srvRedis, "mcpgw:relay:*", 2)
	call(1, b.url, "Lee")

	srvRedis.Stop()
	call(2, a.url, "Ada") // the replica holding the call still takes answers itself
	srvRedis.Restart()
	waitSubscribers(t, srvRedis, "mcpgw:relay:*", 2) // both replicas subscribed again by themselves
	call(3, b.url, "Kim")
}

// waitSubscribers waits until pattern matches n channels with subscribers
// in srv's Redis.
func waitSubscribers(t *testing.T, srv *redistest.Server, pattern string, n int) {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	defer c.Close()
	deadline := time.Now().Add(15 * time.Second)
	for {
		chans, _ := c.PubSubChannels(context.Background(), pattern).Result()
		if len(chans) >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d channels match %s with subscribers; want %d", len(chans), pattern, n)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// cachingPeer is a go-sdk server (2025-11-25, stateful, over HTTP) whose
// tools/list answers say they may be cached for an hour, counting them and
// the GET streams open on it; change adds the tool "added", which makes it
// send notifications/tools/list_changed on its sessions' GET streams.
type cachingPeer struct {
	url   string
	srv   *sdk.Server
	lists atomic.Int32
	gets  atomic.Int32
}

func newCachingPeer(t *testing.T) *cachingPeer {
	p := &cachingPeer{srv: sdk.NewServer(&sdk.Implementation{Name: "caching-peer", Version: "1"}, nil)}
	text := &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "ok"}}}
	p.srv.AddTool(&sdk.Tool{Name: "base", InputSchema: map[string]any{"type": "object"}}, func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		return text, nil
	})
	p.srv.AddReceivingMiddleware(func(next sdk.MethodHandler) sdk.MethodHandler {
		return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
			res, err := next(ctx, method, req)
			if lr, ok := res.(*sdk.ListToolsResult); ok && err == nil {
				p.lists.Add(1)
				lr.TTLMs = int(time.Hour / time.Millisecond)
			}
			return res, err
		}
	})
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return p.srv }, nil)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			p.gets.Add(1)
			defer p.gets.Add(-1)
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	p.url = srv.URL
	return p
}

func (p *cachingPeer) change() {
	p.srv.AddTool(&sdk.Tool{Name: "added", InputSchema: map[string]any{"type": "object"}}, func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "new tool"}}}, nil
	})
}

// TestRedisListChangeHeardByOneReplicaRefreshesAnother: replica B caches an
// upstream's tool list (the upstream says it may for an hour); the upstream
// changes it and tells replica A (a caller listens there, so A follows the
// upstream; nothing follows it on B); B's next tools/list fetches the list
// again and shows the new tool.
func TestRedisListChangeHeardByOneReplicaRefreshesAnother(t *testing.T) {
	srvRedis := redistest.Start(t)
	p := newCachingPeer(t)
	cfg := fmt.Sprintf("general_settings:\n  master_key: %s\n  mcp_advertised_versions: [\"2025-11-25\", \"2026-07-28\"]\nmcp_servers:\n  peer:\n    url: %s\n    protocol_version: \"2025-11-25\"\n", testKey, p.url)
	env := replicaEnv(srvRedis)
	a, b := startGateway(t, cfg, env), startGateway(t, cfg, env)
	waitSubscribers(t, srvRedis, "mcpgw:notify", 1)
	tools := func(gw string) []string {
		t.Helper()
		status, body := listAs(t, gw, testKey)
		if status != 200 {
			t.Fatalf("tools/list: %d %v", status, body)
		}
		return toolsOf(body)
	}
	if got := tools(b.url); !slices.Contains(got, "peer-base") || slices.Contains(got, "peer-added") {
		t.Fatalf("B's tools before the change: %v", got)
	}
	before := p.lists.Load()
	tools(b.url)
	if n := p.lists.Load(); n != before {
		t.Fatalf("B's second tools/list reached the upstream (%d lists, was %d): the list is not cached, so the test proves nothing", n, before)
	}

	events, _ := listenUntilLeft(t, a.url+"/mcp", modernHeaders("subscriptions/listen", ""))
	if first := <-events; !strings.Contains(first, "notifications/subscriptions/acknowledged") {
		t.Fatalf("first event of A's listen = %s", first)
	}
	waitUntil(t, 3*time.Second, "A does not follow the upstream", func() bool { return p.gets.Load() == 1 })
	p.change()
	select {
	case ev := <-events:
		if !strings.Contains(ev, "notifications/tools/list_changed") {
			t.Fatalf("A's listen event = %s", ev)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("A heard no list change within 5 s")
	}
	waitUntil(t, 3*time.Second, "B still serves its cached list after A heard the change", func() bool {
		return slices.Contains(tools(b.url), "peer-added")
	})
}
