package auth

import (
	"errors"
	"testing"
	"time"
)

// Only what means the credential no longer covers its use is fatal: a
// narrowed grant, a refusal by the token endpoint, or a failure that left
// no unexpired token.
func TestProblemFatal(t *testing.T) {
	cases := []struct {
		name string
		p    Problem
		want bool
	}{
		{"narrowed", Problem{Kind: ProblemScopeNarrowed, Missing: []string{"write"}}, true},
		{"invalid_client", Problem{Kind: ProblemRenewalFailed, Err: &TokenError{StatusCode: 401, Code: "invalid_client"}}, true},
		{"invalid_grant", Problem{Kind: ProblemRenewalFailed, Err: &TokenError{StatusCode: 400, Code: "invalid_grant"}}, true},
		{"forbidden", Problem{Kind: ProblemRenewalFailed, Err: &TokenError{StatusCode: 403}}, true},
		{"unavailable, token valid", Problem{Kind: ProblemRenewalFailed, Err: &TokenError{StatusCode: 503}}, false},
		{"unavailable, token expired", Problem{Kind: ProblemRenewalFailed, Err: &TokenError{StatusCode: 503}, Expired: true}, true},
		{"connection error, token valid", Problem{Kind: ProblemRenewalFailed, Err: errors.New("connection refused")}, false},
		{"rate limited, token valid", Problem{Kind: ProblemRenewalFailed, Err: &TokenError{StatusCode: 429}}, false},
	}
	for _, tc := range cases {
		if got := tc.p.Fatal(); got != tc.want {
			t.Errorf("%s: Fatal() = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// Grant counts completed mints and says whether the cached token lacks a
// requested scope; Watch numbers its problems the same way.
func TestGrantAndProblemGen(t *testing.T) {
	e := newTokenEndpoint(t, jsonToken(70, "read write"))
	clock := newFakeClock()
	cc := e.newCC(t, clock, "read", "write")
	if gen, narrowed := cc.Grant(); gen != 0 || narrowed {
		t.Fatalf("before any mint: gen %d narrowed %v", gen, narrowed)
	}
	mustToken(t, cc)
	if gen, narrowed := cc.Grant(); gen != 1 || narrowed {
		t.Fatalf("after a full grant: gen %d narrowed %v", gen, narrowed)
	}
	e.set(jsonToken(70, "read"))
	problems, _ := startWatch(t, cc)
	eventually(t, "a renewal timer", func() bool { return clock.pending() == 1 })
	clock.Advance(11 * time.Second)
	p := <-problems
	if p.Kind != ProblemScopeNarrowed || p.Gen != 2 || !p.Fatal() {
		t.Fatalf("narrowed renewal reported as %+v", p)
	}
	if gen, narrowed := cc.Grant(); gen != 2 || !narrowed {
		t.Fatalf("after a narrowed grant: gen %d narrowed %v", gen, narrowed)
	}
}
