package store

import (
	"regexp"
	"testing"
	"time"
)

// NewID is a random (version 4) UUID and NewTimeID a time-ordered (version 7) one whose
// first 48 bits are the unix milliseconds, so later rows sort after earlier ones.
func TestUUIDForms(t *testing.T) {
	v4 := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	v7 := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	if id := NewID(); !v4.MatchString(id) {
		t.Fatalf("NewID() = %q, not a version 4 UUID", id)
	}
	at := time.UnixMilli(0x0123456789ab)
	id := NewTimeID(at)
	if !v7.MatchString(id) || id[:13] != "01234567-89ab" {
		t.Fatalf("NewTimeID = %q, want a version 7 UUID starting with the milliseconds", id)
	}
	if later := NewTimeID(at.Add(time.Millisecond)); later <= id {
		t.Fatalf("NewTimeID a millisecond later = %q, not after %q", later, id)
	}
	seen := map[string]bool{}
	for range 20000 { // one millisecond: only the random bits tell them apart
		id := NewTimeID(at)
		if seen[id] || !v7.MatchString(id) {
			t.Fatalf("NewTimeID repeated or malformed within a millisecond: %q", id)
		}
		seen[id] = true
	}
}
