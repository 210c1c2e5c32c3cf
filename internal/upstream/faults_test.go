package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpgw/mcpgw/internal/jsonrpc"
)

func newClient(t *testing.T, cfg Config) *Client {
	t.Helper()
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close(context.Background()) })
	return c
}

func TestPinnedVersionOfferedExactly(t *testing.T) {
	for _, v := range []string{"2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"} {
		t.Run(v, func(t *testing.T) {
			f := legacyServer(t, v, func(w http.ResponseWriter, r *http.Request, m *jsonrpc.Message) {
				writeJSON(w, 200, toolsPage(m.ID, "a"))
			})
			c := newClient(t, Config{Name: "up", URL: f.url(), ProtocolVersion: v})
			if _, err := c.ListTools(context.Background(), Options{}); err != nil {
				t.Fatal(err)
			}
			reqs := f.requests()
			if !strings.Contains(reqs[0].Body, `"protocolVersion":"`+v+`"`) {
				t.Fatalf("initialize body %s does not offer %s", reqs[0].Body, v)
			}
			if got := reqs[2].Header.Get("MCP-Protocol-Version"); got != v {
				t.Fatalf("tools/list carried MCP-Protocol-Version %q, want %q", got, v)
			}
		})
	}
}

func TestVersionMismatchRefused(t *testing.T) {
	f := legacyServer(t, "2025-03-26", func(w http.ResponseWriter, r *http.Request, m *jsonrpc.Message) {
		writeJSON(w, 200, toolsPage(m.ID, "a"))
	})
	c := newClient(t, Config{Name: "up", URL: f.url(), ProtocolVersion: "2025-06-18"})
	_, err := c.ListTools(context.Background(), Options{})
	if err == nil || !strings.Contains(err.Error(), "protocol version") {
		t.Fatalf("err = %v, want a protocol version error", err)
	}
	for _, s := range f.requests() {
		if s.Method == "tools/list" || s.Method == "notifications/initialized" {
			t.Fatalf("%s was sent after a failed negotiation", s.Method)
		}
	}
	// The refused session is ended exactly once.
	if d := deletes(f); !slices.Equal(d, []string{"s1"}) {
		t.Fatalf("DELETEs = %v, want one for s1", d)
	}
}

func TestAutoOffersLatestLegacyAndAcceptsOlder(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, m *jsonrpc.Message) {
		switch {
		case m.Method == "server/discover":
			writeJSON(w, 400, []byte(`{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"Bad Request: Server not initialized"}}`))
		case m.Method == "initialize":
			if !strings.Contains(string(m.Params), `"protocolVersion":"2025-11-25"`) {
				t.Errorf("auto offered %s", m.Params)
			}
			w.Header().Set("Mcp-Session-Id", "abc")
			writeJSON(w, 200, jsonrpc.EncodeResult(m.ID, initResult("2025-06-18")))
		case m.Kind() != jsonrpc.KindRequest:
			w.WriteHeader(202)
		default:
			writeJSON(w, 200, toolsPage(m.ID, "t1"))
		}
	})
	c := newClient(t, Config{Name: "up", URL: f.url()})
	tools, err := c.ListTools(context.Background(), Options{})
	if err != nil || len(tools) != 1 {
		t.Fatalf("tools=%v err=%v", tools, err)
	}
	info, _ := c.Info(context.Background(), Options{})
	if info.Version != "2025-06-18" || info.Instructions != "upstream says hello" {
		t.Fatalf("info = %+v", info)
	}
	// The verdict is remembered: a second operation neither probes nor
	// re-initialises.
	if _, err := c.ListTools(context.Background(), Options{}); err != nil {
		t.Fatal(err)
	}
	want := []string{"server/discover None", "initialize None", "tools/list abc", "tools/list abc"}
	if got := f.calls(); !slices.Equal(got, want) {
		t.Fatalf("requests = %v, want %v", got, want)
	}
}

