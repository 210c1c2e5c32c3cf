package store

import (
	"context"
	"reflect"
	"testing"
)

// TestToolPins: a first sighting never replaces a row already there (and its event is
// dropped), an overwrite does; pins list by server; deleting some tools or the whole server
// removes exactly those rows; every write's events are kept, newest first.
func TestToolPins(t *testing.T) {
	forEachBackend(t, func(t *testing.T, open opener) {
		s := open(t, Options{})
		ctx := context.Background()
		a := ToolPin{Server: "s", Tool: "a", Digest: "d1", Parts: map[string]string{"description": "p1"}}
		if err := s.PutToolPins(ctx, []ToolPin{a, {Server: "s"}, {Server: "other", Tool: "x", Digest: "dx"}},
			[]PinEvent{{Server: "s", Tool: "a", Event: "pinned"}}, false); err != nil {
			t.Fatal(err)
		}
		again := a
		again.Digest = "d2"
		if err := s.PutToolPins(ctx, []ToolPin{again}, []PinEvent{{Server: "s", Tool: "a", Event: "pinned"}}, false); err != nil {
			t.Fatal(err)
		}
		pins, err := s.ListToolPins(ctx, "s")
		if err != nil || len(pins) != 2 || pins[0].Tool != "" || pins[1].Digest != "d1" || !reflect.DeepEqual(pins[1].Parts, a.Parts) {
			t.Fatalf("after a second first sighting: %+v %v", pins, err)
		}
		q := a
		q.Quarantine, q.PendingDigest, q.Changed = "changed", "d2", []string{"description"}
		if err := s.PutToolPins(ctx, []ToolPin{q}, []PinEvent{{Server: "s", Tool: "a", Event: "quarantined", Changed: q.Changed}}, true); err != nil {
			t.Fatal(err)
		}
		pins, _ = s.ListToolPins(ctx, "s")
		if pins[1].Quarantine != "changed" || pins[1].PendingDigest != "d2" || !reflect.DeepEqual(pins[1].Changed, []string{"description"}) {
			t.Fatalf("after an overwrite: %+v", pins[1])
		}
		events, err := s.ListPinEvents(ctx, "s", 10)
		if err != nil || len(events) != 2 || events[0].Event != "quarantined" && events[1].Event != "quarantined" {
			t.Fatalf("events: %+v %v", events, err)
		}
		if n, err := s.DeleteToolPins(ctx, "s", []string{"a"}, []PinEvent{{Server: "s", Tool: "a", Event: "unpinned"}}); err != nil || n != 1 {
			t.Fatalf("delete a: %d %v", n, err)
		}
		if n, err := s.DeleteToolPins(ctx, "s", nil, nil); err != nil || n != 1 {
			t.Fatalf("delete the server's rows: %d %v", n, err)
		}
		if all, err := s.ListToolPins(ctx, ""); err != nil || len(all) != 1 || all[0].Server != "other" {
			t.Fatalf("left: %+v %v", all, err)
		}
	})
}
