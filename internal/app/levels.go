package app

import (
	"context"
	"slices"

	"github.com/mcpgw/mcpgw/internal/identity"
	"github.com/mcpgw/mcpgw/internal/policy"
	"github.com/mcpgw/mcpgw/internal/store"
)

// keyLookup is the authenticator's view of the store (nil without one): a key with the levels
// it belongs to resolved, every read through the store's short-lived lookup cache.
//
// Levels: the key's team (a blocked team refuses the key), its user (whose user_role becomes
// the caller's role), the organisations of the key and of its team (ceilings both), and the
// end user the request names (a blocked end user refuses the key; one not in the store is a
// level without lists). A team or organisation the key names that no longer exists denies
// every server rather than dropping the ceiling. The key's and its team's limits (rpm_limit,
// max_parallel_requests, mcp_rpm_limit) are carried as they are; the rules that combine them
// are applied where tool calls are admitted (callerLimits). A user that does not exist is no level: keys
// may name users never created through /user/new, as in LiteLLM.
func keyLookup(st *store.Store) identity.KeyLookup {
	if st == nil {
		return nil
	}
	memo := &keyMemo{}
	return func(ctx context.Context, hash, endUser string) (identity.StoredKey, bool, error) {
		found := true // only keys found are remembered
		k, err := memo.load(ctx, st, keyMemoKey{hash, endUser}, st.Now(), func(ctx context.Context) (identity.StoredKey, bool, error) {
			k, ok, err := resolveKey(ctx, st, hash, endUser)
			found = ok
			return k, ok, err
		})
		if err != nil {
			return identity.StoredKey{}, false, err
		}
		return k, found, nil
	}
}

// resolveKey is keyLookup's answer read from the store's lookups.
func resolveKey(ctx context.Context, st *store.Store, hash, endUser string) (identity.StoredKey, bool, error) {
	k, found, err := st.Lookup(ctx, hash)
	if err != nil || !found {
		return identity.StoredKey{}, found, err
	}
	out := identity.StoredKey{KeyAlias: k.Alias, UserID: k.UserID, TeamID: k.TeamID, OrgID: k.OrganizationID,
		Servers: k.Permission.MCPServers, AccessGroups: k.Permission.MCPAccessGroups,
		ToolPermissions: k.Permission.MCPToolPermissions, BlockedTools: k.Permission.BlockedTools, Blocked: k.Blocked,
		KeyLimits:  identity.Limits{RPM: k.RPMLimit, MaxParallel: k.MaxParallelRequests, ServerRPM: k.MCPRPMLimit},
		Guardrails: identity.MetadataGuardrails(k.Metadata)}
	if k.Expires != nil {
		out.Expires = *k.Expires
	}
	if err := resolveLevels(ctx, st, k, endUser, &out); err != nil {
		return identity.StoredKey{}, false, err
	}
	return out, true, nil
}

// resolveLevels adds k's team, user, organisation and end-user levels to out.
func resolveLevels(ctx context.Context, st *store.Store, k store.Key, endUser string, out *identity.StoredKey) error {
	orgs := nonEmptyIDs(k.OrganizationID)
	if k.TeamID != "" {
		t, ok, err := st.LookupTeam(ctx, k.TeamID)
		switch {
		case err != nil:
			return err
		case !ok:
			out.Grants = append(out.Grants, denyAll(identity.LevelTeam))
		default:
			if t.Blocked {
				out.BlockedBy = "team"
			}
			out.TeamAlias = t.Alias
			out.Grants = append(out.Grants, grant(identity.LevelTeam, t.Permission))
			out.TeamLimits = identity.Limits{RPM: t.RPMLimit, MaxParallel: t.MaxParallelRequests, ServerRPM: t.MCPRPMLimit}
			for _, name := range identity.MetadataGuardrails(t.Metadata) {
				if !slices.Contains(out.Guardrails, name) {
					out.Guardrails = append(out.Guardrails, name)
				}
			}
			if t.OrganizationID != "" && !slices.Contains(orgs, t.OrganizationID) {
				orgs = append(orgs, t.OrganizationID)
			}
		}
	}
	if k.UserID != "" {
		u, ok, err := st.LookupUser(ctx, k.UserID)
		if err != nil {
			return err
		}
		if ok {
			out.Role = u.Role
			out.Grants = append(out.Grants, grant(identity.LevelUser, u.Permission))
		}
	}
	for _, id := range orgs {
		o, ok, err := st.LookupOrganization(ctx, id)
		switch {
		case err != nil:
			return err
		case !ok:
			out.Grants = append(out.Grants, denyAll(identity.LevelOrganization))
		default:
			out.Grants = append(out.Grants, grant(identity.LevelOrganization, o.Permission))
		}
	}
	if endUser != "" {
		e, ok, err := st.LookupEndUser(ctx, endUser)
		if err != nil {
			return err
		}
		if ok && e.Blocked && out.BlockedBy == "" {
			out.BlockedBy = "end user"
		}
		out.Grants = append(out.Grants, grant(identity.LevelEndUser, e.Permission)) // none stored: no lists
	}
	return nil
}

func grant(level string, p store.Permission) identity.Grant {
	return identity.Grant{Level: level, Servers: p.MCPServers, AccessGroups: p.MCPAccessGroups,
		ToolPermissions: p.MCPToolPermissions, BlockedTools: p.BlockedTools}
}

// denyAll is the level of an entity a key names but the store no longer has: it fails closed.
func denyAll(level string) identity.Grant {
	return identity.Grant{Level: level, Servers: []string{policy.NoServers}}
}

func nonEmptyIDs(ids ...string) []string {
	var out []string
	for _, id := range ids {
		if id != "" {
			out = append(out, id)
		}
	}
	return out
}