// The upstream answers a request on a session it no longer knows (it ended
// the session, or restarted): the call is refused unread, so the client
// starts one new session and retries once; an error that is not about the
// session is not retried.
func TestSessionExpiryReinitialises(t *testing.T) {
	jsonErr := func(w http.ResponseWriter, status int, msg string) {
		writeJSON(w, status, []byte(`{"jsonrpc":"2.0","error":{"code":-32000,"message":"`+msg+`"}}`))
	}
	cases := []struct {
		name    string
		refuse  func(w http.ResponseWriter) // the answer to a request on s1
		wantErr bool
		want    []string
	}{
		{"404", func(w http.ResponseWriter) { http.Error(w, "session gone", http.StatusNotFound) }, false,
			[]string{"initialize None", "tools/list s1", "tools/list s1", "initialize None", "tools/list s2"}},
		{"400 JSON error naming the session (TS SDK servers)", func(w http.ResponseWriter) {
			jsonErr(w, 400, "Bad Request: No valid session ID provided")
		}, false, []string{"initialize None", "tools/list s1", "tools/list s1", "initialize None", "tools/list s2"}},
		{"400 plain text naming the session", func(w http.ResponseWriter) {
			http.Error(w, "Bad Request: unknown Mcp-Session-Id", http.StatusBadRequest)
		}, false, []string{"initialize None", "tools/list s1", "tools/list s1", "initialize None", "tools/list s2"}},
		{"400 about something else is not retried", func(w http.ResponseWriter) {
			jsonErr(w, 400, "Bad Request: invalid params")
		}, true, []string{"initialize None", "tools/list s1", "tools/list s1"}},
		{"400 without a body is not retried", func(w http.ResponseWriter) { w.WriteHeader(400) }, true,
			[]string{"initialize None", "tools/list s1", "tools/list s1"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var lists atomic.Int32
			f := legacyServer(t, "2025-11-25", func(w http.ResponseWriter, r *http.Request, m *jsonrpc.Message) {
				if lists.Add(1) == 1 {
					writeJSON(w, 200, toolsPage(m.ID, "a"))
					return
				}
				if r.Header.Get("Mcp-Session-Id") == "s1" {
					tc.refuse(w)
					return
				}
				writeJSON(w, 200, toolsPage(m.ID, "b"))
			})
			c := newClient(t, Config{Name: "up", URL: f.url(), ProtocolVersion: "2025-11-25"})
			ctx := context.Background()
			if _, err := c.ListTools(ctx, Options{}); err != nil {
				t.Fatal(err)
			}
			tools, err := c.ListTools(ctx, Options{})
			if tc.wantErr {
				if err == nil || sessionEnded(err) {
					t.Fatalf("err = %v, want the upstream's refusal", err)
				}
			} else if err != nil || len(tools) != 1 || !strings.Contains(string(tools[0]), `"b"`) {
				t.Fatalf("after re-init: %s %v", tools, err)
			}
			if got := f.calls(); !slices.Equal(got, tc.want) {
				t.Fatalf("requests = %v, want %v", got, tc.want)
			}
		})
	}
}

// An upstream that refuses every session is re-initialised once per call,
// not in a loop.
func TestSessionExpiryRetriesOnce(t *testing.T) {
	f := legacyServer(t, "2025-11-25", func(w http.ResponseWriter, r *http.Request, m *jsonrpc.Message) {
		http.Error(w, "session not found", http.StatusNotFound)
	})
	c := newClient(t, Config{Name: "up", URL: f.url(), ProtocolVersion: "2025-11-25"})
	_, err := c.CallTool(context.Background(), "x", []byte(`{}`), Options{})
	var re *RPCError
	if !errors.As(err, &re) || re.Err.Message != "Session terminated" {
		t.Fatalf("err = %v, want Session terminated", err)
	}
	want := []string{"initialize None", "tools/call s1", "initialize None", "tools/call s2"}
	if got := f.calls(); !slices.Equal(got, want) {
		t.Fatalf("requests = %v, want %v", got, want)
	}
}

func TestSessionExpiryRelaysJSONRPCError(t *testing.T) {
	f := legacyServer(t, "2025-11-25", func(w http.ResponseWriter, r *http.Request, m *jsonrpc.Message) {
		writeJSON(w, 404, jsonrpc.EncodeError(m.ID, &jsonrpc.Error{Code: -32601, Message: "Tool catalog unavailable"}))
	})
	c := newClient(t, Config{Name: "up", URL: f.url(), ProtocolVersion: "2025-11-25"})
	_, err := c.ListTools(context.Background(), Options{})
	var re *RPCError
	if !errors.As(err, &re) || re.Code() != -32601 || re.Err.Message != "Tool catalog unavailable" {
		t.Fatalf("err = %v", err)
	}
}

func TestNotFoundBeforeInitialisation(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, m *jsonrpc.Message) {
		http.NotFound(w, r)
	})
	c := newClient(t, Config{Name: "up", URL: f.url(), ProtocolVersion: "2025-11-25"})
	_, err := c.ListTools(context.Background(), Options{})
	var re *RPCError
	if !errors.As(err, &re) || re.Code() != jsonrpc.CodeMethodNotFound || re.Err.Message != "Not Found" {
		t.Fatalf("err = %v, want Not Found (-32601)", err)
	}
}

func TestStreamEndsEarly(t *testing.T) {
	f := legacyServer(t, "2025-11-25", func(w http.ResponseWriter, r *http.Request, m *jsonrpc.Message) {
		writeSSE(w, jsonrpc.EncodeNotification("notifications/message", json.RawMessage(`{"level":"info","data":"x"}`)))
	})
	c := newClient(t, Config{Name: "up", URL: f.url(), ProtocolVersion: "2025-11-25"})
	_, err := c.ListTools(context.Background(), Options{})
	var ce *ConnectionError
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), "SSE stream ended") {
		t.Fatalf("err = %v, want SSE stream ended", err)
	}
}

