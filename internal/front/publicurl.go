package front

import (
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// PublicURL derives the gateway's public base URL (scheme://host[:port][/path], no trailing
// slash) for URLs it hands to clients: OAuth protected-resource metadata, authorization
// callbacks. A configured base wins; otherwise X-Forwarded-Proto and X-Forwarded-Host are
// believed only from a trusted proxy's address; otherwise the request's own Host and scheme.
// The zero value and nil derive everything from the request.
type PublicURL struct {
	base    string
	trusted []netip.Prefix
}

// NewPublicURL returns a PublicURL with the configured base (already checked by the config
// loader; "" for none) and the trusted proxies' prefixes.
func NewPublicURL(base string, trusted []netip.Prefix) *PublicURL {
	return &PublicURL{base: strings.TrimRight(base, "/"), trusted: trusted}
}

// Base returns the public base URL for a request.
func (p *PublicURL) Base(r *http.Request) string {
	if p != nil && p.base != "" {
		return p.base
	}
	scheme, host := "http", r.Host
	if r.TLS != nil {
		scheme = "https"
	}
	if p != nil && p.fromTrustedProxy(r) {
		if v := firstValue(r.Header.Get("X-Forwarded-Proto")); v == "http" || v == "https" {
			scheme = v
		}
		if v := firstValue(r.Header.Get("X-Forwarded-Host")); validHost(v) {
			host = v
		}
	}
	return scheme + "://" + strings.ToLower(host)
}

// fromTrustedProxy reports whether the connection's peer is in a trusted prefix.
func (p *PublicURL) fromTrustedProxy(r *http.Request) bool {
	if len(p.trusted) == 0 {
		return false
	}
	h, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		h = r.RemoteAddr
	}
	a, err := netip.ParseAddr(h)
	if err != nil {
		return false
	}
	a = a.Unmap()
	for _, pfx := range p.trusted {
		if pfx.Contains(a) {
			return true
		}
	}
	return false
}

// firstValue returns the first comma-separated element, trimmed and lower-cased: a chain of
// proxies appends, and the first one faced the client.
func firstValue(v string) string {
	v, _, _ = strings.Cut(v, ",")
	return strings.ToLower(strings.TrimSpace(v))
}

// validHost accepts host[:port] with no user info, path, query or spaces.
func validHost(h string) bool {
	if h == "" || len(h) > 255 || strings.ContainsAny(h, "/\\@?#% \t") {
		return false
	}
	host := h
	if hh, _, err := net.SplitHostPort(h); err == nil {
		host = hh
	}
	return host != ""
}
