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