func TestEmptyEventStream(t *testing.T) {
	f := legacyServer(t, "2025-11-25", func(w http.ResponseWriter, r *http.Request, m *jsonrpc.Message) {
		writeSSE(w)
	})
	c := newClient(t, Config{Name: "up", URL: f.url(), ProtocolVersion: "2025-11-25"})
	_, err := c.ListTools(context.Background(), Options{})
	if err == nil || !strings.Contains(err.Error(), "SSE stream ended") {
		t.Fatalf("err = %v", err)
	}
}

func TestInterleavedTrafficOnStream(t *testing.T) {
	f := legacyServer(t, "2025-11-25", func(w http.ResponseWriter, r *http.Request, m *jsonrpc.Message) {
		writeSSE(w,
			jsonrpc.EncodeNotification("notifications/message", json.RawMessage(`{"level":"info","data":"hello"}`)),
			jsonrpc.EncodeRequest(jsonrpc.StringID("srv-ping"), "ping", nil),
			jsonrpc.EncodeResult(jsonrpc.IntID(999999), json.RawMessage(`{}`)),
			jsonrpc.EncodeNotification("notifications/progress", json.RawMessage(`{"progressToken":"other","progress":1}`)),
			toolsPage(m.ID, "x", "y"),
		)
	})
	var logs atomic.Int32
	c := newClient(t, Config{Name: "up", URL: f.url(), ProtocolVersion: "2025-11-25",
		OnLog: func(p json.RawMessage) {
			if strings.Contains(string(p), "hello") {
				logs.Add(1)
			}
		}})
	tools, err := c.ListTools(context.Background(), Options{})
	if err != nil || len(tools) != 2 {
		t.Fatalf("tools=%s err=%v", tools, err)
	}
	if logs.Load() != 1 {
		t.Fatalf("logging callback called %d times, want 1", logs.Load())
	}
	var answered bool
	for _, s := range f.requests() {
		answered = answered || (strings.Contains(s.Body, `"id":"srv-ping"`) && strings.Contains(s.Body, `"result":{}`) && s.Session == "s1")
	}
	if !answered {
		t.Fatal("server ping was not answered on the session")
	}
}

func TestMalformedResponses(t *testing.T) {
	cases := []struct {
		name  string
		write func(w http.ResponseWriter, m *jsonrpc.Message)
		want  string
	}{
		{"invalid json", func(w http.ResponseWriter, m *jsonrpc.Message) { writeJSON(w, 200, []byte(`{"jsonrpc":"2.0","id":`)) }, "invalid MCP response"},
		{"not jsonrpc", func(w http.ResponseWriter, m *jsonrpc.Message) { writeJSON(w, 200, []byte(`{"hello":"secret-body"}`)) }, "invalid MCP response"},
		{"wrong id", func(w http.ResponseWriter, m *jsonrpc.Message) { writeJSON(w, 200, toolsPage(jsonrpc.IntID(-1))) }, "invalid MCP response"},
		{"html", func(w http.ResponseWriter, m *jsonrpc.Message) {
			w.Header().Set("Content-Type", "text/html")
			_, _ = w.Write([]byte("<p>secret-body</p>"))
		}, "unsupported content type"},
		{"bad sse data", func(w http.ResponseWriter, m *jsonrpc.Message) { writeSSE(w, []byte(`{nope secret-body`)) }, "invalid MCP response"},
		{"tools not array", func(w http.ResponseWriter, m *jsonrpc.Message) {
			writeJSON(w, 200, jsonrpc.EncodeResult(m.ID, json.RawMessage(`{"tools":{"a":1}}`)))
		}, "invalid MCP response"},
		{"500 text", func(w http.ResponseWriter, m *jsonrpc.Message) { http.Error(w, "secret-body", 500) }, "HTTP 500"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := legacyServer(t, "2025-11-25", func(w http.ResponseWriter, r *http.Request, m *jsonrpc.Message) { tc.write(w, m) })
			c := newClient(t, Config{Name: "up", URL: f.url(), ProtocolVersion: "2025-11-25"})
			_, err := c.ListTools(context.Background(), Options{})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "secret") || strings.Contains(err.Error(), "timed out") {
				t.Fatalf("error leaks body or claims a timeout: %v", err)
			}
		})
	}
}

