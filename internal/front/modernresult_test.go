package front

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/mcpgw/mcpgw/internal/jsonrpc"
	"github.com/mcpgw/mcpgw/internal/mcp"
)

// oneByOne is how a modern answer was made before appendModern: the cache
// hints, resultType and _meta each set in a copy of their own, then the
// envelope around it. appendModern must give the same bytes.
func oneByOne(h *MCP, id jsonrpc.ID, res json.RawMessage, hints bool) []byte {
	if hints && len(res) > 0 && res[0] == '{' && jsonrpc.Members(res, []string{"x"}, make([][]byte, 1)) == nil {
		rt, ok := jsonrpc.Unquote(jsonrpc.Member(res, "resultType"))
		if !ok || rt == mcp.ResultTypeComplete {
			if !validTTL(jsonrpc.Member(res, "ttlMs")) {
				if b, err := jsonrpc.SetMember(res, "ttlMs", []byte(defaultTTLMs)); err == nil {
					res = b
				}
			}
			if scope, _ := jsonrpc.Unquote(jsonrpc.Member(res, "cacheScope")); !mcp.ValidCacheScope(scope) {
				if b, err := jsonrpc.SetMember(res, "cacheScope", []byte(defaultCacheScope)); err == nil {
					res = b
				}
			}
		}
	}
	stamped := func() json.RawMessage {
		if jsonrpc.Member(res, "resultType") == nil {
			if b, err := jsonrpc.SetMember(res, "resultType", []byte(`"complete"`)); err == nil {
				res = b
			}
		}
		meta := jsonrpc.Member(res, "_meta")
		if len(meta) == 0 || meta[0] != '{' {
			meta = []byte(`{}`)
		}
		meta, err := jsonrpc.SetMember(meta, mcp.MetaServerInfo, h.serverInfo)
		if err != nil {
			return res
		}
		if b, err := jsonrpc.SetMember(res, "_meta", meta); err == nil {
			res = b
		}
		return res
	}()
	return jsonrpc.EncodeResult(id, stamped)
}

// modernSeeds are results appendModern must stamp as oneByOne does.
var modernSeeds = []string{
	`{}`, ` { } `, `{"tools":[]}`, `{"tools":[{"name":"a"}],"nextCursor":"c","ttlMs":0,"cacheScope":"private","_meta":{"x":1}}`,
	`{"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"up"},"k":[1,2]},"resultType":"complete"}`,
	`{"resultType":"input_required","inputRequests":{}}`, `{"resultType":7,"ttlMs":"1"}`,
	`{"ttlMs":1,"ttlMs":-1,"cacheScope":"public","cacheScope":"nope"}`, `{"_meta":[],"_meta":{"a":1}}`,
	`{"_meta":null}`, "\t{\"a\":1 , \"b\" : 2 }\n", `[1,2]`, `"x"`, `{"r\u0065sultType":"complete"}`,
}

func TestAppendModernAsOneByOne(t *testing.T) {
	h := &MCP{serverInfo: []byte(`{"name":"gw","version":"1"}`)}
	id := jsonrpc.IntID(3)
	for _, res := range append(modernSeeds, "") {
		for _, hints := range []bool{false, true} {
			var r json.RawMessage
			if res != "" {
				r = json.RawMessage(res)
			}
			got, want := h.encodeModern(id, r, hints), oneByOne(h, id, r, hints)
			if !bytes.Equal(got, want) {
				t.Errorf("encodeModern(%s, hints %v)\n = %s\nwant %s", res, hints, got, want)
			}
		}
	}
}

// FuzzAppendModern: for any valid JSON result, appendModern gives the bytes
// setting each member in turn gave.
func FuzzAppendModern(f *testing.F) {
	for _, s := range modernSeeds {
		f.Add([]byte(s), true)
	}
	h := &MCP{serverInfo: []byte(`{"name":"gw"}`)}
	f.Fuzz(func(t *testing.T, res []byte, hints bool) {
		if len(res) == 0 || !json.Valid(res) {
			return
		}
		got, want := h.encodeModern(jsonrpc.IntID(1), res, hints), oneByOne(h, jsonrpc.IntID(1), res, hints)
		if !bytes.Equal(got, want) {
			t.Fatalf("encodeModern(%q, %v)\n = %s\nwant %s", res, hints, got, want)
		}
	})
}

// The answer's buffer is sized for the most appendModern adds: a large
// result with none of the members it sets is written without the buffer
// growing (which would copy the listing again).
func TestEncodeModernSizesItsBuffer(t *testing.T) {
	h := &MCP{serverInfo: []byte(`{"name":"gw","version":"1"}`)}
	res := json.RawMessage(`{"tools":["` + strings.Repeat("x", 100<<10) + `"]}`)
	b := h.encodeModern(jsonrpc.IntID(12345678), res, true)
	if want := 40 + len(`12345678`) + len(res) + len(h.serverInfo); cap(b) > want+256 || len(b) > cap(b) {
		t.Fatalf("answer of %d bytes in a buffer of %d: it grew", len(b), cap(b))
	}
}
