package catalog

import (
	"encoding/json"
	"testing"
)

// The names of a list come from the last list's where an item is the same,
// and are read anew where it is not: a changed item, an item at another
// place, another server's list.
func TestNameSpansFollowTheItems(t *testing.T) {
	var n nameSpans
	item := func(s string) json.RawMessage { return json.RawMessage(s) }
	check := func(server string, items []json.RawMessage, want ...string) {
		t.Helper()
		got := n.of(server, "tools/list", items)
		for i, w := range want {
			g := got[i]
			if w == "" {
				if g.ok {
					t.Fatalf("%s item %d: name %q, want none", server, i, g.name)
				}
				continue
			}
			if !g.ok || g.name != w || string(items[i][g.start:g.end]) != `"`+w+`"` {
				t.Fatalf("%s item %d: %+v, want %q", server, i, g, w)
			}
		}
	}
	a, b := item(`{"name":"a"}`), item(`{"description":"x","name":"b"}`)
	check("s", []json.RawMessage{a, b}, "a", "b")
	check("s", []json.RawMessage{a, b}, "a", "b")
	check("s", []json.RawMessage{b, a}, "b", "a")
	check("s", []json.RawMessage{b, item(`{"name":"c","x":1}`), item(`{"name":"d","name":"e"}`)}, "b", "c", "")
	check("s", []json.RawMessage{item(`{"x":1,"name":"b"}`)}, "b")
	check("t", []json.RawMessage{item(`{"name":"z"}`), b}, "z", "b")
	check("s", []json.RawMessage{item(`{"name":7}`)}, "")
}
