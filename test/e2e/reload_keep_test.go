package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpgw/mcpgw/internal/app"
)

// legacyStream is a legacy session with its stream open, as a client holds
// it: a streamable HTTP session and its GET stream, or an /mcp/sse
// connection. It records what the stream carries and when it ends.
type legacyStream struct {
	t      *testing.T
	sse    bool
	post   string // where its messages are POSTed
	key    string
	sid    string // the streamable HTTP session's id
	ended  chan struct{}
	nextID atomic.Int64

	mu   sync.Mutex
	msgs []map[string]any
}

// openStream starts reading an SSE response until it ends; the first
// endpoint event (an /mcp/sse stream's) goes to endpoint.
func (s *legacyStream) read(resp *http.Response, endpoint chan<- string) {
	defer close(s.ended)
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		d, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		if strings.HasPrefix(d, "/mcp/sse/messages") {
			endpoint <- d
			continue
		}
		var m map[string]any
		if json.Unmarshal([]byte(d), &m) == nil {
			s.mu.Lock()
			s.msgs = append(s.msgs, m)
			s.mu.Unlock()
		}
	}
}

// getSSE opens a GET SSE stream on url with hdr, until the test ends.
func getSSE(t *testing.T, url string, hdr map[string]string) *http.Response {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET %s: %v %v", url, resp, err)
	}
	return resp
}

// openLegacyGET initializes a streamable HTTP legacy session on base+path
// with key and opens its GET stream.
func openLegacyGET(t *testing.T, base, path, key string) *legacyStream {
	t.Helper()
	s := &legacyStream{t: t, post: base + path, key: key, ended: make(chan struct{})}
	status, hdr, body := rpc(t, s.post, legacyHeaders(key, ""), `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	if s.sid = hdr.Get("Mcp-Session-Id"); status != 200 || s.sid == "" || body["result"] == nil {
		t.Fatalf("initialize on %s: %d %v", s.post, status, body)
	}
	if status, _ := s.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`); status != 202 {
		t.Fatalf("notifications/initialized on %s: %d", s.post, status)
	}
	go s.read(getSSE(t, s.post, legacyHeaders(key, s.sid)), nil)
	return s
}

// openLegacySSE opens an initialized /mcp/sse connection with key.
func openLegacySSE(t *testing.T, base, key string) *legacyStream {
	t.Helper()
	s := &legacyStream{t: t, sse: true, key: key, ended: make(chan struct{})}
	endpoint := make(chan string, 1)
	go s.read(getSSE(t, base+"/mcp/sse", map[string]string{"Authorization": "Bearer " + key}), endpoint)
	select {
	case ep := <-endpoint:
		s.post = base + ep
	case <-time.After(10 * time.Second):
		t.Fatal("/mcp/sse sent no endpoint")
	}
	if status, _ := s.send(`{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`); status != 202 {
		t.Fatalf("initialize over /mcp/sse: %d", status)
	}
	if s.answer("init", 15*time.Second) == nil {
		t.Fatal("initialize over /mcp/sse was not answered")
	}
	if status, _ := s.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`); status != 202 {
		t.Fatalf("notifications/initialized over /mcp/sse: %d", status)
	}
	return s
}

// send POSTs one message of the session: its status, and its answer when
// the POST carries it (streamable HTTP).
func (s *legacyStream) send(body string) (int, map[string]any) {
	s.t.Helper()
	if s.sse {
		resp := postRaw(s.t, context.Background(), s.post, map[string]string{"Authorization": "Bearer " + s.key}, "application/json", body)
		resp.Body.Close()
		return resp.StatusCode, nil
	}
	status, _, out := rpc(s.t, s.post, legacyHeaders(s.key, s.sid), body)
	return status, out
}

// answer waits up to within for the response with id on the stream.
func (s *legacyStream) answer(id string, within time.Duration) map[string]any {
	for deadline := time.Now().Add(within); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		s.mu.Lock()
		for _, m := range s.msgs {
			if m["id"] == id && m["method"] == nil {
				s.mu.Unlock()
				return m
			}
		}
		s.mu.Unlock()
	}
	return nil
}

// call calls tool on the session: its HTTP status and its answer (nil when
// none came).
func (s *legacyStream) call(tool string) (int, map[string]any) {
	s.t.Helper()
	id := fmt.Sprintf("c%d", s.nextID.Add(1))
	status, out := s.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%q,"method":"tools/call","params":{"name":%q,"arguments":{}}}`, id, tool))
	if s.sse && status == 202 {
		out = s.answer(id, 15*time.Second)
	}
	return status, out
}

