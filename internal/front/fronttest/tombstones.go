// Package fronttest holds the contract tests that every implementation of
// the front's seams must pass; an implementation's own tests call them.
package fronttest

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/mcpgw/mcpgw/internal/front"
)

// Tombstones runs the front.Tombstones contract against stores built by
// newStore: each call returns an empty store that holds at least 1000 ids.
func Tombstones(t *testing.T, newStore func() front.Tombstones) {
	ctx := context.Background()
	hour := time.Now().Add(time.Hour)
	cases := []struct {
		name   string
		bury   map[string]time.Time // id → until, buried in no particular order
		ask    string
		buried bool
	}{
		{name: "never buried", ask: "a", buried: false},
		{name: "buried", bury: map[string]time.Time{"a": hour}, ask: "a", buried: true},
		{name: "another id buried", bury: map[string]time.Time{"b": hour}, ask: "a", buried: false},
		{name: "until passed", bury: map[string]time.Time{"a": time.Now().Add(-time.Second)}, ask: "a", buried: false},
		{name: "ids are exact", bury: map[string]time.Time{"ab": hour, "a\x00": hour}, ask: "a", buried: false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := newStore()
			for id, until := range tc.bury {
				if err := s.Bury(ctx, id, until); err != nil {
					t.Fatalf("Bury(%q): %v", id, err)
				}
			}
			got, err := s.Buried(ctx, tc.ask)
			if err != nil || got != tc.buried {
				t.Fatalf("Buried(%q) = %v, %v; want %v", tc.ask, got, err, tc.buried)
			}
		})
	}
	t.Run("burying again keeps the first record", func(t *testing.T) {
		s := newStore()
		mustBury(t, s, "a", hour)
		mustBury(t, s, "a", time.Now().Add(-time.Second))
		if got, err := s.Buried(ctx, "a"); err != nil || !got {
			t.Fatalf("Buried = %v, %v after a second Bury with a past until; want true", got, err)
		}
	})
	t.Run("forgotten once until passes", func(t *testing.T) {
		s := newStore()
		mustBury(t, s, "a", time.Now().Add(200*time.Millisecond))
		if got, err := s.Buried(ctx, "a"); err != nil || !got {
			t.Fatalf("Buried = %v, %v before until; want true", got, err)
		}
		deadline := time.Now().Add(3 * time.Second)
		for {
			got, err := s.Buried(ctx, "a")
			if err != nil {
				t.Fatal(err)
			}
			if !got {
				return
			}
			if time.Now().After(deadline) {
				t.Fatal("still buried long after until")
			}
			time.Sleep(20 * time.Millisecond)
		}
	})
	t.Run("concurrent use", func(t *testing.T) {
		s := newStore()
		var wg sync.WaitGroup
		for g := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range 100 {
					id := fmt.Sprintf("g%d-%d", g, i)
					if err := s.Bury(ctx, id, hour); err != nil {
						t.Errorf("Bury: %v", err)
						return
					}
					if got, err := s.Buried(ctx, id); err != nil || !got {
						t.Errorf("Buried(%q) = %v, %v right after Bury", id, got, err)
						return
					}
				}
			}()
		}
		wg.Wait()
		for g := range 8 {
			for i := range 100 {
				if got, err := s.Buried(ctx, fmt.Sprintf("g%d-%d", g, i)); err != nil || !got {
					t.Fatalf("Buried(g%d-%d) = %v, %v after all Bury calls", g, i, got, err)
				}
			}
		}
	})
}

func mustBury(t *testing.T, s front.Tombstones, id string, until time.Time) {
	t.Helper()
	if err := s.Bury(context.Background(), id, until); err != nil {
		t.Fatalf("Bury(%q): %v", id, err)
	}
}