func TestHTTPStatusesSurface(t *testing.T) {
	for _, status := range []int{401, 403, 429, 503} {
		t.Run(fmt.Sprint(status), func(t *testing.T) {
			f := newFake(t, func(w http.ResponseWriter, r *http.Request, m *jsonrpc.Message) {
				w.Header().Set("WWW-Authenticate", `Bearer realm="x"`)
				http.Error(w, "no", status)
			})
			c := newClient(t, Config{Name: "up", URL: f.url(), ProtocolVersion: "2025-11-25"})
			_, err := c.ListTools(context.Background(), Options{})
			var se *StatusError
			if !errors.As(err, &se) || se.Status != status {
				t.Fatalf("err = %v, want HTTP %d", err, status)
			}
			if se.Challenge != `Bearer realm="x"` {
				t.Fatalf("challenge = %q", se.Challenge)
			}
		})
	}
}

func TestSessionsReusedAndKeyedByCredentials(t *testing.T) {
	f := legacyServer(t, "2025-11-25", func(w http.ResponseWriter, r *http.Request, m *jsonrpc.Message) {
		writeJSON(w, 200, toolsPage(m.ID, "a"))
	})
	c := newClient(t, Config{Name: "up", URL: f.url(), ProtocolVersion: "2025-11-25"})
	ctx := context.Background()
	alice := Options{Header: http.Header{"Authorization": {"Bearer alice"}}}
	bob := Options{Header: http.Header{"Authorization": {"Bearer bob"}}}
	for _, o := range []Options{alice, alice, bob, alice, bob} {
		if _, err := c.ListTools(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	inits := map[string]int{}
	sessionOf := map[string]string{}
	for _, s := range f.requests() {
		auth := s.Header.Get("Authorization")
		if s.Method == "initialize" {
			inits[auth]++
		}
		if s.Method == "tools/list" {
			if prev, ok := sessionOf[auth]; ok && prev != s.Session {
				t.Fatalf("%s used sessions %s and %s", auth, prev, s.Session)
			}
			sessionOf[auth] = s.Session
		}
	}
	if inits["Bearer alice"] != 1 || inits["Bearer bob"] != 1 {
		t.Fatalf("initialize counts = %v, want one per credential", inits)
	}
	if sessionOf["Bearer alice"] == sessionOf["Bearer bob"] {
		t.Fatal("two credentials shared one session")
	}
}

func TestCapabilitiesAdvertisedOnlyWithCallbacks(t *testing.T) {
	f := legacyServer(t, "2025-11-25", func(w http.ResponseWriter, r *http.Request, m *jsonrpc.Message) {
		writeJSON(w, 200, toolsPage(m.ID))
	})
	c := newClient(t, Config{Name: "up", URL: f.url(), ProtocolVersion: "2025-11-25"})
	ctx := context.Background()
	noop := func(context.Context, json.RawMessage) (json.RawMessage, error) { return json.RawMessage(`{}`), nil }
	_, _ = c.ListTools(ctx, Options{})
	_, _ = c.ListTools(ctx, Options{Interactions: &Interactions{Elicit: noop}})
	_, _ = c.ListTools(ctx, Options{Interactions: &Interactions{Elicit: noop, Sample: noop}})
	var caps []string
	for _, s := range f.requests() {
		if s.Method == "initialize" {
			var p struct {
				Capabilities json.RawMessage `json:"capabilities"`
			}
			m, _ := jsonrpc.Decode([]byte(s.Body))
			_ = json.Unmarshal(m.Params, &p)
			caps = append(caps, string(p.Capabilities))
		}
	}
	want := []string{`{}`, `{"elicitation":{"form":{},"url":{}}}`, `{"elicitation":{"form":{},"url":{}},"sampling":{}}`}
	if !slices.Equal(caps, want) {
		t.Fatalf("capabilities = %v, want %v", caps, want)
	}
}

func TestServerRequestWithoutCallbackGetsError(t *testing.T) {
	var f *fakeUpstream
	answered := func() bool {
		for _, s := range f.requests() {
			if strings.Contains(s.Body, `"id":77`) {
				return true
			}
		}
		return false
	}
	f = legacyServer(t, "2025-11-25", func(w http.ResponseWriter, r *http.Request, m *jsonrpc.Message) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(200)
		fmt.Fprintf(w, "data: %s\n\n", jsonrpc.EncodeRequest(jsonrpc.IntID(77), "elicitation/create", json.RawMessage(`{"message":"?"}`)))
		w.(http.Flusher).Flush()
		for deadline := time.Now().Add(5 * time.Second); !answered() && time.Now().Before(deadline); {
			time.Sleep(5 * time.Millisecond)
		}
		fmt.Fprintf(w, "data: %s\n\n", jsonrpc.EncodeResult(m.ID, json.RawMessage(`{"content":[]}`)))
	})
	c := newClient(t, Config{Name: "up", URL: f.url(), ProtocolVersion: "2025-11-25"})
	if _, err := c.CallTool(context.Background(), "t", json.RawMessage(`{}`), Options{}); err != nil {
		t.Fatal(err)
	}
	var errorSeen bool
	for _, s := range f.requests() {
		if strings.Contains(s.Body, `"id":77`) && strings.Contains(s.Body, `"error"`) {
			errorSeen = true
		}
	}
	if !errorSeen {
		t.Fatal("elicitation/create without a callback was not answered with an error")
	}
}

func TestElicitationRelayedToCallback(t *testing.T) {
	f := legacyServer(t, "2025-11-25", func(w http.ResponseWriter, r *http.Request, m *jsonrpc.Message) {
		if m.Kind() != jsonrpc.KindRequest {
			w.WriteHeader(202)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(200)
		fmt.Fprintf(w, "data: %s\n\n", jsonrpc.EncodeRequest(jsonrpc.IntID(5), "elicitation/create", json.RawMessage(`{"message":"name?"}`)))
		w.(http.Flusher).Flush()
		time.Sleep(100 * time.Millisecond)
		fmt.Fprintf(w, "data: %s\n\n", jsonrpc.EncodeResult(m.ID, json.RawMessage(`{"content":[{"type":"text","text":"done"}]}`)))
	})
	c := newClient(t, Config{Name: "up", URL: f.url(), ProtocolVersion: "2025-11-25"})
	got := make(chan string, 1)
	in := &Interactions{Elicit: func(_ context.Context, p json.RawMessage) (json.RawMessage, error) {
		got <- string(p)
		return json.RawMessage(`{"action":"accept","content":{"name":"Ada"}}`), nil
	}}
	if _, err := c.CallTool(context.Background(), "t", nil, Options{Interactions: in}); err != nil {
		t.Fatal(err)
	}
	if p := <-got; p != `{"message":"name?"}` {
		t.Fatalf("callback got %s", p)
	}
	var reply string
	for _, s := range f.requests() {
		if strings.Contains(s.Body, `"id":5`) {
			reply = s.Body
		}
	}
	if !strings.Contains(reply, `"action":"accept"`) || reply == "" {
		t.Fatalf("answer posted upstream = %q", reply)
	}
	for _, s := range f.requests() {
		if strings.Contains(s.Body, `"id":5`) && s.Session != "s1" {
			t.Fatalf("answer posted without the session id")
		}
	}
}

func TestModernRequestsCarryMetaAndHeaders(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, m *jsonrpc.Message) {
		switch m.Method {
		case "tools/call":
			writeJSON(w, 200, jsonrpc.EncodeResult(m.ID, json.RawMessage(`{"resultType":"input_required","inputRequests":{"ask":{"method":"elicitation/create","params":{"message":"?"}}},"requestState":"opaque"}`)))
		default:
			writeJSON(w, 200, jsonrpc.EncodeResult(m.ID, json.RawMessage(`{"resultType":"complete","supportedVersions":["2026-07-28"],"capabilities":{"tools":{}},"ttlMs":0,"cacheScope":"public"}`)))
		}
	})
	c := newClient(t, Config{Name: "up", URL: f.url(), ProtocolVersion: "2026-07-28"})
	res, err := c.CallTool(context.Background(), "Zürich tool", json.RawMessage(`{"a":1}`), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !res.InputRequired || !strings.Contains(string(res.Raw), `"requestState":"opaque"`) {
		t.Fatalf("result = %+v", res)
	}
	var call seen
	for _, s := range f.requests() {
		if s.Method == "initialize" {
			t.Fatal("modern upstream got initialize")
		}
		if s.Method == "tools/call" {
			call = s
		}
	}
	h := call.Header
	if h.Get("MCP-Protocol-Version") != "2026-07-28" || h.Get("Mcp-Method") != "tools/call" || h.Get("Mcp-Name") != "=?base64?WsO8cmljaCB0b29s?=" {
		t.Fatalf("headers = %v", h)
	}
	if h.Get("Mcp-Session-Id") != "" {
		t.Fatal("modern request carried a session id")
	}
	for _, k := range []string{`"io.modelcontextprotocol/protocolVersion":"2026-07-28"`, `"io.modelcontextprotocol/clientCapabilities":{}`, `"io.modelcontextprotocol/clientInfo"`, `"arguments":{"a":1}`} {
		if !strings.Contains(call.Body, k) {
			t.Fatalf("body %s lacks %s", call.Body, k)
		}
	}
}

func TestModernUnknownResultTypeRejected(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, m *jsonrpc.Message) {
		writeJSON(w, 200, jsonrpc.EncodeResult(m.ID, json.RawMessage(`{"resultType":"task"}`)))
	})
	c := newClient(t, Config{Name: "up", URL: f.url(), ProtocolVersion: "2026-07-28"})
	_, err := c.CallTool(context.Background(), "t", nil, Options{})
	if err == nil || !strings.Contains(err.Error(), "invalid MCP response") {
		t.Fatalf("err = %v", err)
	}
}