// mustCall calls tool and fails unless the answer carries want.
func (s *legacyStream) mustCall(tool, want, what string) {
	s.t.Helper()
	status, out := s.call(tool)
	if b, _ := json.Marshal(out); status/100 != 2 || out["result"] == nil || !strings.Contains(string(b), want) {
		s.t.Fatalf("%s: %s = %d %s, want a result with %q", what, tool, status, b, want)
	}
}

// notified counts the notifications named method the stream carried.
func (s *legacyStream) notified(method string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, m := range s.msgs {
		if m["method"] == method {
			n++
		}
	}
	return n
}

// waitNotified waits until the stream carried n notifications named method.
func (s *legacyStream) waitNotified(method string, n int, what string) {
	s.t.Helper()
	for deadline := time.Now().Add(10 * time.Second); s.notified(method) < n; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			s.t.Fatalf("%s: %d %s on the stream, want %d", what, s.notified(method), method, n)
		}
	}
}

// open fails when the stream has ended.
func (s *legacyStream) open(what string) {
	s.t.Helper()
	select {
	case <-s.ended:
		s.t.Fatalf("%s: the stream ended", what)
	default:
	}
}

// waitEnded fails unless the stream ends within d.
func (s *legacyStream) waitEnded(d time.Duration, what string) {
	s.t.Helper()
	select {
	case <-s.ended:
	case <-time.After(d):
		s.t.Fatalf("%s: the stream is still open after %v", what, d)
	}
}

// keepSetup is two go-sdk peers a and b (2026-07-28, over HTTP) behind a
// gateway with a key store, a key that sees only a, and one legacy session
// of each kind opened with that key, both following a.
type keepSetup struct {
	a, b    *listenPeer
	gw      *gatewayUnderTest
	key     string
	listens *atomic.Int64 // subscriptions/listen a was sent, ever
	get     *legacyStream
	sse     *legacyStream
}

// keepConfig is the YAML of the setup: a's url (its own when ""), more of
// a's YAML, and b's.
func (k *keepSetup) config(urlA, extraA, b string) string {
	if urlA == "" {
		urlA = k.a.url
	}
	if b == "" {
		b = fmt.Sprintf("  b:\n    url: %s\n    transport: http\n    protocol_version: \"2026-07-28\"\n", k.b.url)
	}
	return fmt.Sprintf("general_settings:\n  master_key: %s\n  mcp_advertised_versions: [\"2025-11-25\", \"2026-07-28\"]\nmcp_servers:\n"+
		"  a:\n    url: %s\n    transport: http\n    protocol_version: \"2026-07-28\"\n%s%s", testKey, urlA, extraA, b)
}

func startKeepSetup(t *testing.T) *keepSetup {
	t.Helper()
	k := &keepSetup{a: startListenPeer(t, true), b: startListenPeer(t, true), listens: new(atomic.Int64)}
	count := func(r *http.Request) {
		if r.Header.Get("Mcp-Method") == "subscriptions/listen" {
			k.listens.Add(1)
		}
	}
	k.a.before.Store(&count)
	k.gw = startGatewayWith(t, k.config("", "", ""), nil, app.WithDataDir(t.TempDir()))
	k.key = generateKey(t, k.gw.url, `{"object_permission":{"mcp_servers":["a"]}}`)
	k.get = openLegacyGET(t, k.gw.url, "/mcp/", k.key)
	k.sse = openLegacySSE(t, k.gw.url, k.key)
	// Both sessions' follows of a (one key, one credential there) share one
	// upstream listen.
	waitOpen(t, &k.a.open, 1, 10*time.Second, "the two sessions' follows of a")
	for _, s := range []*legacyStream{k.get, k.sse} {
		s.mustCall("a-test_simple_text", "simple", "before the reload")
	}
	return k
}

