package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpgw/mcpgw/internal/fakemcp"
	"github.com/mcpgw/mcpgw/internal/jsonrpc"
)

// echoUpstream is a fake upstream serving one tool, echo, that answers "ok".
func echoUpstream(t *testing.T) *fakemcp.Server { return echoUpstreamOf(t, false) }

// echoUpstreamOf is echoUpstream speaking 2025-11-25 when legacy is set.
func echoUpstreamOf(t *testing.T, legacy bool) *fakemcp.Server {
	return fakemcp.New(t, fakemcp.Opts{
		Legacy: legacy,
		Lists:  map[string][]json.RawMessage{"tools/list": fakemcp.Tools("echo")},
		Handlers: map[string]fakemcp.Handler{"tools/call": func(json.RawMessage) (json.RawMessage, *jsonrpc.Error) {
			return json.RawMessage(`{"content":[{"type":"text","text":"ok"}]}`), nil
		}},
	})
}

// retryAfter checks a refusal's Retry-After: whole seconds, 1 to 60.
func retryAfter(t *testing.T, h http.Header) {
	t.Helper()
	n, err := strconv.Atoi(h.Get("Retry-After"))
	if err != nil || n < 1 || n > 60 {
		t.Fatalf("Retry-After %q, want whole seconds within the minute", h.Get("Retry-After"))
	}
}

const limitText = "upstream limited: request limit reached (2 per minute)"

// A server with rpm: 2 gets two calls a minute from this gateway: the third
// never reaches it and is answered 429 with Retry-After on every surface
// that has a status (the JSON-RPC error alone on the legacy SSE stream),
// while listings still show its tools and a server without rpm is not
// limited at all.
func TestServerRPMLimitsCalls(t *testing.T) {
	limitedUp, freeUp := echoUpstream(t), echoUpstream(t)
	gw := startGateway(t, fmt.Sprintf(`
general_settings:
  master_key: %s
mcp_servers:
  limited:
    url: %s
    rpm: 2
  free:
    url: %s
`, testKey, limitedUp.URL(), freeUp.URL()), nil)
	u := gw.url + "/mcp"
	modernCall := func(tool string) (int, http.Header, map[string]any) {
		return rpc(t, u, modernHeaders("tools/call", tool), `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"`+tool+`","arguments":{},`+modernMeta+`}}`)
	}
	for i := range 2 {
		if status, _, body := modernCall("limited-echo"); status != 200 || body["result"] == nil {
			t.Fatalf("call %d within the limit: %d %v", i+1, status, body)
		}
	}

	t.Run("modern", func(t *testing.T) {
		status, hdr, body := modernCall("limited-echo")
		if status != http.StatusTooManyRequests || errCode(body) != jsonrpc.CodeInternalError || errMessage(body) != limitText {
			t.Fatalf("over the limit: %d %v", status, body)
		}
		retryAfter(t, hdr)
		if hdr.Get("x-ratelimit-limit-requests") != "2" || hdr.Get("x-ratelimit-remaining-requests") != "0" || hdr.Get("x-ratelimit-reset-requests") != hdr.Get("Retry-After") {
			t.Fatalf("x-ratelimit-* headers: %v", hdr)
		}
	})
	t.Run("REST", func(t *testing.T) {
		status, hdr, body := rpc(t, gw.url+"/mcp-rest/tools/call", map[string]string{"Authorization": "Bearer " + testKey}, `{"server_id":"limited","name":"echo","arguments":{}}`)
		if status != http.StatusTooManyRequests || body["error"] != float64(jsonrpc.CodeInternalError) || body["message"] != limitText {
			t.Fatalf("REST over the limit: %d %v", status, body)
		}
		retryAfter(t, hdr)
	})
	t.Run("legacy POST", func(t *testing.T) {
		sid := initLegacy(t, u, testKey)
		status, hdr, body := rpc(t, u, legacyHeaders(testKey, sid), `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"limited-echo","arguments":{}}}`)
		if status != http.StatusTooManyRequests || errCode(body) != jsonrpc.CodeInternalError || errMessage(body) != limitText {
			t.Fatalf("legacy over the limit: %d %v", status, body)
		}
		retryAfter(t, hdr)
	})
	t.Run("legacy SSE", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		client := sdk.NewClient(&sdk.Implementation{Name: "sse", Version: "1"}, nil)
		cs, err := client.Connect(ctx, &sdk.SSEClientTransport{Endpoint: gw.url + "/mcp/sse", HTTPClient: &http.Client{Transport: authTransport{testKey}}}, &sdk.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
		if err != nil {
			t.Fatal(err)
		}
		defer cs.Close()
		if res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "limited-echo", Arguments: map[string]any{}}); err == nil || !strings.Contains(err.Error(), limitText) {
			t.Fatalf("over /mcp/sse: %v %v, want the limit's JSON-RPC error", res, err)
		}
	})
	if n := limitedUp.Count("tools/call"); n != 2 {
		t.Fatalf("the limited upstream got %d calls, want 2", n)
	}

	// Listings are not limited: the limited server's tools are still there.
	status, _, body := rpc(t, u, modernHeaders("tools/list", ""), `{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{`+modernMeta+`}}`)
	if names := toolsOf(body); status != 200 || !slices.Contains(names, "limited-echo") || !slices.Contains(names, "free-echo") {
		t.Fatalf("tools/list after the limit: %d %v", status, body)
	}

	// A server without rpm is not limited.
	for i := range 5 {
		if status, _, body := modernCall("free-echo"); status != 200 || body["result"] == nil {
			t.Fatalf("unlimited call %d: %d %v", i+1, status, body)
		}
	}
	if n := freeUp.Count("tools/call"); n != 5 {
		t.Fatalf("the unlimited upstream got %d calls, want 5", n)
	}
}

