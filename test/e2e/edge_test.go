package e2e

import (
	"bufio"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// The tests in this file attack the server `mcpgw serve` builds, over raw
// sockets: what a stranger without a key can make it hold, and what every
// route checks before any handler runs.

// deadUpstream is an upstream URL nothing listens on.
const deadUpstream = "http://127.0.0.1:1/mcp"

// edgeConfig is a gateway with the master key and two dead upstreams, plus
// the general_settings lines in extra.
func edgeConfig(extra string) string {
	return "general_settings:\n  master_key: " + testKey + "\n" + extra +
		"mcp_servers:\n  one:\n    url: " + deadUpstream + "\n  two:\n    url: " + deadUpstream + "\n"
}

// dial opens a raw connection that the test closes.
func dial(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// readResponse reads one response from c within d.
func readResponse(c net.Conn, br *bufio.Reader, d time.Duration) (*http.Response, string, error) {
	_ = c.SetReadDeadline(time.Now().Add(d))
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		return nil, "", err
	}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	resp.Body.Close()
	return resp, string(b), nil
}

// bigPost is the head of a POST announcing a 100 MB body.
func bigPost(path, addr string, headers ...string) string {
	return "POST " + path + " HTTP/1.1\r\nHost: " + addr + "\r\nContent-Type: application/json\r\n" +
		strings.Join(headers, "") + "Content-Length: 104857600\r\n\r\n"
}

// TestNoCredentialCostsNoBodyRead: a caller without a valid key announcing
// a 100 MB body is refused with 401 from its headers alone, before sending
// a byte of it, on every route that takes a body.
func TestNoCredentialCostsNoBodyRead(t *testing.T) {
	addr := serveEdge(t, edgeConfig(""), nil)
	cases := []struct{ name, path, auth string }{
		{"no key", "/mcp", ""},
		{"wrong key", "/mcp", "Authorization: Bearer sk-wrong-key-0000000000\r\n"},
		{"wrong x-litellm-api-key", "/mcp", "x-litellm-api-key: sk-wrong-key-0000000000\r\n"},
		{"scoped, unknown server", "/nosuch/mcp", ""},
		{"scoped, known server", "/one/mcp", ""},
		{"REST call", "/mcp-rest/tools/call", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := dial(t, addr)
			if _, err := io.WriteString(c, bigPost(tc.path, addr, tc.auth)); err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			resp, _, err := readResponse(c, bufio.NewReader(c), 3*time.Second)
			if err != nil {
				t.Fatalf("no answer to a keyless 100 MB POST without its body: %v", err)
			}
			if resp.StatusCode != http.StatusUnauthorized {
				t.Fatalf("status %d, want 401", resp.StatusCode)
			}
			if el := time.Since(start); el > 2*time.Second {
				t.Fatalf("answered after %v", el)
			}
		})
	}
}

// TestWebhookDecidesFromHeaders: with custom_auth, the webhook is asked
// from the headers (method from Mcp-Method, else the route) before any body
// is read, and its refusal costs no body read either.
func TestWebhookDecidesFromHeaders(t *testing.T) {
	methods := make(chan string, 10)
	hook := newHTTPServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var in struct {
			Method string `json:"method"`
		}
		_ = json.NewDecoder(r.Body).Decode(&in)
		methods <- in.Method
		w.WriteHeader(http.StatusUnauthorized)
	}))
	addr := serveEdge(t, edgeConfig("  custom_auth: "+hook+"\n"), nil)
	// Each case has its own key: a refused key is remembered for a few
	// seconds, and the webhook is not asked again for it.
	for _, tc := range []struct{ name, key, header, want string }{
		{"Mcp-Method names the method", "sk-someone-else-000001", "Mcp-Method: tools/list\r\n", "tools/list"},
		{"without Mcp-Method, the route", "sk-someone-else-000002", "", "/mcp"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := dial(t, addr)
			_, _ = io.WriteString(c, bigPost("/mcp", addr, "Authorization: Bearer "+tc.key+"\r\n", tc.header))
			resp, _, err := readResponse(c, bufio.NewReader(c), 3*time.Second)
			if err != nil {
				t.Fatalf("no answer before the body: %v", err)
			}
			if resp.StatusCode != http.StatusUnauthorized {
				t.Fatalf("status %d, want 401", resp.StatusCode)
			}
			select {
			case m := <-methods:
				if m != tc.want {
					t.Fatalf("webhook method %q, want %q", m, tc.want)
				}
			default:
				t.Fatal("the webhook was not asked")
			}
		})
	}
}

