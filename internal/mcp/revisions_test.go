package mcp

import (
	"slices"
	"testing"
)

func TestRevisionLists(t *testing.T) {
	all := Revisions()
	want := []string{"2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"}
	if !slices.Equal(all, want) {
		t.Fatalf("Revisions() = %v, want %v", all, want)
	}
	all[0] = "mutated"
	if Revisions()[0] != Latest {
		t.Fatal("Revisions must return a fresh slice")
	}
	leg := LegacyRevisions()
	if !slices.Equal(leg, want[1:]) {
		t.Fatalf("LegacyRevisions() = %v", leg)
	}
	leg[0] = "mutated"
	if LegacyRevisions()[0] != LatestLegacy {
		t.Fatal("LegacyRevisions must return a fresh slice")
	}
	for _, v := range Revisions() {
		if !IsKnownRevision(v) {
			t.Errorf("IsKnownRevision(%q) = false", v)
		}
		if got, want := IsModern(v), v == Latest; got != want {
			t.Errorf("IsModern(%q) = %v", v, got)
		}
	}
	for i := 1; i < len(want); i++ {
		if want[i-1] <= want[i] {
			t.Errorf("not newest first at %d", i)
		}
	}
	if LatestLegacy != V20251125 || Latest != V20260728 || AssumedRevisionWithoutHeader != V20250326 {
		t.Fatal("constant drift")
	}
}

func TestRevisionClassification(t *testing.T) {
	tests := []struct {
		v         string
		known     bool
		wellFormd bool
		modern    bool
		era       Era
	}{
		{"2024-11-05", true, true, false, EraLegacy},
		{"2025-03-26", true, true, false, EraLegacy},
		{"2025-06-18", true, true, false, EraLegacy},
		{"2025-11-25", true, true, false, EraLegacy},
		{"2026-07-28", true, true, true, EraModern},
		{"2026-07-27", false, true, false, EraLegacy},
		{"2026-07-29", false, true, true, EraModern},
		{"2027-01-01", false, true, true, EraModern},
		{"2099-12-31", false, true, true, EraModern},
		{"2024-10-07", false, true, false, EraLegacy},
		{"", false, false, false, EraUnknown},
		{"2026-7-28", false, false, false, EraUnknown},
		{"2026-07-28 ", false, false, false, EraUnknown},
		{" 2026-07-28", false, false, false, EraUnknown},
		{"2026/07/28", false, false, false, EraUnknown},
		{"2026-13-01", false, false, false, EraUnknown},
		{"2026-00-10", false, false, false, EraUnknown},
		{"2026-07-00", false, false, false, EraUnknown},
		{"2026-07-32", false, false, false, EraUnknown},
		{"9999-99-99", false, false, false, EraUnknown},
		{"latest", false, false, false, EraUnknown},
		{"2026-07-2a", false, false, false, EraUnknown},
		{"２026-07-28", false, false, false, EraUnknown},
	}
	for _, tt := range tests {
		if got := IsKnownRevision(tt.v); got != tt.known {
			t.Errorf("IsKnownRevision(%q) = %v", tt.v, got)
		}
		if got := WellFormedRevision(tt.v); got != tt.wellFormd {
			t.Errorf("WellFormedRevision(%q) = %v", tt.v, got)
		}
		if got := IsModern(tt.v); got != tt.modern {
			t.Errorf("IsModern(%q) = %v", tt.v, got)
		}
		if got := EraOf(tt.v); got != tt.era {
			t.Errorf("EraOf(%q) = %v, want %v", tt.v, got, tt.era)
		}
	}
}

func TestEraString(t *testing.T) {
	for e, want := range map[Era]string{EraUnknown: "unknown", EraLegacy: "legacy", EraModern: "modern", Era(7): "Era(7)"} {
		if got := e.String(); got != want {
			t.Errorf("Era(%d).String() = %q, want %q", e, got, want)
		}
	}
	if EraLegacy != 1 || EraModern != 2 {
		t.Fatal("era values changed")
	}
}