func errMessage(m map[string]any) string {
	e, _ := m["error"].(map[string]any)
	s, _ := e["message"].(string)
	return s
}

// Applying a config with another rpm takes effect at once, keeps the count
// (the calls already made in the minute still count) and keeps the server's
// upstream session: an rpm is not part of the connection.
func TestServerRPMAcrossApply(t *testing.T) {
	up := echoUpstreamOf(t, true)
	cfg := func(rpm int) string {
		return fmt.Sprintf("general_settings:\n  master_key: %s\nmcp_servers:\n  limited:\n    url: %s\n    protocol_version: 2025-11-25\n    rpm: %d\n", testKey, up.URL(), rpm)
	}
	gw := startGateway(t, cfg(2), nil)
	call := func() int {
		status, _, _ := rpc(t, gw.url+"/mcp", modernHeaders("tools/call", "limited-echo"), `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"limited-echo","arguments":{},`+modernMeta+`}}`)
		return status
	}
	if got := []int{call(), call(), call()}; !slices.Equal(got, []int{200, 200, 429}) {
		t.Fatalf("rpm 2: statuses %v", got)
	}
	if err := gw.app.Apply(context.Background(), loadConfig(t, cfg(3), func(string) (string, bool) { return "", false })); err != nil {
		t.Fatal(err)
	}
	if got := []int{call(), call()}; !slices.Equal(got, []int{200, 429}) {
		t.Fatalf("rpm 3 after two calls: statuses %v", got)
	}
	if n := up.Count("tools/call"); n != 3 {
		t.Fatalf("upstream got %d calls, want 3", n)
	}
	if n := up.Count("initialize"); n != 1 {
		t.Fatalf("upstream initialized %d times, want 1 (the session kept across the rpm change)", n)
	}
	// Lifting the limit lets the next call through on the same session.
	if err := gw.app.Apply(context.Background(), loadConfig(t, cfg(0), func(string) (string, bool) { return "", false })); err != nil {
		t.Fatal(err)
	}
	if got := call(); got != 200 {
		t.Fatalf("rpm 0: status %d, want 200", got)
	}
	if n := up.Count("initialize"); n != 1 {
		t.Fatalf("upstream initialized %d times after lifting the limit, want 1", n)
	}
}

// A server's rpm counts a caller's operation once: resuming it with the
// answers to its input requests is not refused at the limit (the caller's
// answer is not thrown away), while a new operation is.
func TestServerRPMCountsAResumedOperationOnce(t *testing.T) {
	peer := newInteractionPeer(t)
	gw := startGateway(t, fmt.Sprintf("general_settings:\n  master_key: %s\n  mcp_advertised_versions: [\"2026-07-28\"]\nmcp_servers:\n  mrtr:\n    url: %s\n    allow_elicitation: true\n    rpm: 1\n", testKey, peer.url()),
		map[string]string{"LITELLM_SALT_KEY": "continuation-salt-0123456789abcdef"})
	c := mrtrCalls[0]
	status, _, body := rpc(t, gw.url+"/mcp", modernHeaders(c.method, c.name), mrtrBody(c.method, c.params, ""))
	tok, _ := resultOf(body)["requestState"].(string)
	if status != 200 || tok == "" {
		t.Fatalf("first call: %d %v", status, body)
	}
	extra := `,"requestState":"` + tok + `","inputResponses":{"consent":{"action":"accept"}}`
	status, _, body = rpc(t, gw.url+"/mcp", modernHeaders(c.method, c.name), mrtrBody(c.method, c.params, extra))
	if status != 200 || !strings.Contains(fmt.Sprint(body["result"]), "confirmed") {
		t.Fatalf("resume at the limit: %d %v, want the completed result", status, body)
	}
	status, hdr, body := rpc(t, gw.url+"/mcp", modernHeaders(c.method, c.name), mrtrBody(c.method, c.params, ""))
	if status != http.StatusTooManyRequests {
		t.Fatalf("a second operation: %d %v, want 429", status, body)
	}
	retryAfter(t, hdr)
}
