package front

import (
	"context"
	"testing"
	"time"
)

// len is how many ids the record holds.
func (m *MemoryTombstones) len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.byID)
}

// The in-memory record is bounded: beyond max the oldest buried id is
// forgotten, and ids past their until are dropped when room is made.
func TestMemoryTombstonesBounds(t *testing.T) {
	base := time.Unix(1_000_000, 0)
	type bury struct {
		id    string
		until time.Duration // from base
		at    time.Duration // the clock when buried
	}
	cases := []struct {
		name    string
		max     int
		buries  []bury
		buried  []string
		dropped []string
		size    int
	}{
		{name: "oldest forgotten beyond max", max: 2,
			buries: []bury{{"a", time.Hour, 0}, {"b", time.Hour, 0}, {"c", time.Hour, 0}},
			buried: []string{"b", "c"}, dropped: []string{"a"}, size: 2},
		{name: "reburying does not renew", max: 2,
			buries: []bury{{"a", time.Hour, 0}, {"b", time.Hour, 0}, {"a", time.Hour, 0}, {"c", time.Hour, 0}},
			buried: []string{"b", "c"}, dropped: []string{"a"}, size: 2},
		{name: "expired oldest dropped before a live one", max: 2,
			buries: []bury{{"a", time.Second, 0}, {"b", time.Hour, 0}, {"c", time.Hour, 2 * time.Second}},
			buried: []string{"b", "c"}, dropped: []string{"a"}, size: 2},
		{name: "expired in the middle dropped by the sweep", max: 10,
			buries: []bury{{"a", time.Hour, 0}, {"b", time.Second, 0}, {"c", time.Hour, 0}, {"d", 2 * time.Hour, 2 * time.Minute}},
			buried: []string{"a", "c", "d"}, dropped: []string{"b"}, size: 3},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var now time.Time
			m := newMemoryTombstones(tc.max, func() time.Time { return now })
			for _, b := range tc.buries {
				now = base.Add(b.at)
				if err := m.Bury(context.Background(), b.id, base.Add(b.until)); err != nil {
					t.Fatal(err)
				}
			}
			if n := m.len(); n != tc.size {
				t.Fatalf("holds %d ids, want %d", n, tc.size)
			}
			for _, id := range tc.buried {
				if got, _ := m.Buried(context.Background(), id); !got {
					t.Errorf("%q not buried", id)
				}
			}
			for _, id := range tc.dropped {
				if got, _ := m.Buried(context.Background(), id); got {
					t.Errorf("%q still buried", id)
				}
			}
		})
	}
}
