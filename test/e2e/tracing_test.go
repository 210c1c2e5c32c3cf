package e2e

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"net/http"
	"strings"
	"testing"

	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
)

// tracedGateway serves up through a gateway exporting traces to rc.
func tracedGateway(t *testing.T, rc *otlpReceiver, up *tracedUpstream) *gatewayUnderTest {
	t.Helper()
	return startGateway(t, fmt.Sprintf(`
general_settings:
  master_key: %s
litellm_settings:
  callbacks: ["otel"]
mcp_servers:
  up:
    url: %s
`, testKey, up.url), map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": rc.url, "OTEL_SERVICE_NAME": "gw-under-test"})
}

// traceparent is a W3C traceparent for a caller's span.
func traceparent(traceID, spanID string) string { return "00-" + traceID + "-" + spanID + "-01" }

// linked checks one trace: the gateway's SERVER span (named name) is the
// child of the caller's span callerSpan, the upstream CLIENT span its child,
// and the upstream saw the CLIENT span as its parent, in _meta and in the
// header. It returns the two spans.
func linked(t *testing.T, rc *otlpReceiver, up *tracedUpstream, traceID, callerSpan, name string) (server, client *tracepb.Span) {
	t.Helper()
	spans := rc.trace(traceID)
	for _, s := range spans {
		switch {
		case s.Kind == tracepb.Span_SPAN_KIND_SERVER && hex.EncodeToString(s.ParentSpanId) == callerSpan:
			server = s
		case s.Kind == tracepb.Span_SPAN_KIND_CLIENT:
			client = s
		}
	}
	if server == nil || client == nil {
		t.Fatalf("trace %s: want a SERVER span under %s and a CLIENT span; got %d spans: %v", traceID, callerSpan, len(spans), spans)
	}
	if server.Name != name {
		t.Errorf("SERVER span name %q, want %q", server.Name, name)
	}
	if !bytes.Equal(client.ParentSpanId, server.SpanId) {
		t.Errorf("CLIENT span's parent %x, want the SERVER span %x", client.ParentSpanId, server.SpanId)
	}
	got := up.parents(traceID)
	want := hex.EncodeToString(client.SpanId)
	if got.meta != want || got.header != want {
		t.Errorf("upstream saw parent _meta %q header %q, want the CLIENT span %s", got.meta, got.header, want)
	}
	for _, s := range spans {
		for _, kv := range s.Attributes {
			if strings.Contains(kv.Value.String(), "s3cret-arg") {
				t.Errorf("span %q attribute %s carries the arguments", s.Name, kv.Key)
			}
		}
	}
	return server, client
}

// wantAttrs fails unless span has every attribute in want.
func wantAttrs(t *testing.T, s *tracepb.Span, want map[string]string) {
	t.Helper()
	got := attrs(s)
	for k, v := range want {
		if got[k] != v {
			t.Errorf("span %q: %s = %q, want %q (all: %v)", s.Name, k, got[k], v, got)
		}
	}
}

// TestTracesLinkCallerGatewayAndUpstream: with callbacks ["otel"] and an
// OTLP endpoint, every downstream request is a SERVER span and every
// upstream request a CLIENT span under it, exported over OTLP/HTTP (flushed
// at close); the caller's trace context is taken from the traceparent
// header or, winning over it, from params._meta, and the CLIENT span's is
// sent to the upstream in both. Both eras, REST and a fault.
func TestTracesLinkCallerGatewayAndUpstream(t *testing.T) {
	rc, up := startOTLPReceiver(t), startTracedUpstream(t)
	gw := tracedGateway(t, rc, up)
	u := gw.url + "/mcp"
	const args = `"arguments":{"note":"s3cret-arg"}`

	// Modern, stateless: the trace context in the header.
	tHdr, sHdr := "11111111111111111111111111111111", "1111111111111111"
	hdr := modernHeaders("tools/call", "up-echo")
	hdr["traceparent"] = traceparent(tHdr, sHdr)
	if status, _, body := rpc(t, u, hdr, `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"up-echo",`+args+`,`+modernMeta+`}}`); status != 200 || body["result"] == nil {
		t.Fatalf("modern call: %d %v", status, body)
	}

	// Modern: the context in _meta wins; the header's becomes a link.
	tMeta, sMeta := "22222222222222222222222222222222", "2222222222222222"
	tOther, sOther := "33333333333333333333333333333333", "3333333333333333"
	hdr["traceparent"] = traceparent(tOther, sOther)
	meta := strings.Replace(modernMeta, `"_meta":{`, `"_meta":{"traceparent":"`+traceparent(tMeta, sMeta)+`","tracestate":"vendor=x",`, 1)
	if status, _, body := rpc(t, u, hdr, `{"jsonrpc":"2.0","id":"req-8","method":"tools/call","params":{"name":"up-echo",`+args+`,`+meta+`}}`); status != 200 || body["result"] == nil {
		t.Fatalf("modern call with _meta: %d %v", status, body)
	}

	// 2025-11-25 session.
	tSess, sSess := "44444444444444444444444444444444", "4444444444444444"
	sid := openLegacySession(t, u)
	lh := map[string]string{"Authorization": "Bearer " + testKey, "Mcp-Session-Id": sid, "MCP-Protocol-Version": "2025-11-25",
		"traceparent": traceparent(tSess, sSess)}
	if status, _, body := rpc(t, u, lh, `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"up-echo",`+args+`}}`); status != 200 || body["result"] == nil {
		t.Fatalf("session call: %d %v", status, body)
	}

	// REST.
	tREST, sREST := "55555555555555555555555555555555", "5555555555555555"
	restCall(t, gw.url, traceparent(tREST, sREST), `{"server_id":"up","name":"echo","arguments":{"note":"s3cret-arg"}}`, http.StatusOK)

	// A fault: the upstream refuses the call.
	tFault, sFault := "66666666666666666666666666666666", "6666666666666666"
	hdr = modernHeaders("tools/call", "up-broken")
	hdr["traceparent"] = traceparent(tFault, sFault)
	if _, _, body := rpc(t, u, hdr, `{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"up-broken","arguments":{},`+modernMeta+`}}`); body["error"] == nil {
		t.Fatalf("broken call answered %v", body)
	}

	gw.stop() // flushes the queued spans

	server, client := linked(t, rc, up, tHdr, sHdr, "tools/call up-echo")
	wantAttrs(t, server, map[string]string{"mcp.method.name": "tools/call", "gen_ai.tool.name": "up-echo",
		"gen_ai.operation.name": "execute_tool", "jsonrpc.request.id": "7", "mcp.protocol.version": "2026-07-28",
		"network.transport": "tcp", "mcpgw.server.name": "up"})
	if _, bad := attrs(server)["error.type"]; bad || server.Status.GetCode() == tracepb.Status_STATUS_CODE_ERROR {
		t.Errorf("a successful call's span has an error: %v", attrs(server))
	}
	wantAttrs(t, client, map[string]string{"mcp.method.name": "tools/call", "gen_ai.tool.name": "echo",
		"server.address": "127.0.0.1", "network.transport": "tcp"})
	if client.Name != "tools/call echo" {
		t.Errorf("CLIENT span name %q", client.Name)
	}

	server, _ = linked(t, rc, up, tMeta, sMeta, "tools/call up-echo")
	wantAttrs(t, server, map[string]string{"jsonrpc.request.id": "req-8"})
	if server.TraceState != "vendor=x" {
		t.Errorf("tracestate %q, want the caller's", server.TraceState)
	}
	if len(server.Links) != 1 || hex.EncodeToString(server.Links[0].TraceId) != tOther || hex.EncodeToString(server.Links[0].SpanId) != sOther {
		t.Errorf("the header's context is not linked: %v", server.Links)
	}
	if len(rc.trace(tOther)) != 0 {
		t.Errorf("the header's trace got spans though _meta named another")
	}

	server, _ = linked(t, rc, up, tSess, sSess, "tools/call up-echo")
	wantAttrs(t, server, map[string]string{"mcp.session.id": sid, "mcp.protocol.version": "2025-11-25", "jsonrpc.request.id": "9"})

	server, _ = linked(t, rc, up, tREST, sREST, "tools/call echo") // REST names the upstream tool
	wantAttrs(t, server, map[string]string{"mcp.method.name": "tools/call", "http.response.status_code": "200"})

	faultSpans(t, rc, tFault, sFault)
}

// faultSpans checks a failed call's spans: both carry error.type (the fault
// class) and the ERROR status.
func faultSpans(t *testing.T, rc *otlpReceiver, traceID, callerSpan string) {
	t.Helper()
	var server, client *tracepb.Span
	for _, s := range rc.trace(traceID) {
		switch s.Kind {
		case tracepb.Span_SPAN_KIND_SERVER:
			server = s
		case tracepb.Span_SPAN_KIND_CLIENT:
			client = s
		}
	}
	if server == nil || client == nil || hex.EncodeToString(server.ParentSpanId) != callerSpan {
		t.Fatalf("fault trace: server %v client %v", server, client)
	}
	for _, s := range []*tracepb.Span{server, client} {
		if attrs(s)["error.type"] == "" || s.Status.GetCode() != tracepb.Status_STATUS_CODE_ERROR {
			t.Errorf("span %q: error.type %q status %v", s.Name, attrs(s)["error.type"], s.Status)
		}
	}
	if attrs(server)["error.type"] != attrs(client)["error.type"] {
		t.Errorf("fault class: SERVER %q, CLIENT %q", attrs(server)["error.type"], attrs(client)["error.type"])
	}
}

// openLegacySession initializes a 2025-11-25 session on url and returns its id.
func openLegacySession(t *testing.T, url string) string {
	t.Helper()
	h := map[string]string{"Authorization": "Bearer " + testKey}
	status, hdr, body := rpc(t, url, h, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	sid := hdr.Get("Mcp-Session-Id")
	if status != 200 || sid == "" || body["result"] == nil {
		t.Fatalf("initialize: %d %v", status, body)
	}
	h["Mcp-Session-Id"], h["MCP-Protocol-Version"] = sid, "2025-11-25"
	if status, _, _ := rpc(t, url, h, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); status != 202 {
		t.Fatalf("notifications/initialized: %d", status)
	}
	return sid
}

// restCall posts body to /mcp-rest/tools/call with a traceparent header.
func restCall(t *testing.T, base, tp, body string, want int) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, base+"/mcp-rest/tools/call", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+testKey)
	req.Header.Set("traceparent", tp)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != want {
		t.Fatalf("REST call: %d, want %d", resp.StatusCode, want)
	}
}