// TestMcpMethodBindsTheBody: the webhook decides from the Mcp-Method
// header, so a body with another method is refused in either era: a caller
// cannot be authorised for tools/list and run tools/call.
func TestMcpMethodBindsTheBody(t *testing.T) {
	hook := newHTTPServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, `{"user_id":"alice"}`)
	}))
	addr := serveEdge(t, edgeConfig("  custom_auth: "+hook+"\n"), nil)
	const key = "sk-alice-000000000000"
	legacy := legacyHeaders(key, initLegacy(t, "http://"+addr+"/mcp", key))
	legacy["Mcp-Method"] = "tools/list"
	for _, tc := range []struct {
		name string
		hdr  map[string]string
	}{
		{"legacy session", legacy},
		{"modern", map[string]string{"Authorization": "Bearer " + key, "Mcp-Method": "tools/list", "MCP-Protocol-Version": "2026-07-28"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"one-x","arguments":{}}}`
			if tc.name == "modern" {
				body = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"one-x","arguments":{},` + modernMeta + `}}`
			}
			status, _, out := rpc(t, "http://"+addr+"/mcp", tc.hdr, body)
			if status != http.StatusBadRequest || errCode(out) != -32020 {
				t.Fatalf("status %d, error %v; want 400 -32020", status, out["error"])
			}
		})
	}
}

// newHTTPServer serves h on loopback until the test ends and returns its URL.
func newHTTPServer(t *testing.T, h http.Handler) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return "http://" + ln.Addr().String()
}

// TestTrickledBodyIsCut: a body sent one byte at a time is cut once
// http_read_timeout has passed, whoever sends it.
func TestTrickledBodyIsCut(t *testing.T) {
	addr := serveEdge(t, edgeConfig("  http_read_timeout: 1\n"), nil)
	c := dial(t, addr)
	head := "POST /mcp HTTP/1.1\r\nHost: " + addr + "\r\nAuthorization: Bearer " + testKey +
		"\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n"
	if _, err := io.WriteString(c, head); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	trickled := make(chan struct{})
	go func() {
		defer close(trickled)
		for {
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Millisecond):
				_ = c.SetWriteDeadline(time.Now().Add(time.Second))
				if _, err := c.Write([]byte(" ")); err != nil {
					return
				}
			}
		}
	}()
	defer func() { close(stop); <-trickled }()
	start := time.Now()
	resp, _, err := readResponse(c, bufio.NewReader(c), 4*time.Second)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("a trickled body was still being read after %v", time.Since(start))
	}
	if err == nil && resp.StatusCode < 400 {
		t.Fatalf("status %d for a trickled body", resp.StatusCode)
	}
	if el := time.Since(start); el > 3*time.Second {
		t.Fatalf("cut after %v, want about 1s", el)
	}
}

// TestIdleKeepAliveIsClosed: a keep-alive connection left idle is closed
// after http_idle_timeout.
func TestIdleKeepAliveIsClosed(t *testing.T) {
	addr := serveEdge(t, edgeConfig("  http_idle_timeout: 1\n"), nil)
	c := dial(t, addr)
	br := bufio.NewReader(c)
	_, _ = io.WriteString(c, "GET /health/liveliness HTTP/1.1\r\nHost: "+addr+"\r\n\r\n")
	if resp, _, err := readResponse(c, br, 3*time.Second); err != nil || resp.StatusCode != 200 {
		t.Fatalf("liveliness: %v %v", resp, err)
	}
	start := time.Now()
	_ = c.SetReadDeadline(time.Now().Add(4 * time.Second))
	_, err := br.ReadByte()
	if !errors.Is(err, io.EOF) {
		t.Fatalf("idle keep-alive connection after %v: %v, want it closed", time.Since(start), err)
	}
}

