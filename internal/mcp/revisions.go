package mcp

import "strconv"

// Protocol revisions known to this package, and the era boundaries.
const (
	// V20241105 is the first released revision (HTTP+SSE transport, initialize handshake).
	V20241105 = "2024-11-05"
	// V20250326 introduced Streamable HTTP and the completions capability.
	V20250326 = "2025-03-26"
	// V20250618 removed batching, added elicitation and the MCP-Protocol-Version header.
	V20250618 = "2025-06-18"
	// V20251125 is the last legacy (handshake-based) revision; it added core tasks and URL elicitation.
	V20251125 = "2025-11-25"
	// V20260728 is the first modern (stateless, per-request _meta) revision.
	V20260728 = "2026-07-28"

	// LatestLegacy is the newest revision of the legacy era.
	LatestLegacy = V20251125
	// Latest is the newest revision this package knows.
	Latest = V20260728
	// FirstModern is the date from which a revision belongs to the modern era.
	FirstModern = V20260728

	// AssumedRevisionWithoutHeader is the revision a Streamable HTTP server may assume when a
	// request carries no MCP-Protocol-Version header.
	AssumedRevisionWithoutHeader = V20250326
)

// Revisions returns every known revision, newest first, in a fresh slice.
func Revisions() []string {
	return []string{V20260728, V20251125, V20250618, V20250326, V20241105}
}

// LegacyRevisions returns the known legacy revisions, newest first, in a fresh slice.
func LegacyRevisions() []string {
	return []string{V20251125, V20250618, V20250326, V20241105}
}

// IsKnownRevision reports whether v is exactly one of the revisions returned by Revisions.
func IsKnownRevision(v string) bool {
	switch v {
	case V20241105, V20250326, V20250618, V20251125, V20260728:
		return true
	}
	return false
}

// WellFormedRevision reports whether v has the shape YYYY-MM-DD with month 01–12 and day 01–31.
func WellFormedRevision(v string) bool {
	if len(v) != 10 || v[4] != '-' || v[7] != '-' {
		return false
	}
	for i := 0; i < len(v); i++ {
		if i == 4 || i == 7 {
			continue
		}
		if v[i] < '0' || v[i] > '9' {
			return false
		}
	}
	month := int(v[5]-'0')*10 + int(v[6]-'0')
	day := int(v[8]-'0')*10 + int(v[9]-'0')
	return month >= 1 && month <= 12 && day >= 1 && day <= 31
}

// IsModern reports whether v is a well-formed revision dated on or after 2026-07-28.
func IsModern(v string) bool {
	return WellFormedRevision(v) && v >= FirstModern
}

// Era is the protocol generation a revision belongs to.
type Era uint8

// EraUnknown is the zero Era, returned by EraOf for malformed revision strings.
const EraUnknown Era = 0

// The two eras.
const (
	// EraLegacy covers the handshake-based revisions (2025-11-25 and earlier).
	EraLegacy Era = iota + 1
	// EraModern covers the stateless revisions (2026-07-28 and later).
	EraModern
)

// String returns "legacy", "modern", "unknown", or Era(n) for out-of-range values.
func (e Era) String() string {
	switch e {
	case EraUnknown:
		return "unknown"
	case EraLegacy:
		return "legacy"
	case EraModern:
		return "modern"
	}
	return "Era(" + strconv.Itoa(int(e)) + ")"
}

// EraOf classifies a revision by date: modern from 2026-07-28, legacy before, EraUnknown if malformed.
func EraOf(revision string) Era {
	if !WellFormedRevision(revision) {
		return EraUnknown
	}
	if revision >= FirstModern {
		return EraModern
	}
	return EraLegacy
}
