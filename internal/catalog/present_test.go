package catalog

import (
	"encoding/json"
	"testing"

	"github.com/mcpgw/mcpgw/internal/jsonrpc"
	"github.com/mcpgw/mcpgw/internal/mcp"
)

// TestPresentRenamesInPlace: a prefixed listing rewrites each item's name and nothing
// else, byte for byte as re-encoding the whole name would (escapes, non-ASCII, HTML
// characters), keeps the items a filter allows, names every item for the caller's record,
// and drops an item whose name is missing, not a string, or given twice.
func TestPresentRenamesInPlace(t *testing.T) {
	c := New(Config{Separator: "__", Sealer: newTestSealer(t, testSaltKey)})
	items := []json.RawMessage{
		json.RawMessage(`{"name":"plain","inputSchema":{"type":"object","properties":{"name":{"type":"string"}}}}`),
		json.RawMessage(`{ "description" : "x" , "name" : "esc\"aped\u00e9\/<&>" }`),
		json.RawMessage(`{"name":"héllo wörld","title":"t"}`),
		json.RawMessage(`{"name":"hidden"}`),
		json.RawMessage(`{"title":"no name"}`),
		json.RawMessage(`{"name":7}`),
		json.RawMessage(`{"name":"one","name":"two"}`),
	}
	q := Query{Prefixed: true, AllowTool: func(_, name string) bool { return name != "hidden" }}
	kept, _, names := c.present(q, "srv", mcp.MethodToolsList, items, nil)
	wantNames := []string{"plain", "esc\"aped\u00e9/<&>", "héllo wörld", "hidden", "", "", ""}
	for i, n := range wantNames {
		if names[i] != n {
			t.Errorf("names[%d] = %q, want %q", i, names[i], n)
		}
	}
	if len(kept) != 3 {
		t.Fatalf("kept %d items: %s", len(kept), kept)
	}
	for i, src := range items[:3] {
		name, _ := jsonrpc.StringMember(src, "name")
		want, err := jsonrpc.SetMember(src, "name", jsonrpc.AppendString(nil, "srv__"+name))
		if err != nil {
			t.Fatal(err)
		}
		if string(kept[i]) != string(want) {
			t.Errorf("item %d = %s, want %s", i, kept[i], want)
		}
		if !json.Valid(kept[i]) {
			t.Errorf("item %d is not JSON: %s", i, kept[i])
		}
	}
	// Items share one buffer but never each other's bytes.
	kept[0] = append(kept[0], '!')
	if string(kept[1][:3]) != `{ "` {
		t.Fatalf("appending to one item changed the next: %s", kept[1])
	}
	unprefixed, _, _ := c.present(Query{}, "srv", mcp.MethodToolsList, items[:1], nil)
	if string(unprefixed[0]) != string(items[0]) {
		t.Fatalf("unprefixed item changed: %s", unprefixed[0])
	}
}
