package auth

import (
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"

	"github.com/mcpgw/mcpgw/internal/asciifold"
	"golang.org/x/net/http/httpguts"
)

// PolicyConfig is one server's outbound header configuration, as read from
// its mcp_servers entry.
type PolicyConfig struct {
	// AuthType is auth_type; "" means none.
	AuthType string
	// AuthValue is the static credential (auth_value / authentication_token),
	// used when Apply is given no per-request token.
	AuthValue string
	// HeaderName is auth_header_name: the header that carries the credential
	// instead of the type's default slot. Empty means the default slot.
	HeaderName string
	// StaticHeaders are sent on every request; names and values are trimmed.
	StaticHeaders map[string]string
}

// Policy computes the outbound headers of one upstream server. It is built
// once per server and is safe for concurrent use; Apply does no formatting
// beyond rendering a per-request token.
type Policy struct {
	kind   kind
	slot   string // canonical key of the credential header; "" for none
	custom bool   // slot came from auth_header_name
	static string // AuthValue rendered for kind; "" when there is none
	fixed  []fixedHeader
}

// fixedHeader is one trimmed, canonicalised static header.
type fixedHeader struct {
	key, value string
}

// ErrInvalidPolicy is wrapped by every NewPolicy error.
var ErrInvalidPolicy = errors.New("invalid upstream auth configuration")

// NewPolicy validates cfg and precomputes everything Apply needs. Errors
// name the offending field or header but never echo a value, since values
// may be credentials.
func NewPolicy(cfg PolicyConfig) (*Policy, error) {
	k, ok := kindOf(cfg.AuthType)
	if !ok {
		return nil, fmt.Errorf("%w: unknown auth_type %q", ErrInvalidPolicy, cfg.AuthType)
	}
	p := &Policy{kind: k, slot: k.defaultHeader()}
	if name := strings.TrimSpace(cfg.HeaderName); name != "" {
		if k == kindNone {
			return nil, fmt.Errorf("%w: auth_header_name is set but auth_type %q carries no credential", ErrInvalidPolicy, cfg.AuthType)
		}
		if !httpguts.ValidHeaderFieldName(name) {
			return nil, fmt.Errorf("%w: auth_header_name %q is not a valid header name", ErrInvalidPolicy, name)
		}
		p.slot, p.custom = name, true
	}
	p.slot = http.CanonicalHeaderKey(p.slot)
	p.static = k.format(cfg.AuthValue)
	if !httpguts.ValidHeaderFieldValue(p.static) {
		return nil, fmt.Errorf("%w: auth_value contains control characters", ErrInvalidPolicy)
	}
	seen := make(map[string]bool, len(cfg.StaticHeaders))
	for rawName, rawValue := range cfg.StaticHeaders {
		name, value := strings.TrimSpace(rawName), strings.TrimSpace(rawValue)
		if !httpguts.ValidHeaderFieldName(name) {
			return nil, fmt.Errorf("%w: static header name %q is not a valid header name", ErrInvalidPolicy, name)
		}
		if !httpguts.ValidHeaderFieldValue(value) {
			return nil, fmt.Errorf("%w: static header %q has control characters in its value", ErrInvalidPolicy, name)
		}
		key := http.CanonicalHeaderKey(name)
		if seen[key] {
			return nil, fmt.Errorf("%w: static header %q is configured twice", ErrInvalidPolicy, key)
		}
		seen[key] = true
		if p.custom && key == p.slot {
			// The configured slot belongs to the credential.
			continue
		}
		p.fixed = append(p.fixed, fixedHeader{key: key, value: value})
	}
	sort.Slice(p.fixed, func(i, j int) bool { return p.fixed[i].key < p.fixed[j].key })
	return p, nil
}

// CredentialHeader returns the canonical name of the header the credential
// is written to: the configured auth_header_name, else the type's default
// ("Authorization" or "X-Api-Key"); "" for auth_type none.
func (p *Policy) CredentialHeader() string { return p.slot }

// CustomSlot returns the canonical auth_header_name when one is configured,
// else "". Only a custom slot needs redirect scrubbing beyond Authorization.
func (p *Policy) CustomSlot() string {
	if p.custom {
		return p.slot
	}
	return ""
}

// HasStaticCredential reports whether AuthValue produced a credential, so
// Apply emits one even without a per-request token.
func (p *Policy) HasStaticCredential() bool { return p.static != "" }

// Apply writes the server's outbound headers into dst, overwriting entries
// of the same name:
//
//  1. the credential: token rendered for the auth type when token is
//     non-empty (a minted OAuth token or the caller's delegated token), else
//     the static auth_value; nothing for auth_type none;
//  2. injected per-caller headers (forwarded extra_headers), values trimmed
//     of spaces and tabs;
//  3. static headers.
//
// Later steps override earlier ones, so without a custom slot an injected
// or static Authorization overrides the credential (LiteLLM's long-standing
// precedence). With a custom slot, injected headers whose name equals the
// slot in any casing are dropped (static ones were dropped by NewPolicy):
// the credential always wins its own slot, while every other header,
// Authorization included, passes.
func (p *Policy) Apply(dst, injected http.Header, token string) {
	if p.kind != kindNone {
		cred := p.static
		if token != "" {
			cred = p.kind.format(token)
		}
		if cred != "" {
			dst[p.slot] = []string{cred}
		}
	}
	for name, values := range injected {
		if p.custom && asciifold.Equal(name, p.slot) {
			continue
		}
		vs := make([]string, len(values))
		for i, v := range values {
			vs[i] = strings.Trim(v, " \t")
		}
		dst[http.CanonicalHeaderKey(name)] = vs
	}
	for _, h := range p.fixed {
		dst[h.key] = []string{h.value}
	}
}

// StripCredentials deletes every header that may carry this server's
// credential from h: Authorization, X-Api-Key and the custom slot, in any
// casing of the map key.
func (p *Policy) StripCredentials(h http.Header) {
	StripCredentialHeaders(h, p.CustomSlot())
}

// StripCredentialHeaders deletes Authorization, X-Api-Key and slot (when
// non-empty) from h, matching map keys case-insensitively so non-canonical
// keys are removed too.
func StripCredentialHeaders(h http.Header, slot string) {
	for name := range h {
		if asciifold.Equal(name, HeaderAuthorization) || asciifold.Equal(name, HeaderAPIKey) ||
			(slot != "" && asciifold.Equal(name, slot)) {
			delete(h, name)
		}
	}
}
