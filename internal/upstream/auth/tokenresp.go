package auth

import (
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/url"
	"strings"
	"time"
)

// maxTokenResponse bounds how much of a token endpoint answer is read.
const maxTokenResponse = 1 << 20

// maxLifetime caps expires_in so absurd values cannot overflow time math.
const maxLifetime = 365 * 24 * time.Hour

// ErrMalformedTokenResponse is wrapped by errors about a 2xx token endpoint
// answer that is not a usable bearer token response.
var ErrMalformedTokenResponse = errors.New("oauth2 client_credentials: malformed token response")

// TokenError is a token endpoint answer that refused to issue a token. It
// carries the HTTP status and, when the body was an RFC 6749 error object,
// its `error` code; never the body itself or any description text.
type TokenError struct {
	// StatusCode is the HTTP status of the answer.
	StatusCode int
	// Code is the RFC 6749 `error` field (e.g. "invalid_client"), or "".
	Code string
}

// Error renders the status and OAuth error code.
func (e *TokenError) Error() string {
	if e.Code != "" {
		return fmt.Sprintf("oauth2 client_credentials: token endpoint answered HTTP %d (%s)", e.StatusCode, e.Code)
	}
	return fmt.Sprintf("oauth2 client_credentials: token endpoint answered HTTP %d", e.StatusCode)
}

// tokenFields are the parts of a token endpoint answer the gateway uses.
type tokenFields struct {
	access    string
	tokenType string
	expiresIn string // decimal seconds as sent; "" when absent
	scope     *string
	refresh   string // refresh_token (authorization-code and refresh grants)
	errCode   string
}

// parseTokenBody decodes a token endpoint body: as a form when the media
// type says so, else as JSON, else (text/plain, as some providers send) as a
// form.
func parseTokenBody(contentType string, body []byte) (tokenFields, bool) {
	mt, _, _ := mime.ParseMediaType(contentType)
	if mt == "application/x-www-form-urlencoded" {
		return parseFormToken(body)
	}
	var raw struct {
		AccessToken string      `json:"access_token"`
		TokenType   string      `json:"token_type"`
		ExpiresIn   json.Number `json:"expires_in"`
		Scope       *string     `json:"scope"`
		Error       string      `json:"error"`
		Refresh     string      `json:"refresh_token"`
	}
	if err := json.Unmarshal(body, &raw); err != nil {
		if mt == "text/plain" {
			return parseFormToken(body)
		}
		return tokenFields{}, false
	}
	return tokenFields{
		access:    raw.AccessToken,
		tokenType: raw.TokenType,
		expiresIn: raw.ExpiresIn.String(),
		scope:     raw.Scope,
		errCode:   raw.Error,
		refresh:   raw.Refresh,
	}, true
}

// parseFormToken decodes a form-encoded token endpoint body.
func parseFormToken(body []byte) (tokenFields, bool) {
	vals, err := url.ParseQuery(string(body))
	if err != nil {
		return tokenFields{}, false
	}
	f := tokenFields{
		access:    vals.Get("access_token"),
		tokenType: vals.Get("token_type"),
		expiresIn: vals.Get("expires_in"),
		errCode:   vals.Get("error"),
		refresh:   vals.Get("refresh_token"),
	}
	if vals.Has("scope") {
		s := vals.Get("scope")
		f.scope = &s
	}
	return f, true
}

// lifetime converts expires_in to a duration; 0 means unknown (absent,
// unparsable, zero or negative), which the cache treats as "valid until
// invalidated".
func lifetime(expiresIn string) time.Duration {
	if expiresIn == "" {
		return 0
	}
	secs, err := json.Number(expiresIn).Float64()
	if err != nil || secs <= 0 {
		return 0
	}
	if secs >= maxLifetime.Seconds() {
		return maxLifetime
	}
	return time.Duration(secs * float64(time.Second))
}

// safeErrorCode returns code when it is a plausible RFC 6749 error code
// (NQSCHAR, at most 64 bytes) that does not contain secret; else "".
func safeErrorCode(code, secret string) string {
	if code == "" || len(code) > 64 || (secret != "" && strings.Contains(code, secret)) {
		return ""
	}
	for i := 0; i < len(code); i++ {
		c := code[i]
		if c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			return ""
		}
	}
	return code
}

// minRenewAfter is the least age at which a token is renewed, unless its
// lifetime is under twice that (then it renews at half-life).
const minRenewAfter = 10 * time.Second

// renewalTimes returns when a token issued at issued with lifetime life
// should be renewed and when it expires; both zero when life is unknown.
// The renewal margin is max(20% of life, 60 s): long tokens renew at 80% of
// their life, medium ones 60 s before expiry, whichever is earlier. No
// token is renewed before min(minRenewAfter, half its life), so short ones
// are not re-minted on every call: a 70 s token renews at 10 s, a 60 s one
// at 10 s, a 10 s one at 5 s.
func renewalTimes(issued time.Time, life time.Duration) (renewAt, expiry time.Time) {
	if life <= 0 {
		return time.Time{}, time.Time{}
	}
	after := max(life-max(life/5, time.Minute), min(minRenewAfter, life/2))
	return issued.Add(after), issued.Add(life)
}

// missingScopes returns the requested scopes absent from granted (a
// space-separated RFC 6749 scope string), in request order.
func missingScopes(requested []string, granted string) []string {
	have := make(map[string]bool)
	for _, s := range strings.Fields(granted) {
		have[s] = true
	}
	var missing []string
	for _, s := range requested {
		if !have[s] {
			missing = append(missing, s)
		}
	}
	return missing
}

// redactedError hides a secret in a wrapped error's text while keeping the
// chain for errors.Is/As.
type redactedError struct {
	err    error
	secret string
}

// Error returns the wrapped text with the secret replaced.
func (r *redactedError) Error() string {
	return strings.ReplaceAll(r.err.Error(), r.secret, "[REDACTED]")
}

// Unwrap returns the wrapped error.
func (r *redactedError) Unwrap() error { return r.err }

// redact wraps err so that its text cannot contain secret.
func redact(err error, secret string) error {
	if err == nil || secret == "" || !strings.Contains(err.Error(), secret) {
		return err
	}
	return &redactedError{err: err, secret: secret}
}