func TestAutoFindsModernAndRemembers(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, m *jsonrpc.Message) {
		if m.Method == "server/discover" {
			writeJSON(w, 200, jsonrpc.EncodeResult(m.ID, json.RawMessage(`{"resultType":"complete","supportedVersions":["2026-07-28","2025-11-25"],"capabilities":{"tools":{}},"ttlMs":0,"cacheScope":"public","instructions":" hi ","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"m","version":"2"}}}`)))
			return
		}
		writeJSON(w, 200, toolsPage(m.ID, "t"))
	})
	c := newClient(t, Config{Name: "up", URL: f.url()})
	for range 2 {
		if _, err := c.ListTools(context.Background(), Options{}); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := f.calls(), []string{"server/discover None", "tools/list None", "tools/list None"}; !slices.Equal(got, want) {
		t.Fatalf("requests = %v, want %v", got, want)
	}
	info, _ := c.Info(context.Background(), Options{})
	if info.ServerInfo.Name != "m" || info.Instructions != "hi" {
		t.Fatalf("info = %+v", info)
	}
}

func TestAutoReprobesWhenUpstreamChangesEra(t *testing.T) {
	var legacy atomic.Bool
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, m *jsonrpc.Message) {
		switch {
		case m.Kind() != jsonrpc.KindRequest:
			w.WriteHeader(202)
		case m.Method == "server/discover" && !legacy.Load():
			writeJSON(w, 200, jsonrpc.EncodeResult(m.ID, json.RawMessage(`{"resultType":"complete","supportedVersions":["2026-07-28"],"capabilities":{"tools":{}},"ttlMs":0,"cacheScope":"public"}`)))
		case m.Method == "server/discover":
			writeJSON(w, 200, jsonrpc.EncodeResult(m.ID, json.RawMessage(`{"supportedVersions":["2025-11-25"],"capabilities":{}}`)))
		case m.Method == "initialize":
			w.Header().Set("Mcp-Session-Id", "L1")
			writeJSON(w, 200, jsonrpc.EncodeResult(m.ID, initResult("2025-11-25")))
		case legacy.Load() && r.Header.Get("MCP-Protocol-Version") == "2026-07-28":
			writeJSON(w, 400, jsonrpc.EncodeError(m.ID, &jsonrpc.Error{Code: -32022, Message: "unsupported", Data: json.RawMessage(`{"supported":["2025-11-25"],"requested":"2026-07-28"}`)}))
		default:
			writeJSON(w, 200, toolsPage(m.ID, "t"))
		}
	})
	c := newClient(t, Config{Name: "up", URL: f.url()})
	ctx := context.Background()
	if _, err := c.ListTools(ctx, Options{}); err != nil {
		t.Fatal(err)
	}
	legacy.Store(true) // the upstream was redeployed as a legacy server
	if _, err := c.ListTools(ctx, Options{}); err != nil {
		t.Fatalf("after the era change: %v", err)
	}
	want := []string{"server/discover None", "tools/list None", "tools/list None", "server/discover None", "initialize None", "tools/list L1"}
	if got := f.calls(); !slices.Equal(got, want) {
		t.Fatalf("requests = %v, want %v", got, want)
	}
}