// both runs f on each session, named.
func (k *keepSetup) both(f func(s *legacyStream, what string)) {
	f(k.get, "the GET stream session")
	f(k.sse, "the /mcp/sse session")
}

// keptThrough checks that both sessions went on through a reload: their
// streams open, their follows of a the same upstream listeners (none opened
// again), a tool call answered, and a change on a delivered.
func (k *keepSetup) keptThrough(t *testing.T, listed int) {
	t.Helper()
	time.Sleep(300 * time.Millisecond) // an ended stream or a new follow would show by now
	k.both(func(s *legacyStream, what string) { s.open(what) })
	if n := k.listens.Load(); n != 1 {
		t.Errorf("a was sent %d subscriptions/listen, want the 1 of before the reload (kept, shared by both follows)", n)
	}
	waitOpen(t, &k.a.open, 1, 3*time.Second, "the follows of a after the reload")
	k.both(func(s *legacyStream, what string) {
		s.mustCall("a-test_simple_text", "simple", what+" after the reload")
	})
	triggerUpstream(t, k.a.url, 9)
	k.both(func(s *legacyStream, what string) {
		s.waitNotified("notifications/tools/list_changed", listed+1, what+": a change on a after the reload")
	})
}

// TestLegacyStreamsKeptWhenAnotherServerChanges: a reload that changes only
// a server the sessions do not see (b's url and description) keeps a legacy
// session's GET stream and an /mcp/sse connection, with their follows, and
// tells them nothing.
func TestLegacyStreamsKeptWhenAnotherServerChanges(t *testing.T) {
	t.Parallel()
	k := startKeepSetup(t)
	applyYAML(t, k.gw, k.config("", "", fmt.Sprintf("  b:\n    url: %s?moved=1\n    description: moved\n", k.b.url)))
	k.both(func(s *legacyStream, what string) {
		if n := s.notified("notifications/tools/list_changed"); n != 0 {
			t.Errorf("%s was told %d list changes for a change it cannot see", what, n)
		}
	})
	k.keptThrough(t, 0)
}

// TestLegacyStreamsKeptThroughMetadataChange: a metadata-only change of the
// sessions' own server (description, allowed_tools) keeps both sessions and
// their follows; the tool filter changes what they see, so each is told
// tools/list_changed once, and calls go on through the new filter.
func TestLegacyStreamsKeptThroughMetadataChange(t *testing.T) {
	t.Parallel()
	k := startKeepSetup(t)
	// added_1 is the tool keptThrough's change on a adds: it stays visible.
	applyYAML(t, k.gw, k.config("", "    description: changed\n    allowed_tools: [test_simple_text, added_1]\n", ""))
	k.both(func(s *legacyStream, what string) {
		s.waitNotified("notifications/tools/list_changed", 1, what+": the filter hid a tool")
	})
	k.both(func(s *legacyStream, what string) {
		status, out := s.call("a-test_trigger_tool_change")
		if b, _ := json.Marshal(out); status/100 != 2 || out["error"] == nil && !strings.Contains(string(b), `"isError":true`) {
			t.Errorf("%s: the filtered tool = %d %s, want a refusal", what, status, b)
		}
	})
	k.keptThrough(t, 1)
}

