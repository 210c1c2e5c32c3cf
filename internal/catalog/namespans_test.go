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
		sp := n.of(server, "tools/list", items)
		got := sp.spans
		for i, w := range want {
			g := got[i]
			if sp.names[i] != w {
				t.Fatalf("%s item %d: names has %q, want %q", server, i, sp.names[i], w)
			}
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

// A list's items are renamed once: the same list again gets the same renamed
// items, a changed list its own; items without one name are not renamed.
func TestSpannedRenamesOnce(t *testing.T) {
	var n nameSpans
	prefix := []byte(`"s-`)
	items := []json.RawMessage{json.RawMessage(`{"name":"a","x":1}`), json.RawMessage(`{"name":"b","name":"c"}`), json.RawMessage(`{"d":{"name":"no"},"name":"\u00e9<"}`)}
	r1 := n.of("s", "tools/list", items).renamed(prefix)
	want := []string{`{"name":"s-a","x":1}`, ``, `{"d":{"name":"no"},"name":"s-é\u003c"}`}
	for i, w := range want {
		if string(r1[i]) != w {
			t.Fatalf("renamed item %d = %s, want %s", i, r1[i], w)
		}
	}
	again := []json.RawMessage{append(json.RawMessage(nil), items[0]...), items[1], items[2]}
	if r2 := n.of("s", "tools/list", again).renamed(prefix); &r2[0][0] != &r1[0][0] {
		t.Fatal("the same list was renamed again")
	}
	changed := []json.RawMessage{json.RawMessage(`{"name":"z"}`)}
	if r3 := n.of("s", "tools/list", changed).renamed(prefix); len(r3) != 1 || string(r3[0]) != `{"name":"s-z"}` {
		t.Fatalf("a changed list renamed to %s", r3)
	}
}
