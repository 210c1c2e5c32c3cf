package auth

import (
	"encoding/base64"
	"strings"
	"unicode"

	"github.com/mcpgw/mcpgw/internal/asciifold"
)

// Auth types accepted in a server's auth_type.
const (
	// AuthNone sends no credential.
	AuthNone = "none"
	// AuthBearerToken sends a static auth_value as "Bearer <value>".
	AuthBearerToken = "bearer_token"
	// AuthOAuth2 sends a gateway-minted (client_credentials) token as "Bearer <token>".
	AuthOAuth2 = "oauth2"
	// AuthOAuth2TokenExchange is formatted like AuthOAuth2 (bearer family).
	AuthOAuth2TokenExchange = "oauth2_token_exchange"
	// AuthOAuthDelegate forwards the caller's own token, formatted like AuthOAuth2.
	AuthOAuthDelegate = "oauth_delegate"
	// AuthToken sends "token <value>" (GitHub-style).
	AuthToken = "token"
	// AuthBasic sends "Basic base64(user:pass)".
	AuthBasic = "basic"
	// AuthAPIKey sends the value verbatim in X-API-Key.
	AuthAPIKey = "api_key"
	// AuthAuthorization sends the value verbatim as the whole Authorization value.
	AuthAuthorization = "authorization"
)

// Default credential header names.
const (
	// HeaderAuthorization is the default slot of every type except api_key.
	HeaderAuthorization = "Authorization"
	// HeaderAPIKey is the default slot of api_key (canonical form "X-Api-Key").
	HeaderAPIKey = "X-API-Key"
)

// kind is the formatting family of an auth type.
type kind uint8

const (
	kindNone kind = iota
	kindBearer
	kindToken
	kindBasic
	kindAPIKey
	kindVerbatim
)

// kindOf maps an auth_type (case-insensitive, surrounding space ignored, ""
// meaning none) to its formatting family.
func kindOf(authType string) (kind, bool) {
	switch strings.ToLower(strings.TrimSpace(authType)) {
	case "", AuthNone:
		return kindNone, true
	case AuthBearerToken, AuthOAuth2, AuthOAuth2TokenExchange, AuthOAuthDelegate:
		return kindBearer, true
	case AuthToken:
		return kindToken, true
	case AuthBasic:
		return kindBasic, true
	case AuthAPIKey:
		return kindAPIKey, true
	case AuthAuthorization:
		return kindVerbatim, true
	}
	return kindNone, false
}

// defaultHeader is the slot a kind writes when no auth_header_name is set.
func (k kind) defaultHeader() string {
	switch k {
	case kindNone:
		return ""
	case kindAPIKey:
		return HeaderAPIKey
	}
	return HeaderAuthorization
}

// format renders value for kind k. The value is trimmed of surrounding
// whitespace first (leading/trailing whitespace is not part of an HTTP field
// value, and h11-style peers reject it); an empty result means "no header".
func (k kind) format(value string) string {
	v := strings.TrimSpace(value)
	if v == "" {
		return ""
	}
	switch k {
	case kindBearer:
		return "Bearer " + StripAuthScheme(v, "Bearer")
	case kindToken:
		return "token " + StripAuthScheme(v, "token")
	case kindBasic:
		return "Basic " + basicCredentials(v)
	case kindAPIKey, kindVerbatim:
		return v
	}
	return ""
}

// StripAuthScheme removes a leading auth scheme from value. Leading
// whitespace is always trimmed; the scheme is matched ASCII
// case-insensitively and only when followed by at least one space or tab,
// all of which are removed; whatever follows is kept as is (trailing
// whitespace included). When the scheme is absent, or nothing follows the
// separator, the left-trimmed value is returned unchanged.
func StripAuthScheme(value, scheme string) string {
	s := strings.TrimLeftFunc(value, unicode.IsSpace)
	n := len(scheme)
	if n == 0 || len(s) <= n || !asciifold.Equal(s[:n], scheme) {
		return s
	}
	rest := s[n:]
	i := 0
	for i < len(rest) && (rest[i] == ' ' || rest[i] == '\t') {
		i++
	}
	if i == 0 || i == len(rest) {
		return s
	}
	return rest[i:]
}

// basicCredentials returns the base64 part of a Basic credential for v
// (already trimmed). A "Basic "-schemed or bare value that is valid
// standard base64 decoding to something with a ':' is already encoded and is
// kept verbatim; anything else is a raw user:pass and is encoded.
func basicCredentials(v string) string {
	rest := StripAuthScheme(v, "Basic")
	if alreadyEncodedBasic(rest) {
		return rest
	}
	return base64.StdEncoding.EncodeToString([]byte(rest))
}

// alreadyEncodedBasic reports whether s is strict standard base64 whose
// decoding contains ':'. A raw user:pass always contains ':', which is not
// in the base64 alphabet, so the two shapes cannot be confused.
func alreadyEncodedBasic(s string) bool {
	if len(s) < 4 || len(s)%4 != 0 {
		return false
	}
	b, err := base64.StdEncoding.Strict().DecodeString(s)
	return err == nil && strings.IndexByte(string(b), ':') >= 0
}