func TestOptionalListsFollowCapabilities(t *testing.T) {
	f := legacyServer(t, "2025-11-25", func(w http.ResponseWriter, r *http.Request, m *jsonrpc.Message) {
		t.Errorf("unexpected %s: capability was not advertised", m.Method)
		writeJSON(w, 200, jsonrpc.EncodeResult(m.ID, json.RawMessage(`{}`)))
	})
	c := newClient(t, Config{Name: "up", URL: f.url(), ProtocolVersion: "2025-11-25"})
	ctx := context.Background()
	for _, list := range []func(context.Context, Options) ([]json.RawMessage, error){c.ListPrompts, c.ListResources, c.ListResourceTemplates} {
		items, err := list(ctx, Options{})
		if err != nil || items != nil {
			t.Fatalf("items=%v err=%v", items, err)
		}
	}
}

func TestOptionalListMethodNotFoundMeansNone(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, m *jsonrpc.Message) {
		switch {
		case m.Kind() != jsonrpc.KindRequest:
			w.WriteHeader(202)
		case m.Method == "initialize":
			writeJSON(w, 200, jsonrpc.EncodeResult(m.ID, json.RawMessage(`{"protocolVersion":"2025-11-25","capabilities":{"prompts":{}},"serverInfo":{"name":"f","version":"1"}}`)))
		case m.Method == "prompts/list":
			writeJSON(w, 200, jsonrpc.EncodeError(m.ID, &jsonrpc.Error{Code: -32601, Message: "no"}))
		default:
			writeJSON(w, 200, jsonrpc.EncodeError(m.ID, &jsonrpc.Error{Code: -32603, Message: "boom"}))
		}
	})
	c := newClient(t, Config{Name: "up", URL: f.url(), ProtocolVersion: "2025-11-25"})
	items, err := c.ListPrompts(context.Background(), Options{})
	if err != nil || items != nil {
		t.Fatalf("items=%v err=%v", items, err)
	}
	if _, err := c.ListTools(context.Background(), Options{}); err == nil {
		t.Fatal("a -32603 on tools/list was not an error")
	}
}

