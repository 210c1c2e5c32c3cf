package auth

import (
	"net/http"
	"net/url"
)

// KnownAuthType reports whether authType is one this package can format
// (case-insensitive; "" counts as none).
func KnownAuthType(authType string) bool {
	_, ok := kindOf(authType)
	return ok
}

// Credential formats value for authType as Policy does and returns
// the default header it belongs in ("Authorization", or "X-API-Key" for
// api_key). It returns two empty strings for none, an unknown type, or a
// value that is empty after trimming.
func Credential(authType, value string) (header, formatted string) {
	k, ok := kindOf(authType)
	if !ok {
		return "", ""
	}
	formatted = k.format(value)
	if formatted == "" {
		return "", ""
	}
	return k.defaultHeader(), formatted
}

// ScrubRedirect removes Authorization, X-Api-Key and slot from req when a
// redirect from from to req.URL would not keep credentials, and reports
// whether it did: the scrubbing that CheckRedirect's refusal stands in for.
func ScrubRedirect(req *http.Request, from *url.URL, slot string) bool {
	if CredentialsSurvive(from, req.URL) {
		return false
	}
	StripCredentialHeaders(req.Header, slot)
	return true
}
