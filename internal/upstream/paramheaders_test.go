package upstream

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/mcpgw/mcpgw/internal/jsonrpc"
)

func TestParamHeadersMirrorAnnotatedArguments(t *testing.T) {
	var got http.Header
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, m *jsonrpc.Message) {
		switch m.Method {
		case "server/discover":
			writeJSON(w, 200, jsonrpc.EncodeResult(m.ID, json.RawMessage(`{"resultType":"complete","supportedVersions":["2026-07-28"],"capabilities":{"tools":{}},"ttlMs":0,"cacheScope":"public"}`)))
		case "tools/list":
			writeJSON(w, 200, jsonrpc.EncodeResult(m.ID, json.RawMessage(`{"tools":[
				{"name":"geo","inputSchema":{"type":"object","properties":{
					"region":{"type":"string","x-mcp-header":"Region"},
					"n":{"type":"integer","x-mcp-header":"Priority"},
					"v":{"type":"boolean","x-mcp-header":"Verbose"},
					"city":{"type":"string","x-mcp-header":"City"},
					"opt":{"type":"string","x-mcp-header":"Opt"},
					"nested":{"type":"object","properties":{"deep":{"type":"string","x-mcp-header":"Deep"}}}}}},
				{"name":"bad-number","inputSchema":{"type":"object","properties":{"x":{"type":"number","x-mcp-header":"X"}}}},
				{"name":"bad-dup","inputSchema":{"type":"object","properties":{"a":{"type":"string","x-mcp-header":"Dup"},"b":{"type":"string","x-mcp-header":"dup"}}}},
				{"name":"bad-name","inputSchema":{"type":"object","properties":{"a":{"type":"string","x-mcp-header":"has space"}}}},
				{"name":"plain","inputSchema":{"type":"object"}}]}`)))
		default:
			got = r.Header.Clone()
			writeJSON(w, 200, jsonrpc.EncodeResult(m.ID, json.RawMessage(`{"resultType":"complete","content":[]}`)))
		}
	})
	c := newClient(t, Config{Name: "up", URL: f.url(), ProtocolVersion: "2026-07-28"})
	tools, err := c.ListTools(context.Background(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range tools {
		n, _ := jsonrpc.StringMember(tl, "name")
		names = append(names, n)
	}
	if strings.Join(names, ",") != "geo,plain" {
		t.Fatalf("tools kept = %v, want the ones with valid annotations", names)
	}
	args := json.RawMessage(`{"region":"us-west","n":42.0,"v":false,"city":"Zürich","opt":null,"nested":{"deep":" x"}}`)
	if _, err := c.CallTool(context.Background(), "geo", args, Options{}); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"Mcp-Param-Region": "us-west", "Mcp-Param-Priority": "42", "Mcp-Param-Verbose": "false",
		"Mcp-Param-City": "=?base64?WsO8cmljaA==?=", "Mcp-Param-Deep": "=?base64?IHg=?=", "Mcp-Param-Opt": ""}
	for k, v := range want {
		if got.Get(k) != v {
			t.Errorf("%s = %q, want %q", k, got.Get(k), v)
		}
	}
}

func TestHeaderMismatchRefetchesToolsAndRetries(t *testing.T) {
	calls := 0
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, m *jsonrpc.Message) {
		switch m.Method {
		case "server/discover":
			writeJSON(w, 200, jsonrpc.EncodeResult(m.ID, json.RawMessage(`{"resultType":"complete","supportedVersions":["2026-07-28"],"capabilities":{"tools":{}},"ttlMs":0,"cacheScope":"public"}`)))
		case "tools/list":
			writeJSON(w, 200, jsonrpc.EncodeResult(m.ID, json.RawMessage(`{"tools":[{"name":"geo","inputSchema":{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"}}}}]}`)))
		default:
			calls++
			if r.Header.Get("Mcp-Param-Region") != "eu" {
				writeJSON(w, 400, jsonrpc.EncodeError(m.ID, &jsonrpc.Error{Code: -32020, Message: "missing Mcp-Param-Region"}))
				return
			}
			writeJSON(w, 200, jsonrpc.EncodeResult(m.ID, json.RawMessage(`{"resultType":"complete","content":[]}`)))
		}
	})
	c := newClient(t, Config{Name: "up", URL: f.url(), ProtocolVersion: "2026-07-28"})
	if _, err := c.CallTool(context.Background(), "geo", json.RawMessage(`{"region":"eu"}`), Options{}); err != nil {
		t.Fatal(err)
	}
	if calls != 2 {
		t.Fatalf("%d tools/call, want the first and one retry after re-listing", calls)
	}
}

// TestLearnRelisted: a tool listed again byte for byte keeps its
// annotations, an invalid one is dropped (and warned about) again, and a
// tool whose annotation changed is read anew.
func TestLearnRelisted(t *testing.T) {
	geo := func(h string) json.RawMessage {
		return json.RawMessage(`{"name":"geo","inputSchema":{"type":"object","properties":{"r":{"type":"string","x-mcp-header":"` + h + `"}}}}`)
	}
	bad := json.RawMessage(`{"name":"bad","inputSchema":{"type":"object","properties":{"x":{"type":"number","x-mcp-header":"X"}}}}`)
	plain := json.RawMessage(`{"name":"plain"}`)
	var p paramHeaders
	first := []json.RawMessage{plain, geo("Region"), bad}
	for round, tc := range []struct {
		items  []json.RawMessage
		header string // geo's header after the listing
		kept   int
	}{
		{first, "Mcp-Param-Region", 2},
		{slices.Clone(first), "Mcp-Param-Region", 2}, // the same slices (a page memo's)
		{[]json.RawMessage{plain, geo("Region"), bad}, "Mcp-Param-Region", 2},
		{[]json.RawMessage{bad, geo("Zone"), plain}, "Mcp-Param-Zone", 2},
		{slices.Clone(first), "Mcp-Param-Region", 2},
		{[]json.RawMessage{plain}, "", 1},
	} {
		var warned []string
		kept := p.learn(tc.items, func(tool, _ string) { warned = append(warned, tool) })
		if len(kept) != tc.kept {
			t.Fatalf("round %d: kept %d tools, want %d", round, len(kept), tc.kept)
		}
		for _, it := range kept {
			if n, _ := jsonrpc.StringMember(it, "name"); n == "bad" {
				t.Fatalf("round %d: the invalid tool was kept", round)
			}
		}
		if wantWarn := len(tc.items) - tc.kept; len(warned) != wantWarn {
			t.Fatalf("round %d: warned about %v, want %d tools", round, warned, wantWarn)
		}
		h := p.headersFor("geo", json.RawMessage(`{"r":"x"}`))
		if tc.header == "" {
			if len(h) != 0 {
				t.Fatalf("round %d: headers %v for a tool no longer listed", round, h)
			}
			continue
		}
		if got := http.Header(h).Get(tc.header); got != "x" || len(h) != 1 {
			t.Fatalf("round %d: headers %v, want only %s: x", round, h, tc.header)
		}
	}
}
