package identity

import (
	"context"
	"time"
)

// StoredKey is what the authenticator needs to know about a key from the key store.
type StoredKey struct {
	UserID string
	TeamID string
	OrgID  string
	// Servers, AccessGroups and ToolPermissions are the key's object_permission, read as a
	// webhook identity's are.
	Servers         []string
	AccessGroups    []string
	ToolPermissions map[string][]string
	// Expires is when the key stops working (zero: never).
	Expires time.Time
	Blocked bool
}

// KeyLookup finds a stored key by the hex SHA-256 of its secret; found is false when there is
// none. An error is a store failure, answered with 503.
type KeyLookup func(ctx context.Context, keyHash string) (key StoredKey, found bool, err error)

// storeKey authenticates a key that is not the master key through the key store.
func (a *Authenticator) storeKey(ctx context.Context, keyHash string) (*Caller, error) {
	k, found, err := a.keys(ctx, keyHash)
	switch {
	case err != nil:
		a.log.WarnContext(ctx, "key store lookup failed; refusing with 503", "error", err.Error())
		return nil, errUnavailable()
	case !found:
		return nil, keyRefused("invalid credential: no such key (never issued or deleted)")
	case k.Blocked:
		return nil, keyRefused("key is blocked: an admin can unblock it with /key/unblock")
	case !k.Expires.IsZero() && !a.now().Before(k.Expires):
		return nil, keyRefused("key expired at " + k.Expires.UTC().Format(time.RFC3339))
	}
	c := &Caller{KeyHash: keyHash, UserID: k.UserID, TeamID: k.TeamID, OrgID: k.OrgID,
		Servers: nonEmpty(k.Servers), AccessGroups: nonEmpty(k.AccessGroups)}
	for server, tools := range k.ToolPermissions {
		if tools = nonEmpty(tools); server == "" || tools == nil {
			continue // as for a webhook identity: an empty entry restricts nothing
		}
		if c.ToolPermissions == nil {
			c.ToolPermissions = make(map[string][]string, len(k.ToolPermissions))
		}
		c.ToolPermissions[server] = tools
	}
	return c, nil
}

func keyRefused(msg string) *Error {
	return &Error{Status: 401, Challenge: `Bearer error="invalid_token"`, Message: msg}
}

// nonEmpty drops empty strings; an empty result is nil ("not set", as LiteLLM reads it).
func nonEmpty(list []string) []string {
	var out []string
	for _, s := range list {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}
