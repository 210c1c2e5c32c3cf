package config

import (
	"strings"

	"go.yaml.in/yaml/v3"
)

// ForwardIdentityJWT is the forward_identity value that sends a signed
// identity token to the server.
const ForwardIdentityJWT = "jwt"

// IdentitySettings are the general_settings keys of the signed identity sent
// to servers with forward_identity.
type IdentitySettings struct {
	// SigningKey (mcp_identity_signing_key) is a path to a PEM file of RSA
	// private keys, or the PEM itself (through os.environ/NAME); every key is
	// published, the last one signs. Empty: a per-process key is generated
	// when some server forwards identity (one replica only).
	SigningKey Secret
	// Issuer (mcp_identity_issuer) is the iss claim, the gateway's public
	// URL; empty means PROXY_BASE_URL.
	Issuer string
	// Header (mcp_identity_header) is the header carrying the token; empty
	// means X-MCP-Gateway-Identity.
	Header string
}

// identityKey reads one of the IdentitySettings keys; false when e is not one.
func (l *loader) identityKey(e entry, field string, s *IdentitySettings) bool {
	switch e.key {
	case "mcp_identity_signing_key":
		v, _ := l.str(e.v, field)
		s.SigningKey = Secret(strings.TrimSpace(v))
	case "mcp_identity_issuer":
		if v, ok := l.str(e.v, field); ok {
			v = strings.TrimSpace(v)
			if v != "" && !isHTTPURL(v) {
				l.errorf(e.v, "%s must be an http(s):// URL (the gateway's public URL)", field)
				return true
			}
			s.Issuer = v
		}
	case "mcp_identity_header":
		if v, ok := l.str(e.v, field); ok {
			v = strings.TrimSpace(v)
			if !validHeaderToken(v) {
				l.errorf(e.v, "%s must be a header name", field)
				return true
			}
			s.Header = v
		}
	default:
		return false
	}
	return true
}

// forwardIdentity reads mcp_servers.<name>.forward_identity: "jwt" (or
// true), or "none" (or false, or empty) for none.
func (l *loader) forwardIdentity(v *yaml.Node, field string) string {
	s, ok := l.str(v, field)
	if !ok {
		return ""
	}
	switch strings.ToLower(strings.TrimSpace(s)) {
	case ForwardIdentityJWT, "true":
		return ForwardIdentityJWT
	case "", "none", "false":
		return ""
	}
	l.errorf(v, "%s must be jwt or none", field)
	return ""
}

// validHeaderToken reports whether s is a non-empty RFC 9110 token.
func validHeaderToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0) {
			return false
		}
	}
	return true
}
