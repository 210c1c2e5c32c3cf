package main

import (
	"runtime/debug"
	"testing"
)

// TestSetGCPercent: serve runs with defaultGCPercent unless GOGC is set, which wins.
func TestSetGCPercent(t *testing.T) {
	orig := debug.SetGCPercent(77)
	defer debug.SetGCPercent(orig)
	setGCPercent(func(string) (string, bool) { return "", false })
	if got := debug.SetGCPercent(77); got != defaultGCPercent {
		t.Errorf("GOGC unset: GC percent %d, want %d", got, defaultGCPercent)
	}
	setGCPercent(func(k string) (string, bool) { return "150", k == "GOGC" })
	if got := debug.SetGCPercent(77); got != 77 {
		t.Errorf("GOGC set: GC percent changed to %d; the runtime's reading of GOGC must stand", got)
	}
}
