package gateway

import (
	"iter"
	"net/http"

	"github.com/mcpgw/mcpgw/internal/identity"
)

// NewCredentials returns the credentials a caller's request headers h
// (canonical keys) carry, sharing h: the gateway's own credential in it,
// x-litellm-api-key and, when authIsKey, Authorization, is never seen
// through them. bearer is the caller's own bearer token ("" when none, or
// when Authorization carried the gateway key).
func NewCredentials(h map[string][]string, authIsKey bool, bearer string) Credentials {
	return Credentials{header: h, omitAuth: authIsKey, Bearer: bearer}
}

// hidden reports whether header key (canonical) is the gateway's own
// credential, never forwarded.
func (c Credentials) hidden(key string) bool {
	return key == http.CanonicalHeaderKey(identity.HeaderAPIKey) || (c.omitAuth && key == "Authorization")
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

// WithoutAuthorization returns c without Authorization nor the bearer
// token (a listing over several servers forwards neither).
func (c Credentials) WithoutAuthorization() Credentials {
	c.omitAuth, c.Bearer = true, ""
	return c
}

// Clone returns c with a copy of the headers, for what outlives the
// request they came with.
func (c Credentials) Clone() Credentials {
	c.header = http.Header(c.header).Clone()
	return c
}
