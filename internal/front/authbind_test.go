package front

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/mcpgw/mcpgw/internal/fakemcp"
	"github.com/mcpgw/mcpgw/internal/jsonrpc"
	"github.com/mcpgw/mcpgw/internal/mcp"
)

// methodWebhook admits any key, but only for the methods allowed; it
// records what it was told (method, path, and the Mcp-* headers it saw).
func methodWebhook(t *testing.T, allowed ...string) (url string, seen func() []string) {
	var mu sync.Mutex
	var log []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var in struct {
			Method  string            `json:"method"`
			Path    string            `json:"path"`
			Headers map[string]string `json:"headers"`
		}
		b, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(b, &in)
		mu.Lock()
		log = append(log, in.Method+" "+in.Path+" name="+in.Headers["mcp-name"]+" hm="+in.Headers["mcp-method"])
		mu.Unlock()
		for _, m := range allowed {
			if in.Method == m {
				w.Header().Set("Content-Type", "application/json")
				_, _ = io.WriteString(w, `{"user_id":"u-`+m+`"}`)
				return
			}
		}
		http.Error(w, "method not allowed for this key", http.StatusForbidden)
	}))
	t.Cleanup(srv.Close)
	return srv.URL, func() []string { mu.Lock(); defer mu.Unlock(); return append([]string(nil), log...) }
}

// Attack: a key the webhook admits only for tools/list claims
// "Mcp-Method: tools/list" on a route that never checks the header against
// what it does (REST tools/call), and runs a tool.
func TestMcpMethodHeaderDoesNotSwayAuthOnUnboundRoutes(t *testing.T) {
	fake := fakemcp.New(t, fakemcp.Opts{Lists: map[string][]json.RawMessage{mcp.MethodToolsList: fakemcp.Tools("echo")}})
	hook, seen := methodWebhook(t, mcp.MethodToolsList, "/mcp-rest/tools/list")
	f := newTestFront(t, frontSpec{webhook: hook, ups: []upSpec{{name: "fs", fake: fake}}})
	call := `{"server_id":"fs","name":"echo","arguments":{}}`

	cases := []struct {
		name string
		hdr  map[string]string
	}{
		{"no Mcp-Method", map[string]string{"x-litellm-api-key": "sk-u"}},
		{"Mcp-Method claims tools/list", map[string]string{"x-litellm-api-key": "sk-u", "Mcp-Method": "tools/list"}},
		{"Mcp-Method and Mcp-Name", map[string]string{"x-litellm-api-key": "sk-u", "Mcp-Method": "tools/list", "Mcp-Name": "x"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := post(t, f.url+"/mcp-rest/tools/call", tc.hdr, call)
			if resp.StatusCode != http.StatusForbidden {
				t.Fatalf("REST tools/call with a tools/list-only key: %d %s, want 403", resp.StatusCode, body)
			}
		})
	}
	if n := fake.Count(mcp.MethodToolsCall); n != 0 {
		t.Fatalf("the tool ran upstream %d times", n)
	}
	for _, s := range seen() {
		if strings.HasPrefix(s, "tools/list /mcp-rest/tools/call") || strings.Contains(s, "hm=tools/list") || strings.Contains(s, "name=x") {
			t.Fatalf("the webhook was told a method or name nothing binds: %q", s)
		}
	}
	// The GET routes that read no message are told their route too.
	req, _ := http.NewRequest(http.MethodGet, f.url+"/mcp/sse", nil)
	req.Header.Set("x-litellm-api-key", "sk-u")
	req.Header.Set("Mcp-Method", "tools/list")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("GET /mcp/sse with Mcp-Method: tools/list: %d, want 403", resp.StatusCode)
	}
}

// Attack: a legacy POST whose Mcp-Name header (which the webhook sees)
// names one tool while the body calls another.
func TestLegacyPostBindsMcpName(t *testing.T) {
	fake := fakemcp.New(t, fakemcp.Opts{Lists: map[string][]json.RawMessage{mcp.MethodToolsList: fakemcp.Tools("echo", "rm")}})
	f := newTestFront(t, frontSpec{ups: []upSpec{{name: "fs", fake: fake}}})
	hdr := map[string]string{"x-litellm-api-key": testKey, "MCP-Protocol-Version": mcp.V20251125}
	resp, body := post(t, f.url+"/mcp", hdr, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	sid := resp.Header.Get(mcp.HeaderSessionID)
	if resp.StatusCode != http.StatusOK || sid == "" {
		t.Fatalf("initialize: %d %s", resp.StatusCode, body)
	}
	hdr[mcp.HeaderSessionID] = sid
	hdr["Mcp-Method"] = "tools/call"

	hdr["Mcp-Name"] = "fs-echo"
	resp, body = post(t, f.url+"/mcp", hdr, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"fs-rm","arguments":{}}}`)
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), "-32020") {
		t.Fatalf("legacy tools/call with Mcp-Name fs-echo calling fs-rm: %d %s, want 400 -32020", resp.StatusCode, body)
	}
	if n := fake.Count(mcp.MethodToolsCall); n != 0 {
		t.Fatalf("the tool ran upstream %d times", n)
	}
	resp, body = post(t, f.url+"/mcp", hdr, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"fs-echo","arguments":{}}}`)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("legacy tools/call with a matching Mcp-Name: %d %s", resp.StatusCode, body)
	}
}

// The Mcp-Name binding: the header must name what the body acts on; a
// method the revision gives no Mcp-Name is bound through its uri or name.
func TestNameMismatch(t *testing.T) {
	cases := []struct {
		method, params, header string
		ok                     bool
	}{
		{"tools/call", `{"name":"fs-echo"}`, "fs-echo", true},
		{"tools/call", `{"name":"fs-rm"}`, "fs-echo", false},
		{"resources/read", `{"uri":"test://value"}`, "test://value", true},
		{"resources/subscribe", `{"uri":"test://value"}`, "test://value", true},
		{"resources/unsubscribe", `{"uri":"test://value"}`, "test://other", false},
		{"tools/list", `{}`, "x", false},
		{"tools/list", `{}`, "", true},
		{"initialize", `{"name":"client"}`, "other", false},
	}
	for _, tc := range cases {
		r := httptest.NewRequest(http.MethodPost, "/mcp", nil)
		r.Header.Set("Mcp-Name", tc.header)
		msg := &jsonrpc.Message{Method: tc.method, Params: json.RawMessage(tc.params)}
		if got := nameMismatch(r, msg); (got == "") != tc.ok {
			t.Errorf("%s %s with Mcp-Name %q: %q, want ok=%v", tc.method, tc.params, tc.header, got, tc.ok)
		}
	}
}