// TestMaxHeaderBytes: a header block beyond http_max_header_bytes is
// refused with 431 before any handler runs.
func TestMaxHeaderBytes(t *testing.T) {
	addr := serveEdge(t, edgeConfig("  http_max_header_bytes: 4096\n"), nil)
	c := dial(t, addr)
	_, _ = io.WriteString(c, "GET /health/liveliness HTTP/1.1\r\nHost: "+addr+"\r\nX-Filler: "+strings.Repeat("a", 20000)+"\r\n\r\n")
	resp, _, err := readResponse(c, bufio.NewReader(c), 3*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Fatalf("status %d, want 431", resp.StatusCode)
	}
}

// TestMaxConnections: connections beyond max_connections are refused at
// once; a freed place is reused.
func TestMaxConnections(t *testing.T) {
	addr := serveEdge(t, edgeConfig("  max_connections: 2\n"), nil)
	first := dial(t, addr)
	dial(t, addr)
	time.Sleep(100 * time.Millisecond) // both accepted
	get := func() (int, error) {
		c := dial(t, addr)
		defer c.Close()
		_, _ = io.WriteString(c, "GET /health/liveliness HTTP/1.1\r\nHost: "+addr+"\r\nConnection: close\r\n\r\n")
		resp, _, err := readResponse(c, bufio.NewReader(c), 3*time.Second)
		if err != nil {
			return 0, err
		}
		return resp.StatusCode, nil
	}
	if status, err := get(); err == nil && status != http.StatusServiceUnavailable {
		t.Fatalf("third connection got %d, want 503 or a closed connection", status)
	}
	first.Close()
	deadline := time.Now().Add(3 * time.Second)
	for {
		status, err := get()
		if err == nil && status == 200 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a freed place was not reused: %d %v", status, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestMaxInflightRequests: beyond max_inflight_requests a request is
// answered 503 with Retry-After instead of waiting.
func TestMaxInflightRequests(t *testing.T) {
	addr := serveEdge(t, edgeConfig("  max_inflight_requests: 1\n"), nil)
	slow := dial(t, addr)
	_, _ = io.WriteString(slow, "POST /mcp HTTP/1.1\r\nHost: "+addr+"\r\nAuthorization: Bearer "+testKey+
		"\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{")
	time.Sleep(200 * time.Millisecond) // its handler is reading the body
	c := dial(t, addr)
	_, _ = io.WriteString(c, "POST /mcp HTTP/1.1\r\nHost: "+addr+"\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}")
	resp, _, err := readResponse(c, bufio.NewReader(c), 3*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("status %d (Retry-After %q), want 503 with Retry-After", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	slow.Close()
}

// TestScopedRouteNeedsKeyFirst: without a valid key, /{server}/mcp answers
// 401 whether the server exists or not; with one, an unknown server is 404.
func TestScopedRouteNeedsKeyFirst(t *testing.T) {
	addr := serveEdge(t, edgeConfig(""), nil)
	for _, tc := range []struct {
		name, method, path, key string
		want                    int
	}{
		{"POST unknown server, no key", http.MethodPost, "/nosuch/mcp", "", 401},
		{"POST known server, no key", http.MethodPost, "/one/mcp", "", 401},
		{"POST unknown server, wrong key", http.MethodPost, "/nosuch/mcp", "sk-wrong-key-0000000000", 401},
		{"GET unknown server, no key", http.MethodGet, "/nosuch/mcp", "", 401},
		{"DELETE unknown server, no key", http.MethodDelete, "/nosuch/mcp", "", 401},
		{"POST unknown server, valid key", http.MethodPost, "/nosuch/mcp", testKey, 404},
		{"GET unknown server, valid key", http.MethodGet, "/nosuch/mcp", testKey, 404},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(tc.method, "http://"+addr+tc.path, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			req.Header.Set("Mcp-Session-Id", "forged")
			if tc.key != "" {
				req.Header.Set("Authorization", "Bearer "+tc.key)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tc.want {
				t.Fatalf("status %d, want %d", resp.StatusCode, tc.want)
			}
		})
	}
}

// TestRepeatedMCPHeadersRefused: a second copy of an MCP header is refused
// with 400, so no check can read one copy while an upstream acts on another.
func TestRepeatedMCPHeadersRefused(t *testing.T) {
	addr := serveEdge(t, edgeConfig(""), nil)
	list := `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{` + modernMeta + `}}`
	call := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"one-x","arguments":{},` + modernMeta + `}}`
	for _, tc := range []struct {
		name  string
		body  string
		extra [][2]string // added after the modern headers
	}{
		{"Mcp-Method twice", list, [][2]string{{"Mcp-Method", "tools/call"}}},
		{"Mcp-Method same value twice", list, [][2]string{{"Mcp-Method", "tools/list"}}},
		{"MCP-Protocol-Version twice", list, [][2]string{{"MCP-Protocol-Version", "2025-11-25"}}},
		{"Mcp-Name twice", call, [][2]string{{"Mcp-Name", "one-x"}, {"Mcp-Name", "two-x"}}},
		{"Mcp-Session-Id twice", list, [][2]string{{"Mcp-Session-Id", "a"}, {"Mcp-Session-Id", "b"}}},
		{"Mcp-Param twice", call, [][2]string{{"Mcp-Name", "one-x"}, {"Mcp-Param-Region", "eu"}, {"Mcp-Param-Region", "us"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/mcp", strings.NewReader(tc.body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			req.Header.Set("Authorization", "Bearer "+testKey)
			req.Header.Set("MCP-Protocol-Version", "2026-07-28")
			var m map[string]any
			_ = json.Unmarshal([]byte(tc.body), &m)
			req.Header.Set("Mcp-Method", m["method"].(string))
			for _, kv := range tc.extra {
				req.Header.Add(kv[0], kv[1])
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var out map[string]any
			_ = json.NewDecoder(resp.Body).Decode(&out)
			if resp.StatusCode != http.StatusBadRequest || errCode(out) != -32020 {
				t.Fatalf("status %d, error %v; want 400 -32020", resp.StatusCode, out["error"])
			}
		})
	}
}

// TestGuardCoversEveryRoute: a DNS-rebinding request (a foreign Host on a
// loopback listener, or a foreign Origin) is refused on every route, REST
// and health included; a cross-site text/plain POST cannot run a tool; the
// configured extra hosts and origins are served.
func TestGuardCoversEveryRoute(t *testing.T) {
	addr := serveEdge(t, "general_settings:\n  allowed_hosts: [gw.example.com]\n  allowed_origins: [\"https://app.example.com\"]\n"+
		"mcp_servers:\n  one:\n    url: "+deadUpstream+"\n", map[string]string{"LITELLM_DANGEROUSLY_PERMIT_WEAK_OR_UNSET_MASTER_KEY": "true"})
	call := `{"server_id":"one","name":"x","arguments":{}}`
	do := func(method, path, host, origin, ctype, body string) int {
		t.Helper()
		req, _ := http.NewRequest(method, "http://"+addr+path, strings.NewReader(body))
		req.Host = host
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		if ctype != "" {
			req.Header.Set("Content-Type", ctype)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	routes := []struct{ method, path, ctype, body string }{
		{http.MethodPost, "/mcp-rest/tools/call", "application/json", call},
		{http.MethodGet, "/mcp-rest/tools/list", "", ""},
		{http.MethodGet, "/health/liveliness", "", ""},
		{http.MethodGet, "/health/readiness", "", ""},
		{http.MethodPost, "/mcp", "application/json", `{"jsonrpc":"2.0","id":1,"method":"ping"}`},
		{http.MethodPost, "/one/mcp", "application/json", `{"jsonrpc":"2.0","id":1,"method":"ping"}`},
		{http.MethodGet, "/mcp/sse", "", ""},
		{http.MethodPost, "/mcp/sse/messages?session_id=x", "application/json", `{}`},
		{http.MethodGet, "/no/such/route", "", ""},
	}
	for _, r := range routes {
		if got := do(r.method, r.path, "evil.example", "", r.ctype, r.body); got != http.StatusForbidden {
			t.Errorf("%s %s with a rebinding Host: %d, want 403", r.method, r.path, got)
		}
		if got := do(r.method, r.path, addr, "http://evil.example", r.ctype, r.body); got != http.StatusForbidden {
			t.Errorf("%s %s with a foreign Origin: %d, want 403", r.method, r.path, got)
		}
	}
	for _, ctype := range []string{"text/plain", "text/plain;charset=UTF-8", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", ""} {
		if got := do(http.MethodPost, "/mcp-rest/tools/call", addr, "", ctype, call); got != http.StatusUnsupportedMediaType {
			t.Errorf("REST call with Content-Type %q: %d, want 415", ctype, got)
		}
	}
	if got := do(http.MethodGet, "/health/liveliness", "gw.example.com", "", "", ""); got != 200 {
		t.Errorf("allowed host: %d, want 200", got)
	}
	if got := do(http.MethodGet, "/health/liveliness", "gw.example.com", "https://app.example.com", "", ""); got != 200 {
		t.Errorf("allowed origin: %d, want 200", got)
	}
	if got := do(http.MethodGet, "/health/liveliness", "127.0.0.1", "https://gw.example.com", "", ""); got != 200 {
		t.Errorf("origin naming an allowed host: %d, want 200", got)
	}
}

// TestRoutesPreferNames: a later server's server_id or alias never takes
// over an earlier server's name, on /{server}/mcp and in REST server_id.
func TestRoutesPreferNames(t *testing.T) {
	addr := serveEdge(t, "general_settings:\n  master_key: "+testKey+"\nmcp_servers:\n"+
		"  b:\n    url: "+deadUpstream+"\n    server_id: bid\n"+
		"  a:\n    url: "+deadUpstream+"\n    server_id: b\n"+
		"  c:\n    url: "+deadUpstream+"\n    alias: bid\n", nil)
	for key, want := range map[string]string{"b": "b", "bid": "b", "c": "c", "a": "a"} {
		req, _ := http.NewRequest(http.MethodGet, "http://"+addr+"/mcp-rest/tools/list?server_id="+key, nil)
		req.Header.Set("Authorization", "Bearer "+testKey)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var out struct {
			Outcomes map[string]json.RawMessage `json:"server_outcomes"`
		}
		_ = json.NewDecoder(resp.Body).Decode(&out)
		resp.Body.Close()
		if _, ok := out.Outcomes[want]; !ok || len(out.Outcomes) != 1 {
			t.Errorf("server_id=%s reached %v, want %s", key, keys(out.Outcomes), want)
		}
	}
	for seg, want := range map[string]string{"b": "b", "bid": "b"} {
		status, _, body := rpc(t, "http://"+addr+"/"+seg+"/mcp", modernHeaders("tools/list", ""), `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{`+modernMeta+`}}`)
		res, _ := body["result"].(map[string]any)
		meta, _ := res["_meta"].(map[string]any)
		outcomes, _ := meta["litellm.ai/server_outcomes"].(map[string]any)
		if _, ok := outcomes[want]; status != 200 || !ok || len(outcomes) != 1 {
			t.Errorf("/%s/mcp reached %v (status %d), want %s", seg, outcomes, status, want)
		}
	}
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
