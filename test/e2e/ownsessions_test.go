package e2e

import (
	"context"
	"testing"
)

// countSent counts the messages of method the upstream was sent.
func countSent(tap *wireTap, method string) int {
	n := 0
	for _, m := range tap.sent() {
		if m["method"] == method {
			n++
		}
	}
	return n
}

// Legacy callers that keep no state upstream (no roots, elicitation or
// sampling declared, no log level set) share the upstream session of their
// credentials: a stranger holding one key must not get a stdio child
// process (or an HTTP session) per downstream session, and the 17th such
// caller must not be refused because 16 processes are held. A caller that
// sets a log level gets a session of its own, which the setLevel goes to.
func TestStatelessLegacyCallersShareUpstreamSession(t *testing.T) {
	gw, taps := everythingTaps(t, "")
	for _, server := range []string{"stdio", "http"} {
		t.Run(server, func(t *testing.T) { // not in parallel: a setLevel reaches every server
			tap := taps[server]
			call := func(sid string) {
				t.Helper()
				status, _, body := rpc(t, gw.url+"/mcp", legacyHeaders(testKey, sid), `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"`+server+`-echo","arguments":{"message":"hi"}}}`)
				if status != 200 || body["result"] == nil {
					t.Fatalf("echo: %d %v", status, body)
				}
			}
			call(initLegacy(t, gw.url+"/mcp", testKey))
			before := countSent(tap, "initialize")
			for range 4 {
				call(initLegacy(t, gw.url+"/mcp", testKey))
			}
			if got := countSent(tap, "initialize") - before; got != 0 {
				t.Fatalf("4 more stateless legacy callers opened %d upstream sessions; want them to share one", got)
			}
			own := initLegacy(t, gw.url+"/mcp", testKey)
			status, _, body := rpc(t, gw.url+"/mcp", legacyHeaders(testKey, own), `{"jsonrpc":"2.0","id":2,"method":"logging/setLevel","params":{"level":"error"}}`)
			if status != 200 || body["result"] == nil {
				t.Fatalf("setLevel: %d %v", status, body)
			}
			call(own)
			if got := countSent(tap, "initialize") - before; got != 1 {
				t.Fatalf("a caller that set its log level opened %d upstream sessions; want one of its own", got)
			}
		})
	}
}

// Each /mcp/sse connection is a session of its own: two connections that
// keep state upstream (here a log level) must not share one upstream
// session, where one's level (or roots, or elicitation) would reach the other.
func TestSSEConnectionsGetTheirOwnUpstreamSessions(t *testing.T) {
	gw, taps := everythingTaps(t, "")
	for _, server := range []string{"stdio", "http"} {
		t.Run(server, func(t *testing.T) { // not in parallel: a setLevel reaches every server
			tap := taps[server]
			var eps []string
			var logs []*streamLog
			for range 2 {
				s, ep := openSSESessionCaps(t, gw.url, `{}`)
				logs, eps = append(logs, s), append(eps, ep)
			}
			hdr := map[string]string{"Authorization": "Bearer " + testKey}
			post := func(i int, body string) {
				r := postRaw(t, context.Background(), eps[i], hdr, "application/json", body)
				r.Body.Close()
				if r.StatusCode != 202 {
					t.Fatalf("POST: %d", r.StatusCode)
				}
			}
			for i := range 2 {
				post(i, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"`+server+`-echo","arguments":{"message":"hi"}}}`)
				logs[i].answer(t, 1)
			}
			before := countSent(tap, "initialize")
			for i := range 2 {
				post(i, `{"jsonrpc":"2.0","id":2,"method":"logging/setLevel","params":{"level":"error"}}`)
				logs[i].answer(t, 2)
				post(i, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"`+server+`-echo","arguments":{"message":"hi"}}}`)
				if a := logs[i].answer(t, 3); a["result"] == nil {
					t.Fatalf("echo on connection %d: %v", i, a)
				}
			}
			if got := countSent(tap, "initialize") - before; got != 2 {
				t.Fatalf("two /mcp/sse connections that set a log level opened %d upstream sessions; want one each", got)
			}
		})
	}
}
