package notify

import (
	"slices"
	"testing"
)

func TestMemoryDeliversInOrderUntilCancelled(t *testing.T) {
	h := NewMemory()
	var got []string
	cancelA := h.Subscribe(func(e Event) { got = append(got, "a:"+e.Server+":"+e.Method) })
	h.Subscribe(func(e Event) { got = append(got, "b:"+e.Server+":"+e.Method) })
	h.Publish(Event{Server: "s1", Method: "m1"})
	cancelA()
	cancelA()
	h.Publish(Event{Server: "s2", Method: "m2"})
	want := []string{"a:s1:m1", "b:s1:m1", "b:s2:m2"}
	if !slices.Equal(got, want) {
		t.Fatalf("delivered %q, want %q", got, want)
	}
}

func TestMemorySubscribeDuringPublish(t *testing.T) {
	h := NewMemory()
	calls := 0
	h.Subscribe(func(Event) {
		calls++
		h.Subscribe(func(Event) { calls += 10 })
	})
	h.Publish(Event{})
	if calls != 1 {
		t.Fatalf("a subscriber added during Publish was called for that event (calls %d)", calls)
	}
	h.Publish(Event{})
	if calls != 12 {
		t.Fatalf("calls = %d, want 12", calls)
	}
}

var _ Hub = (*Memory)(nil)