// TestTracesOffByDefault: without callbacks ["otel"] or an OTLP endpoint no
// span is exported and nothing is added to what the upstream receives.
func TestTracesOffByDefault(t *testing.T) {
	rc, up := startOTLPReceiver(t), startTracedUpstream(t)
	gw := startGateway(t, fmt.Sprintf(`
general_settings:
  master_key: %s
mcp_servers:
  up:
    url: %s
`, testKey, up.url), map[string]string{"OTEL_SERVICE_NAME": "unused"})
	tid := "77777777777777777777777777777777"
	hdr := modernHeaders("tools/call", "up-echo")
	hdr["traceparent"] = traceparent(tid, "7777777777777777")
	if status, _, body := rpc(t, gw.url+"/mcp", hdr, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"up-echo","arguments":{},`+modernMeta+`}}`); status != 200 || body["result"] == nil {
		t.Fatalf("call: %d %v", status, body)
	}
	gw.stop()
	if got := up.parents(tid); got != (seen{}) {
		t.Fatalf("the upstream received trace context %+v with tracing off", got)
	}
	if n := rc.count(); n != 0 {
		t.Fatalf("%d spans exported with tracing off", n)
	}
}

// TestTracesExportOutageDoesNotAffectCalls: while the receiver refuses
// exports, calls are answered as usual and the gateway still closes.
func TestTracesExportOutageDoesNotAffectCalls(t *testing.T) {
	rc, up := startOTLPReceiver(t), startTracedUpstream(t)
	rc.mu.Lock()
	rc.fail = true
	rc.mu.Unlock()
	gw := tracedGateway(t, rc, up)
	for i := range 5 {
		hdr := modernHeaders("tools/call", "up-echo")
		body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"up-echo","arguments":{},%s}}`, i, modernMeta)
		if status, _, res := rpc(t, gw.url+"/mcp", hdr, body); status != 200 || res["result"] == nil {
			t.Fatalf("call %d during the outage: %d %v", i, status, res)
		}
	}
	gw.stop()
	if n := rc.count(); n != 0 {
		t.Fatalf("the refusing receiver kept %d spans", n)
	}
}
