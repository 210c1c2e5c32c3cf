package gateway

import (
	"iter"

	"github.com/mcpgw/mcpgw/internal/upstream/auth"
)

// headerAPIKey is identity.HeaderAPIKey in canonical form (a test holds
// them equal).
const headerAPIKey = "X-Litellm-Api-Key"

// NewCredentials returns the credentials a caller's request headers h
// (canonical keys) carry, sharing h: the gateway's own credential in it,
// x-litellm-api-key and, when authIsKey, Authorization, is never seen
// through them. bearer is the caller's own bearer token ("" when none, or
// when Authorization carried the gateway key).
func NewCredentials(h map[string][]string, authIsKey bool, bearer string) Credentials {
	return Credentials{header: h, omitAuth: authIsKey, Bearer: bearer}
}

// hidden reports whether header key (canonical) is never forwarded: the
// gateway's own credential, and for several servers at once the caller's
// credentials meant for one server (Authorization, x-mcp-auth).
func (c Credentials) hidden(key string) bool {
	switch key {
	case headerAPIKey:
		return true
	case "Authorization":
		return c.omitAuth || c.several
	case auth.HeaderMCPAuth:
		return c.several
	}
	return false
}

// Get returns the values of the caller's header key (canonical); nil for
// the gateway's own credential.
func (c Credentials) Get(key string) []string {
	if c.hidden(key) {
		return nil
	}
	return c.header[key]
}

// All yields the caller's headers that may be forwarded: all of them but
// the gateway's own credential.
func (c Credentials) All() iter.Seq2[string, []string] {
	return func(yield func(string, []string) bool) {
		for k, v := range c.header {
			if !c.hidden(k) && !yield(k, v) {
				return
			}
		}
	}
}

// WithoutAuthorization returns c for a request to several servers at once
// (a REST listing without server_id): without Authorization, x-mcp-auth
// nor the bearer token, which each mean one server.
func (c Credentials) WithoutAuthorization() Credentials {
	c.several, c.Bearer = true, ""
	return c
}

// Clone returns c with a copy of the headers it may forward, for what
// outlives the request they came with: the copy never holds the gateway's
// own credential.
func (c Credentials) Clone() Credentials {
	h := make(map[string][]string, len(c.header))
	for k, v := range c.All() {
		h[k] = append([]string(nil), v...)
	}
	c.header = h
	return c
}