func TestPagingWalk(t *testing.T) {
	pages := map[string]string{
		"":                    `{"tools":[{"name":"a"}],"nextCursor":"opaque:/second+page"}`,
		"opaque:/second+page": `{"tools":[],"nextCursor":"3"}`,
		"3":                   `{"tools":[{"name":"b"}],"nextCursor":""}`,
	}
	f := legacyServer(t, "2025-11-25", func(w http.ResponseWriter, r *http.Request, m *jsonrpc.Message) {
		var p struct {
			Cursor string `json:"cursor"`
		}
		_ = json.Unmarshal(m.Params, &p)
		writeJSON(w, 200, jsonrpc.EncodeResult(m.ID, json.RawMessage(pages[p.Cursor])))
	})
	c := newClient(t, Config{Name: "up", URL: f.url(), ProtocolVersion: "2025-11-25"})
	tools, err := c.ListTools(context.Background(), Options{})
	if err != nil || len(tools) != 2 {
		t.Fatalf("tools=%s err=%v", tools, err)
	}
	var cursors []string
	for _, s := range f.requests() {
		if s.Method == "tools/list" {
			m, _ := jsonrpc.Decode([]byte(s.Body))
			cursors = append(cursors, string(m.Params))
		}
	}
	if want := []string{`{}`, `{"cursor":"opaque:/second+page"}`, `{"cursor":"3"}`}; !slices.Equal(cursors, want) {
		t.Fatalf("cursors sent = %v, want %v", cursors, want)
	}
}

func TestPagingCycleFails(t *testing.T) {
	f := legacyServer(t, "2025-11-25", func(w http.ResponseWriter, r *http.Request, m *jsonrpc.Message) {
		next := "1"
		if strings.Contains(string(m.Params), `"1"`) {
			next = "2"
		}
		writeJSON(w, 200, jsonrpc.EncodeResult(m.ID, json.RawMessage(`{"tools":[{"name":"x"}],"nextCursor":"`+next+`"}`)))
	})
	c := newClient(t, Config{Name: "up", URL: f.url(), ProtocolVersion: "2025-11-25", MaxPages: 10})
	tools, err := c.ListTools(context.Background(), Options{})
	if !errors.Is(err, ErrIncompleteList) || tools != nil {
		t.Fatalf("tools=%v err=%v", tools, err)
	}
}

func TestProbeRetriesWhenTheUpstreamNamesOurModernRevision(t *testing.T) {
	var discovers atomic.Int32
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, m *jsonrpc.Message) {
		if m.Method == "server/discover" && discovers.Add(1) == 1 {
			writeJSON(w, 400, jsonrpc.EncodeError(m.ID, &jsonrpc.Error{Code: -32022, Message: "try again", Data: json.RawMessage(`{"supported":["2026-07-28"],"requested":"2026-07-28"}`)}))
			return
		}
		if m.Method == "server/discover" {
			writeJSON(w, 200, jsonrpc.EncodeResult(m.ID, json.RawMessage(`{"resultType":"complete","supportedVersions":["2026-07-28"],"capabilities":{"tools":{}},"ttlMs":0,"cacheScope":"public"}`)))
			return
		}
		writeJSON(w, 200, toolsPage(m.ID, "t"))
	})
	c := newClient(t, Config{Name: "up", URL: f.url()})
	if _, err := c.ListTools(context.Background(), Options{}); err != nil {
		t.Fatal(err)
	}
	if got, want := f.calls(), []string{"server/discover None", "server/discover None", "tools/list None"}; !slices.Equal(got, want) {
		t.Fatalf("requests = %v, want %v", got, want)
	}
}

func TestLegacySSEEndpointOnAnotherOriginRefused(t *testing.T) {
	other := newFake(t, func(w http.ResponseWriter, r *http.Request, m *jsonrpc.Message) {
		t.Error("the other origin was contacted")
	})
	f := newFake(t, nil)
	f.srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(200)
		fmt.Fprintf(w, "event: endpoint\ndata: %s/messages?s=1\n\n", other.srv.URL)
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	})
	c := newClient(t, Config{Name: "up", Transport: TransportSSE, URL: f.srv.URL + "/sse"})
	_, err := c.ListTools(context.Background(), Options{})
	if err == nil || !strings.Contains(err.Error(), "another origin") {
		t.Fatalf("err = %v", err)
	}
}

