package auth

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// ProblemKind classifies a Problem.
type ProblemKind int

const (
	// ProblemRenewalFailed: a token request failed; Err says how.
	ProblemRenewalFailed ProblemKind = iota + 1
	// ProblemScopeNarrowed: a token was granted without some requested scopes.
	ProblemScopeNarrowed
)

// String names the kind.
func (k ProblemKind) String() string {
	switch k {
	case ProblemRenewalFailed:
		return "renewal_failed"
	case ProblemScopeNarrowed:
		return "scope_narrowed"
	}
	return fmt.Sprintf("ProblemKind(%d)", int(k))
}

// Problem is something a long-lived user of ClientCredentials should know
// about. It never contains a token or the client secret.
type Problem struct {
	// Kind says what happened.
	Kind ProblemKind
	// Err is the failure (ProblemRenewalFailed only).
	Err error
	// Missing lists requested scopes not granted (ProblemScopeNarrowed only).
	Missing []string
	// Gen numbers the completed mint attempt the problem is about (the
	// first is 1); compare it with Grant's.
	Gen uint64
	// Expired says no unexpired token was left when the problem was
	// reported.
	Expired bool
}

// Fatal reports whether the credential no longer covers what it was minted
// for: the grant lacks requested scopes, the token endpoint refused the
// client (HTTP 400, 401 or 403: invalid_client, invalid_grant,
// unauthorized_client, invalid_scope), or a failure left no unexpired
// token. A failure the endpoint may recover from (a 5xx, a timeout, a
// connection error) while the cached token is still valid is not fatal.
func (p Problem) Fatal() bool {
	switch p.Kind {
	case ProblemScopeNarrowed:
		return true
	case ProblemRenewalFailed:
		var te *TokenError
		if errors.As(p.Err, &te) {
			switch te.StatusCode {
			case http.StatusBadRequest, http.StatusUnauthorized, http.StatusForbidden:
				return true
			}
		}
		return p.Expired
	}
	return false
}

// String renders the problem for logs.
func (p Problem) String() string {
	if p.Kind == ProblemScopeNarrowed {
		return "oauth2 client_credentials: granted scopes lack " + strings.Join(p.Missing, " ")
	}
	if p.Err != nil {
		return p.Err.Error()
	}
	return p.Kind.String()
}

// Watch keeps a fresh token ready until ctx ends: it mints when there is no
// token and renews proactively at the renewal time even when nobody calls
// Token, retrying failures with backoff (1 s doubling to 30 s). Every
// completed mint, whoever triggered it, is reported to report when it
// failed (ProblemRenewalFailed) or granted fewer scopes than requested
// (ProblemScopeNarrowed); a mint completed before Watch started is reported
// once at start. report runs on Watch's goroutine. Watch starts no
// goroutines and returns when ctx ends; run it with `go`.
func (c *ClientCredentials) Watch(ctx context.Context, report func(Problem)) {
	const minBackoff, maxBackoff = time.Second, 30 * time.Second
	var seen uint64
	backoff := time.Duration(0)
	for {
		c.mu.Lock()
		gen, lastErr, missing := c.gen, c.lastErr, c.lastMiss
		cur, failedAt, changed := c.cur, c.failedAt, c.changed
		now := c.clock.Now()
		c.mu.Unlock()

		if gen != seen {
			seen = gen
			switch {
			case lastErr != nil:
				backoff = min(max(2*backoff, minBackoff), maxBackoff)
				report(Problem{Kind: ProblemRenewalFailed, Err: lastErr, Gen: gen, Expired: !cur.valid(now)})
			case len(missing) > 0:
				backoff = 0
				report(Problem{Kind: ProblemScopeNarrowed, Missing: append([]string(nil), missing...), Gen: gen})
			default:
				backoff = 0
			}
		}

		var due time.Time // zero: nothing scheduled, wait for a change
		switch {
		case cur == nil || !cur.fresh(now):
			due = now
			if !failedAt.IsZero() && backoff > 0 {
				due = failedAt.Add(backoff)
			}
		case !cur.renewAt.IsZero():
			due = cur.renewAt
		}
		if cur != nil && !due.IsZero() {
			// A token with an absurdly short life must not turn Watch into a
			// tight mint loop.
			due = latest(due, cur.issued.Add(minBackoff))
		}

		if !due.IsZero() && !now.Before(due) {
			// obtain re-checks under the lock, so a renewal someone else just
			// completed is not repeated.
			_, _ = c.obtain(ctx, false) // the outcome is reported via gen
			if ctx.Err() != nil {
				return
			}
			continue
		}
		var fire <-chan time.Time
		var timer Timer
		if !due.IsZero() {
			timer = c.clock.NewTimer(due.Sub(now))
			fire = timer.C()
		}
		select {
		case <-ctx.Done():
		case <-changed:
		case <-fire:
		}
		if timer != nil {
			timer.Stop()
		}
		if ctx.Err() != nil {
			return
		}
	}
}

// latest returns the later of a and b.
func latest(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
