package catalogtest

import (
	"context"
	"encoding/json"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/mcpgw/mcpgw/internal/catalog"
)

// Snapshots runs the catalog.Snapshots contract against stores built by
// newStore: each call returns an empty store that holds at least 10
// snapshots.
func Snapshots(t *testing.T, newStore func() catalog.Snapshots) {
	ctx := context.Background()
	count := 2
	now := time.Now().Truncate(time.Second)
	kept := catalog.Snapshot{
		Binding:  "v1;u=alice|",
		Items:    []json.RawMessage{json.RawMessage(`{"name":"s-x"}`), json.RawMessage(`{"name":"s-y"}`)},
		Cuts:     []int{1},
		Outcomes: map[string]catalog.Outcome{"s": {Status: "ok", ToolCount: &count}, "t": {Status: "timeout"}},
		Expires:  now.Add(time.Minute),
	}
	cases := []struct {
		name    string
		id      func(kept string) string
		binding string
		age     time.Duration
		found   bool
	}{
		{name: "its caller finds it", id: same, binding: kept.Binding, found: true},
		{name: "live until it expires", id: same, binding: kept.Binding, age: time.Minute - time.Second, found: true},
		{name: "gone when it expires", id: same, binding: kept.Binding, age: time.Minute},
		{name: "another caller does not", id: same, binding: "v1;u=bob|"},
		{name: "an unknown id is not found", id: func(string) string { return "0123456789abcdef01234567" }, binding: kept.Binding},
		{name: "an empty id is not found", id: func(string) string { return "" }, binding: kept.Binding},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := newStore()
			id, err := s.Put(ctx, kept)
			if err != nil || id == "" {
				t.Fatalf("Put = %q, %v", id, err)
			}
			got, ok, err := s.Get(ctx, tc.id(id), tc.binding, now.Add(tc.age))
			if err != nil || ok != tc.found {
				t.Fatalf("Get found %v, %v; want %v", ok, err, tc.found)
			}
			if ok && !sameSnapshot(got, kept) {
				t.Fatalf("Get = %+v, want %+v", got, kept)
			}
		})
	}
	t.Run("every put has its own id", func(t *testing.T) {
		s := newStore()
		other := kept
		other.Items = kept.Items[:1]
		other.Cuts = nil
		a, errA := s.Put(ctx, kept)
		b, errB := s.Put(ctx, other)
		if errA != nil || errB != nil || a == b {
			t.Fatalf("Put ids %q, %q (%v, %v)", a, b, errA, errB)
		}
		got, ok, err := s.Get(ctx, b, kept.Binding, now)
		if err != nil || !ok || !sameSnapshot(got, other) {
			t.Fatalf("Get(second) = %+v, %v, %v", got, ok, err)
		}
	})
}

func same(id string) string { return id }

// sameSnapshot compares snapshots as a shared store would keep them: items
// by their bytes, cuts and outcomes by value, the expiry to the second.
func sameSnapshot(a, b catalog.Snapshot) bool {
	if a.Binding != b.Binding || len(a.Items) != len(b.Items) || !a.Expires.Truncate(time.Second).Equal(b.Expires.Truncate(time.Second)) {
		return false
	}
	for i := range a.Items {
		if string(a.Items[i]) != string(b.Items[i]) {
			return false
		}
	}
	return slices.Equal(a.Cuts, b.Cuts) && reflect.DeepEqual(a.Outcomes, b.Outcomes)
}