func TestStreamedAnswersReuseConnections(t *testing.T) {
	f := legacyServer(t, "2025-11-25", func(w http.ResponseWriter, r *http.Request, m *jsonrpc.Message) {
		writeSSE(w, toolsPage(m.ID, "a"))
		time.Sleep(5 * time.Millisecond) // the stream's end comes a little after the answer
	})
	counted, conns := countedConns(t, f)
	c := newClient(t, Config{Name: "up", URL: counted.url(), ProtocolVersion: "2025-11-25"})
	for range 20 {
		if _, err := c.ListTools(context.Background(), Options{}); err != nil {
			t.Fatal(err)
		}
	}
	if n := conns.Load(); n > 3 {
		t.Fatalf("%d connections for 20 sequential streamed answers: answers cut short are not reused", n)
	}
}

// countedConns serves f's handler on a server that counts its
// connections (counted before it starts).
func countedConns(t *testing.T, f *fakeUpstream) (*fakeUpstream, *atomic.Int32) {
	conns := new(atomic.Int32)
	counted := &fakeUpstream{t: t, next: f.next}
	counted.srv = httptest.NewUnstartedServer(http.HandlerFunc(counted.serve))
	counted.srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	counted.srv.Start()
	t.Cleanup(counted.srv.Close)
	return counted, conns
}

// FuzzSessionRefusal feeds arbitrary error bodies to the parser that
// decides whether an error answer names the session: it never panics, only
// a JSON body is relayed as a JSON-RPC error, and a plain-text body counts
// as a session refusal only when it mentions the session.
func FuzzSessionRefusal(f *testing.F) {
	f.Add("application/json", `{"jsonrpc":"2.0","error":{"code":-32000,"message":"Bad Request: No valid session ID provided"},"id":null}`)
	f.Add("application/json", `{"jsonrpc":"2.0","error":{"code":-32000,"message":"Bad Request: No valid session ID provided"}}`)
	f.Add("text/plain; charset=utf-8", "session not found\n")
	f.Add("application/json", `{"error":null}`)
	f.Add("text/html", "<h1>session</h1>")
	f.Fuzz(func(t *testing.T, ctype, body string) {
		tr := &httpTransport{env: &env{}}
		resp := &http.Response{Header: http.Header{"Content-Type": {ctype}}, Body: io.NopCloser(strings.NewReader(body))}
		rpc, about := tr.errorBody(resp)
		mt := mediaType(resp)
		if mt != "application/json" && rpc != nil {
			t.Fatalf("a %q body was relayed as a JSON-RPC error", mt)
		}
		if about && mt == "text/plain" && !strings.Contains(strings.ToLower(body), "session") {
			t.Fatal("a body that does not mention the session was taken for a session refusal")
		}
		if about && mt != "text/plain" && mt != "application/json" {
			t.Fatalf("a %q body was read", mt)
		}
	})
}

// A streamed answer's end is waited for with the connection's read
// deadline: a connection reused later must not carry it (a call after the
// deadline would fail on it, and be sent again on a new connection), and a
// stream held open past its answer is cut after streamEndGrace, not waited
// out.
func TestStreamEndDeadlineIsCleared(t *testing.T) {
	var hold atomic.Bool
	f := legacyServer(t, "2025-11-25", func(w http.ResponseWriter, r *http.Request, m *jsonrpc.Message) {
		writeSSE(w, jsonrpc.EncodeResult(m.ID, json.RawMessage(`{"content":[]}`)))
		if hold.Load() {
			select { // held open well past streamEndGrace
			case <-r.Context().Done():
			case <-time.After(5 * time.Second):
			}
			return
		}
		time.Sleep(2 * time.Millisecond) // the stream's end comes a little after the answer
	})
	counted, conns := countedConns(t, f)
	c := newClient(t, Config{Name: "up", URL: counted.url(), ProtocolVersion: "2025-11-25"})
	call := func() error {
		_, err := c.Call(context.Background(), "tools/call", json.RawMessage(`{"name":"x","arguments":{}}`), Options{})
		return err
	}
	for i := range 6 {
		if err := call(); err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
		time.Sleep(2 * streamEndGrace) // past any deadline the last drain set
	}
	if n := conns.Load(); n > 3 {
		t.Fatalf("%d connections for 6 sequential streamed answers: a reused connection kept its deadline", n)
	}
	hold.Store(true)
	start := time.Now()
	if err := call(); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("a stream held open past its answer took %v", d)
	}
	hold.Store(false)
	if err := call(); err != nil {
		t.Fatalf("after a cut stream: %v", err)
	}
}
