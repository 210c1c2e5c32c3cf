package identity

import (
	"context"
	"strconv"
	"time"
)

// EndUserHeader names the end user a store key's request acts for (LiteLLM's header).
const EndUserHeader = "X-Litellm-End-User-Id"

// maxEndUserID bounds the x-litellm-end-user-id value a store key may send.
const maxEndUserID = 256

// StoredKey is what the authenticator needs to know about a key from the key store, with the
// levels it belongs to already resolved.
type StoredKey struct {
	// KeyAlias and TeamAlias are the key's key_alias and its team's team_alias.
	KeyAlias, TeamAlias string
	UserID              string
	TeamID              string
	OrgID               string
	// Role is the key's user's user_role ("" when the key has no user or the user none).
	Role string
	// Servers, AccessGroups, ToolPermissions and BlockedTools are the key's object_permission,
	// read as a webhook identity's are.
	Servers         []string
	AccessGroups    []string
	ToolPermissions map[string][]string
	BlockedTools    []string
	// Grants are the object_permission of the key's team, user, organisation and the request's
	// end user.
	Grants []Grant
	// KeyLimits and TeamLimits are the tool-call limits of the key and of its team.
	KeyLimits, TeamLimits Limits
	// Guardrails are the guardrail names the key's and its team's metadata ask for
	// (MetadataGuardrails).
	Guardrails []string
	// Expires is when the key stops working (zero: never).
	Expires time.Time
	Blocked bool
	// BlockedBy names a level that refuses every request of the key ("team", "end user"); ""
	// when none does.
	BlockedBy string
}

// KeyLookup finds a stored key by the hex SHA-256 of its secret and resolves its levels for a
// request acting for endUserID ("" for none); found is false when there is no such key. An
// error is a store failure, answered with 503.
type KeyLookup func(ctx context.Context, keyHash, endUserID string) (key StoredKey, found bool, err error)

// storeKey authenticates a key that is not the master key through the key store, for the end
// user named by the request's EndUserHeader.
func (a *Authenticator) storeKey(ctx context.Context, keyHash, endUser string) (*Caller, error) {
	if len(endUser) > maxEndUserID {
		return nil, &Error{Status: 403, Message: "x-litellm-end-user-id is longer than " + strconv.Itoa(maxEndUserID) + " bytes"}
	}
	k, found, err := a.keys(ctx, keyHash, endUser)
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
	case k.BlockedBy != "":
		return nil, &Error{Status: 403, Message: "the key's " + k.BlockedBy + " is blocked: an admin can unblock it"}
	}
	c := &Caller{KeyHash: keyHash, KeyAlias: k.KeyAlias, TeamAlias: k.TeamAlias, UserID: k.UserID, TeamID: k.TeamID, OrgID: k.OrgID, EndUserID: endUser,
		Role: k.Role, Servers: nonEmpty(k.Servers), AccessGroups: nonEmpty(k.AccessGroups),
		ToolPermissions: toolPermissions(k.ToolPermissions), BlockedTools: nonEmpty(k.BlockedTools),
		KeyLimits: k.KeyLimits, TeamLimits: k.TeamLimits, Guardrails: nonEmpty(k.Guardrails)}
	for _, g := range k.Grants {
		c.Grants = append(c.Grants, Grant{Level: g.Level, Servers: nonEmpty(g.Servers),
			AccessGroups: nonEmpty(g.AccessGroups), ToolPermissions: toolPermissions(g.ToolPermissions),
			BlockedTools: nonEmpty(g.BlockedTools)})
	}
	return c, nil
}

// toolPermissions drops empty entries: as for a webhook identity, an empty entry restricts
// nothing. An empty result is nil.
func toolPermissions(in map[string][]string) map[string][]string {
	var out map[string][]string
	for server, tools := range in {
		if tools = nonEmpty(tools); server == "" || tools == nil {
			continue
		}
		if out == nil {
			out = make(map[string][]string, len(in))
		}
		out[server] = tools
	}
	return out
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
