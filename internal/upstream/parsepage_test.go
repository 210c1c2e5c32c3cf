package upstream

import (
	"strings"
	"testing"
	"time"
)

// TestParsePageMembers: the cursor and the caching hints of a list page are
// read as encoding/json would (escapes resolved), and a cursor that is not
// a string makes the page invalid.
func TestParsePageMembers(t *testing.T) {
	for _, tc := range []struct {
		raw     string
		next    string
		ttl     time.Duration
		private bool
		bad     string
	}{
		{raw: `{"tools":[{"name":"a"}],"nextCursor":"c\u0031","ttlMs":5,"cacheScope":"priv\u0061te"}`, next: "c1", ttl: 5 * time.Millisecond, private: true},
		{raw: `{"tools":[],"nextCursor":null,"cacheScope":"public"}`, ttl: -1},
		{raw: `{"tools":[],"cacheScope":7}`, ttl: -1},
		{raw: `{"tools":[],"nextCursor":7}`, bad: "nextCursor is not a string"},
		{raw: `{"tools":{}}`, bad: "tools is not an array"},
	} {
		pg, err := parsePage([]byte(tc.raw), "tools")
		if tc.bad != "" {
			if err == nil || !strings.Contains(err.Error(), tc.bad) {
				t.Errorf("%s: err %v, want %q", tc.raw, err, tc.bad)
			}
			continue
		}
		if err != nil || pg.next != tc.next || pg.ttl != tc.ttl || pg.private != tc.private {
			t.Errorf("%s: %+v %v, want next %q ttl %v private %v", tc.raw, pg, err, tc.next, tc.ttl, tc.private)
		}
	}
}

// A page that comes again byte for byte is the last walk's page, its items
// the same slices; a changed page is split anew, and a walk's later pages
// are remembered per page number.
func TestPageMemo(t *testing.T) {
	var m pageMemo
	raw := func(s string) []byte { return []byte(`{"tools":[` + s + `]}`) }
	p1, err := m.parse("tools/list", 1, raw(`{"name":"a"}`), "tools")
	if err != nil || len(p1.items) != 1 {
		t.Fatalf("page 1: %+v %v", p1, err)
	}
	p2, _ := m.parse("tools/list", 2, raw(`{"name":"b"}`), "tools")
	again1, _ := m.parse("tools/list", 1, raw(`{"name":"a"}`), "tools")
	again2, _ := m.parse("tools/list", 2, raw(`{"name":"b"}`), "tools")
	if &again1.items[0][0] != &p1.items[0][0] || &again2.items[0][0] != &p2.items[0][0] {
		t.Fatal("an unchanged page was split again")
	}
	if pg, _ := m.parse("prompts/list", 1, []byte(`{"prompts":[{"name":"a"}]}`), "prompts"); len(pg.items) != 1 {
		t.Fatalf("another method's page: %+v", pg)
	}
	changed, _ := m.parse("tools/list", 1, raw(`{"name":"c"}`), "tools")
	if string(changed.items[0]) != `{"name":"c"}` {
		t.Fatalf("a changed page gave %s", changed.items[0])
	}
	// A new first page begins a new walk: the old page 2 is not reused for it.
	m.mu.Lock()
	pages := len(m.last["tools/list"])
	m.mu.Unlock()
	if pages != 1 {
		t.Fatalf("a new walk kept %d pages, want its own 1", pages)
	}
	if _, err := m.parse("tools/list", 1, []byte(`{"tools":{}}`), "tools"); err == nil {
		t.Fatal("an invalid page was accepted")
	}
}