// TestLegacyStreamsEndWhenTheirServerMoves: a url change of the sessions'
// server is a new target: both streams end, the sessions' next requests
// get 404 (their clients initialize again), and a new session works.
func TestLegacyStreamsEndWhenTheirServerMoves(t *testing.T) {
	t.Parallel()
	k := startKeepSetup(t)
	applyYAML(t, k.gw, k.config(k.a.url+"?moved=1", "", ""))
	k.both(func(s *legacyStream, what string) {
		s.waitEnded(5*time.Second, what)
		if status, out := s.call("a-test_simple_text"); status != http.StatusNotFound {
			t.Errorf("%s: a call after its server moved = %d %v, want 404", what, status, out)
		}
	})
	waitOpen(t, &k.a.open, 0, 5*time.Second, "the ended sessions' follows of a")
	again := openLegacyGET(t, k.gw.url, "/mcp/", k.key)
	again.mustCall("a-test_simple_text", "simple", "a new session after the move")
	fresh := openLegacySSE(t, k.gw.url, k.key)
	fresh.mustCall("a-test_simple_text", "simple", "a new /mcp/sse session after the move")
}

// TestRemovedServerCallInFlightFinishesOnLegacySessions: a server removed
// while legacy sessions' calls to it are running: each call is answered (on
// the POST, or on the /mcp/sse stream before it closes), then the sessions
// end; a new session's call to the removed server's tool is unknown.
func TestRemovedServerCallInFlightFinishesOnLegacySessions(t *testing.T) {
	t.Parallel()
	a, b := startListenPeer(t, true), startListenPeer(t, true)
	release, started := make(chan struct{}), make(chan struct{}, 2)
	a.server.AddTool(&sdk.Tool{Name: "slow", InputSchema: map[string]any{"type": "object"}}, func(ctx context.Context, _ *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		started <- struct{}{}
		select {
		case <-release:
		case <-ctx.Done():
		}
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "slow done"}}}, nil
	})
	k := &keepSetup{a: a, b: b}
	gw := startGateway(t, k.config("", "", ""), nil)
	get, sse := openLegacyGET(t, gw.url, "/mcp/", testKey), openLegacySSE(t, gw.url, testKey)
	answers := make(chan string, 2)
	for _, s := range []*legacyStream{get, sse} {
		go func() {
			_, out := s.call("a-slow")
			b, _ := json.Marshal(out)
			answers <- string(b)
		}()
	}
	for range 2 {
		select {
		case <-started:
		case <-time.After(10 * time.Second):
			t.Fatal("the slow calls did not reach a")
		}
	}
	applied := make(chan struct{})
	go func() {
		defer close(applied)
		applyYAML(t, gw, fmt.Sprintf("general_settings:\n  master_key: %s\n  mcp_advertised_versions: [\"2025-11-25\", \"2026-07-28\"]\nmcp_servers:\n"+
			"  b:\n    url: %s\n    transport: http\n    protocol_version: \"2026-07-28\"\n", testKey, b.url))
	}()
	time.Sleep(200 * time.Millisecond) // the apply is waiting for the calls
	close(release)
	for range 2 {
		select {
		case got := <-answers:
			if !strings.Contains(got, "slow done") {
				t.Errorf("a call in flight to the removed server = %s, want its result", got)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("a call in flight to the removed server was never answered")
		}
	}
	<-applied
	sse.waitEnded(5*time.Second, "the /mcp/sse session that saw the removed server")
	get.waitEnded(5*time.Second, "the GET stream session that saw the removed server")
	again := openLegacyGET(t, gw.url, "/mcp/", testKey)
	// A legacy caller is told an unknown tool in band, as LiteLLM does.
	if status, out := again.call("a-slow"); status != 200 || !strings.Contains(fmt.Sprint(out), "isError:true") || !strings.Contains(fmt.Sprint(out), "'a-slow' not found") {
		t.Fatalf("a call to the removed server's tool = %d %v, want the unknown tool refusal", status, out)
	}
	again.mustCall("b-test_simple_text", "simple", "the remaining server")
}
