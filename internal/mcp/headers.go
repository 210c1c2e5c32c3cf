package mcp

import (
	"encoding/base64"
	"errors"
	"strings"
	"unicode/utf8"
)

// HTTP header names used by MCP (names are case-insensitive on the wire; these are the canonical spellings).
const (
	// HeaderProtocolVersion carries the revision on every POST (2025-06-18 on); must equal _meta protocolVersion (modern).
	HeaderProtocolVersion = "MCP-Protocol-Version"
	// HeaderMethod mirrors the body method on modern request POSTs.
	HeaderMethod = "Mcp-Method"
	// HeaderName mirrors params.name / params.uri (see NameParam) on modern request POSTs.
	HeaderName = "Mcp-Name"
	// HeaderSessionID is the legacy Streamable HTTP session header (ignored by modern servers).
	HeaderSessionID = "Mcp-Session-Id"
	// HeaderParamPrefix starts the headers that mirror x-mcp-header annotated tool arguments.
	HeaderParamPrefix = "Mcp-Param-"
	// HeaderLastEventID resumes a legacy SSE stream (ignored by modern servers).
	HeaderLastEventID = "Last-Event-ID"

	// XMCPHeader is the JSON Schema annotation on a tool input property that requests an Mcp-Param-{Name} header.
	XMCPHeader = "x-mcp-header"
	// MaxSafeInteger bounds integer arguments mirrored into Mcp-Param-* headers (2^53−1).
	MaxSafeInteger int64 = 1<<53 - 1
	// MaxSessionIDLen is the longest Mcp-Session-Id ValidSessionID accepts.
	MaxSessionIDLen = 1024

	headerB64Prefix = "=?base64?"
	headerB64Suffix = "?="
)

// Errors returned by DecodeHeaderValue; each is a header validation failure (HTTP 400, -32020).
var (
	// ErrHeaderInvalidChar means a plain value holds a control character or a non-ASCII byte.
	ErrHeaderInvalidChar = errors.New("mcp: header value contains invalid characters")
	// ErrHeaderBase64 means the text inside =?base64?…?= is not valid padded standard base64.
	ErrHeaderBase64 = errors.New("mcp: header value has invalid base64 encoding")
	// ErrHeaderUTF8 means a base64-wrapped value does not decode to valid UTF-8.
	ErrHeaderUTF8 = errors.New("mcp: header value does not decode to valid UTF-8")
)

// ParamHeader returns the header name for an x-mcp-header annotation: "Mcp-Param-" + name.
func ParamHeader(name string) string { return HeaderParamPrefix + name }

// ValidParamHeaderName reports whether name is a usable x-mcp-header value: non-empty, RFC 9110 tchar only.
func ValidParamHeaderName(name string) bool {
	if name == "" {
		return false
	}
	for i := 0; i < len(name); i++ {
		if !isTChar(name[i]) {
			return false
		}
	}
	return true
}

func isTChar(c byte) bool {
	if isASCIIAlnum(c) {
		return true
	}
	switch c {
	case '!', '#', '$', '%', '&', '\'', '*', '+', '-', '.', '^', '_', '`', '|', '~':
		return true
	}
	return false
}

// EncodeHeaderValue returns s as an Mcp-Name / Mcp-Param-* header value: s itself when it is safe
// plain text (only 0x20–0x7E, no leading or trailing space, and not itself of the form
// =?base64?…?=), otherwise "=?base64?" + standard padded base64 of s + "?=". The result never
// needs trimming, so DecodeHeaderValue(EncodeHeaderValue(s)) == s for every valid UTF-8 s.
func EncodeHeaderValue(s string) string {
	if plainHeaderSafe(s) {
		return s
	}
	return headerB64Prefix + base64.StdEncoding.EncodeToString([]byte(s)) + headerB64Suffix
}

// DecodeHeaderValue reverses EncodeHeaderValue on a received value: it trims surrounding SP/HTAB,
// rejects control characters and non-ASCII bytes, and unwraps =?base64?…?= (lowercase markers only;
// =?BASE64?…?= stays literal). The wrapped payload must be canonical padded standard base64 of
// valid UTF-8.
func DecodeHeaderValue(s string) (string, error) {
	s = strings.Trim(s, " \t")
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return "", ErrHeaderInvalidChar
		}
	}
	inner, ok := unwrapBase64(s)
	if !ok {
		return s, nil
	}
	b, err := base64.StdEncoding.Strict().DecodeString(inner)
	if err != nil {
		return "", ErrHeaderBase64
	}
	if !utf8.Valid(b) {
		return "", ErrHeaderUTF8
	}
	return string(b), nil
}

// unwrapBase64 returns the text between the markers when s is =?base64?…?= (markers not overlapping).
func unwrapBase64(s string) (string, bool) {
	if len(s) < len(headerB64Prefix)+len(headerB64Suffix) ||
		!strings.HasPrefix(s, headerB64Prefix) || !strings.HasSuffix(s, headerB64Suffix) {
		return "", false
	}
	return s[len(headerB64Prefix) : len(s)-len(headerB64Suffix)], true
}

// plainHeaderSafe reports whether s can be sent as is and read back unchanged by DecodeHeaderValue.
func plainHeaderSafe(s string) bool {
	if s == "" {
		return true
	}
	if s[0] == ' ' || s[len(s)-1] == ' ' {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return false
		}
	}
	_, wrapped := unwrapBase64(s)
	return !wrapped
}

// ValidSessionID reports whether s is a usable Mcp-Session-Id: 1–MaxSessionIDLen bytes of visible ASCII (0x21–0x7E).
func ValidSessionID(s string) bool {
	if s == "" || len(s) > MaxSessionIDLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < 0x21 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

// singleHeaders are the MCP headers a request may carry at most once: a
// second copy could make a check read one value and a forwarder another.
var singleHeaders = [...]string{HeaderProtocolVersion, HeaderMethod, HeaderName, HeaderSessionID}

// RepeatedHeader returns the name of the first MCP header that h carries
// more than once (MCP-Protocol-Version, Mcp-Method, Mcp-Name, Mcp-Session-Id
// or any Mcp-Param-*), or "". Keys of h must be canonical, as net/http makes
// them.
func RepeatedHeader(h map[string][]string) string {
	for _, name := range singleHeaders {
		if len(h[canonicalMCP(name)]) > 1 {
			return name
		}
	}
	for k, v := range h {
		if len(v) > 1 && len(k) > len(HeaderParamPrefix) && strings.EqualFold(k[:len(HeaderParamPrefix)], HeaderParamPrefix) {
			return k
		}
	}
	return ""
}

// canonicalMCP returns the canonical MIME form of one of singleHeaders.
func canonicalMCP(name string) string {
	if name == HeaderProtocolVersion {
		return "Mcp-Protocol-Version"
	}
	return name
}
