package config

import (
	"net/netip"
	"net/url"
	"strings"
)

// ProxyBaseURLEnv is LiteLLM's environment variable naming the proxy's public base URL; it is
// used when general_settings.mcp_public_base_url is not set.
const ProxyBaseURLEnv = "PROXY_BASE_URL"

// PublicURLSettings say how the gateway names itself to clients (OAuth protected-resource
// metadata, authorization callbacks).
type PublicURLSettings struct {
	// BaseURL (mcp_public_base_url, else the PROXY_BASE_URL environment variable) is the
	// gateway's public base URL, scheme://host[:port][/path] without a trailing slash; empty
	// means derive it per request.
	BaseURL string
	// TrustedProxies (mcp_trusted_proxies) are the CIDRs (or single addresses) of reverse
	// proxies whose X-Forwarded-Proto and X-Forwarded-Host are believed; empty means none.
	TrustedProxies []netip.Prefix
}

// publicURLKey reads one of the PublicURLSettings keys; false when e is not one.
func (l *loader) publicURLKey(e entry, field string, p *PublicURLSettings) bool {
	switch e.key {
	case "mcp_public_base_url":
		s, ok := l.str(e.v, field)
		if !ok || s == "" {
			return true
		}
		base, ok := normalizeBaseURL(s)
		if !ok {
			l.errorf(e.v, "%s must be an absolute http(s) URL such as https://gw.example.com (no query or fragment)", field)
			return true
		}
		p.BaseURL = base
	case "mcp_trusted_proxies":
		for i, s := range l.strList(e.v, field) {
			pfx, ok := parsePrefix(strings.TrimSpace(s))
			if !ok {
				l.errorf(itemNode(e.v, i), "%s[%d] must be a CIDR such as 10.0.0.0/8 or an IP address", field, i)
				continue
			}
			p.TrustedProxies = append(p.TrustedProxies, pfx)
		}
	default:
		return false
	}
	return true
}

// publicURLEnv fills BaseURL from PROXY_BASE_URL when the file did not set it; a malformed
// value is an error naming the variable, never its value.
func (l *loader) publicURLEnv(p *PublicURLSettings) {
	if p.BaseURL != "" {
		return
	}
	v, ok := l.fileEnv[ProxyBaseURLEnv]
	if !ok && l.opts.LookupEnv != nil {
		v, ok = l.opts.LookupEnv(ProxyBaseURLEnv)
	}
	if !ok || strings.TrimSpace(v) == "" {
		return
	}
	base, good := normalizeBaseURL(v)
	if !good {
		l.errorAt(0, "environment variable %s must be an absolute http(s) URL such as https://gw.example.com", ProxyBaseURLEnv)
		return
	}
	p.BaseURL = base
}

// normalizeBaseURL checks an absolute http(s) URL without query, fragment or user info and
// returns it without a trailing slash.
func normalizeBaseURL(s string) (string, bool) {
	u, err := url.Parse(strings.TrimSpace(s))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" ||
		u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return "", false
	}
	u.Path = strings.TrimRight(u.Path, "/")
	u.RawPath = ""
	return u.String(), true
}

// parsePrefix reads a CIDR or a single IP address (as a /32 or /128).
func parsePrefix(s string) (netip.Prefix, bool) {
	if p, err := netip.ParsePrefix(s); err == nil {
		return p.Masked(), true
	}
	if a, err := netip.ParseAddr(s); err == nil {
		a = a.Unmap()
		return netip.PrefixFrom(a, a.BitLen()), true
	}
	return netip.Prefix{}, false
}
