package identity

import (
	"cmp"
	"net/http"
	"slices"
	"strings"
)

// HeaderAPIKey is LiteLLM's gateway-credential header, preferred over Authorization.
const HeaderAPIKey = "X-Litellm-Api-Key"

// Credential extracts the gateway credential: a non-empty x-litellm-api-key (with or without
// "Bearer ") wins; else Authorization: Bearer <key>. fromAuthorization reports which, because
// when the key came from Authorization that header must never be forwarded upstream.
func Credential(r *http.Request) (key string, fromAuthorization bool) {
	if k := stripBearer(strings.TrimSpace(r.Header.Get(HeaderAPIKey)), true); k != "" {
		return k, false
	}
	if k := stripBearer(strings.TrimSpace(r.Header.Get("Authorization")), false); k != "" {
		return k, true
	}
	return "", false
}

// stripBearer removes a case-insensitive "Bearer " scheme. With optional false the scheme is
// required and anything else (Basic, a bare token) yields "".
func stripBearer(v string, optional bool) string {
	const scheme = "bearer"
	if len(v) > len(scheme) && strings.EqualFold(v[:len(scheme)], scheme) && (v[len(scheme)] == ' ' || v[len(scheme)] == '\t') {
		return strings.TrimSpace(v[len(scheme):])
	}
	if strings.EqualFold(v, scheme) {
		return ""
	}
	if optional {
		return v
	}
	return ""
}

// isCredentialHeader reports whether the (lower-case) header name may carry a secret: it
// contains auth, token, secret, key, cookie, password, passwd, credential, session or signature,
// and is not one of the harmless exceptions (idempotency keys).
func isCredentialHeader(name string) bool {
	switch name {
	case "idempotency-key", "x-idempotency-key":
		return false
	}
	for _, w := range [...]string{
		"auth", "token", "secret", "key", "cookie", "password", "passwd", "credential", "session", "signature",
	} {
		if strings.Contains(name, w) {
			return true
		}
	}
	return false
}

// Bounds on the headers posted to the webhook.
const (
	maxWebhookHeaders     = 64       // headers forwarded at most
	maxWebhookHeaderBytes = 16 << 10 // names plus values, in bytes
)

// webhookHeaders returns the request's non-credential headers, names lower-cased and repeated
// values joined with ", ". At most maxWebhookHeaders headers totalling maxWebhookHeaderBytes are
// kept, the smallest first (ties by name), so a flood of large headers cannot crowd out the
// small ones webhooks key on; the rest are dropped.
func webhookHeaders(h http.Header) map[string]string {
	type kv struct{ name, val string }
	kept := make([]kv, 0, min(len(h), maxWebhookHeaders*2))
	for name, vals := range h {
		lname := strings.ToLower(name)
		if isCredentialHeader(lname) {
			continue
		}
		kept = append(kept, kv{lname, strings.Join(vals, ", ")})
	}
	slices.SortFunc(kept, func(a, b kv) int {
		if c := cmp.Compare(len(a.name)+len(a.val), len(b.name)+len(b.val)); c != 0 {
			return c
		}
		return strings.Compare(a.name, b.name)
	})
	out := make(map[string]string, min(len(kept), maxWebhookHeaders))
	budget := maxWebhookHeaderBytes
	for _, e := range kept {
		n := len(e.name) + len(e.val)
		if len(out) == maxWebhookHeaders || n > budget {
			break
		}
		budget -= n
		out[e.name] = e.val
	}
	return out
}
