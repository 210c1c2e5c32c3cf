package identity

import (
	"net/http"
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
// and is not one of the harmless exceptions (idempotency keys); or it is a header a caller
// addresses to one upstream (x-mcp-{server}-{header}), whatever its name after the server:
// every x-mcp-* header but the gateway's own x-mcp-servers and x-mcp-access-groups.
func isCredentialHeader(name string) bool {
	switch name {
	case "idempotency-key", "x-idempotency-key":
		return false
	case "x-mcp-servers", "x-mcp-access-groups":
		return false
	}
	if strings.HasPrefix(name, "x-mcp-") {
		return true
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
// values joined with ", ", and false when there are more than maxWebhookHeaders of them or they
// total more than maxWebhookHeaderBytes: such a request is refused rather than trimmed, since a
// caller choosing what to send could otherwise crowd out the headers a webhook keys on (a
// proxy's X-Forwarded-For, a tenant header).
func webhookHeaders(h http.Header) (map[string]string, bool) {
	out := make(map[string]string, min(len(h), maxWebhookHeaders))
	budget := maxWebhookHeaderBytes
	for name, vals := range h {
		lname := strings.ToLower(name)
		if isCredentialHeader(lname) {
			continue
		}
		v := strings.Join(vals, ", ")
		budget -= len(lname) + len(v)
		if len(out) == maxWebhookHeaders || budget < 0 {
			return nil, false
		}
		out[lname] = v
	}
	return out, true
}
