package front

import (
	"encoding/json"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mcpgw/mcpgw/internal/store"
)

// Body fields of the team, organisation, user and end-user routes, LiteLLM's names. Fields
// LiteLLM uses for LLM routing and spend (models, tpm_limit, soft_budget, ...)
// are unknown here, as they are for keys: a 400 naming the field, never silently dropped.
var (
	teamFields = []string{"team_id", "team_alias", "organization_id", "metadata", "guardrails", "object_permission",
		"members_with_roles", "blocked", "rpm_limit", "max_parallel_requests", "mcp_rpm_limit", "max_budget", "budget_duration"}
	teamUpdateFields = slices.DeleteFunc(slices.Clone(teamFields), func(f string) bool { return f == "members_with_roles" })
	memberFields     = []string{"user_id", "role"}
	orgFields        = []string{"organization_id", "organization_alias", "metadata", "object_permission"}
	userFields       = []string{"user_id", "user_email", "user_alias", "user_role", "organization_id", "teams",
		"metadata", "object_permission", "auto_create_key"}
	userUpdateFields = []string{"user_id", "user_email", "user_alias", "user_role", "organization_id", "metadata", "object_permission"}
	endUserFields    = []string{"user_id", "alias", "blocked", "metadata", "object_permission"}
)

// optBool decodes an optional boolean field.
func optBool(m map[string]json.RawMessage, name string) (bool, error) {
	switch v := m[name]; {
	case isNull(v):
		return false, nil
	case string(v) == "true":
		return true, nil
	case string(v) == "false":
		return false, nil
	}
	return false, bad(name, "%s: want true or false", name)
}

// reqID decodes a required, non-empty bounded string field.
func reqID(m map[string]json.RawMessage, name string) (string, error) {
	s, err := optID(m, name)
	if err == nil && s == "" {
		err = bad(name, "%s: required", name)
	}
	return s, err
}

// commonFields decodes the fields every kind shares with keys (organization_id, metadata,
// object_permission, the limits) with the key decoder, so they are read the same everywhere.
func commonFields(m map[string]json.RawMessage) (store.NewKey, error) {
	return decodeKeyFields(m, time.Time{})
}

// decodeTeamNew decodes a /team/new body.
func decodeTeamNew(body []byte) (store.Team, error) {
	m, err := decodeObject("", body, teamFields)
	if err != nil {
		return store.Team{}, err
	}
	t, err := teamOf(m)
	if err != nil {
		return t, err
	}
	if v := m["members_with_roles"]; !isNull(v) {
		t.Members, err = decodeMembers("members_with_roles", v)
	}
	return t, err
}

func teamOf(m map[string]json.RawMessage) (store.Team, error) {
	var t store.Team
	nk, err := commonFields(m)
	if err != nil {
		return t, err
	}
	t = store.Team{TeamID: nk.TeamID, OrganizationID: nk.OrganizationID, Metadata: nk.Metadata, Permission: nk.Permission,
		RPMLimit: nk.RPMLimit, MaxParallelRequests: nk.MaxParallelRequests, MCPRPMLimit: nk.MCPRPMLimit,
		MaxBudget: nk.MaxBudget, Budget: store.Budget{Duration: nk.BudgetDuration}}
	if t.Alias, err = optID(m, "team_alias"); err != nil {
		return t, err
	}
	t.Blocked, err = optBool(m, "blocked")
	return t, err
}

// decodeMembers decodes one member {user_id, role} or a list of them, without duplicates.
func decodeMembers(param string, v json.RawMessage) ([]store.Membership, error) {
	var raws []json.RawMessage
	switch v[0] {
	case '{':
		raws = []json.RawMessage{v}
	case '[':
		if json.Unmarshal(v, &raws) != nil {
			return nil, bad(param, "%s: malformed JSON", param)
		}
	default:
		return nil, bad(param, "%s: want a member {user_id, role} or a list of them", param)
	}
	if len(raws) == 0 || len(raws) > maxListLen {
		return nil, bad(param, "%s: want 1 to %d members", param, maxListLen)
	}
	out := make([]store.Membership, 0, len(raws))
	for _, raw := range raws {
		m, err := decodeObject(param, raw, memberFields)
		if err != nil {
			return nil, err
		}
		var ms store.Membership
		if ms.UserID, err = reqID(m, "user_id"); err != nil {
			return nil, err
		}
		if ms.Role, err = reqID(m, "role"); err != nil {
			return nil, err
		}
		if ms.Role != store.TeamRoleAdmin && ms.Role != store.TeamRoleUser {
			return nil, bad("role", "role: want admin or user")
		}
		if slices.ContainsFunc(out, func(o store.Membership) bool { return o.UserID == ms.UserID }) {
			return nil, bad(param, "%s: user_id '%s' given twice", param, truncate(ms.UserID))
		}
		out = append(out, ms)
	}
	return out, nil
}

// decodeTeamUpdate decodes a /team/update body: team_id (required) and any /team/new field
// but members_with_roles; a field present replaces the stored value (null clears it), a field
// absent is kept.
func decodeTeamUpdate(body []byte) (string, func(*store.Team), error) {
	m, err := decodeObject("", body, teamUpdateFields)
	if err != nil {
		return "", nil, err
	}
	id, err := reqID(m, "team_id")
	if err != nil {
		return "", nil, err
	}
	nt, err := teamOf(m)
	if err != nil {
		return "", nil, err
	}
	return id, func(t *store.Team) {
		for name := range m {
			switch name {
			case "team_alias":
				t.Alias = nt.Alias
			case "organization_id":
				t.OrganizationID = nt.OrganizationID
			case "metadata":
				t.Metadata = nt.Metadata
			case "guardrails":
				t.Metadata = updatedGuardrails(m, nt.Metadata, t.Metadata)
			case "object_permission":
				t.Permission = nt.Permission
			case "blocked":
				t.Blocked = nt.Blocked
			case "rpm_limit":
				t.RPMLimit = nt.RPMLimit
			case "max_parallel_requests":
				t.MaxParallelRequests = nt.MaxParallelRequests
			case "mcp_rpm_limit":
				t.MCPRPMLimit = nt.MCPRPMLimit
			case "max_budget":
				t.MaxBudget = nt.MaxBudget
			case "budget_duration":
				t.Budget.Duration = nt.Budget.Duration
			}
		}
	}, nil
}

// decodeMemberAdd decodes /team/member_add's {team_id, member: {user_id, role} or [...]}.
func decodeMemberAdd(body []byte) (string, []store.Membership, error) {
	m, err := decodeObject("", body, []string{"team_id", "member"})
	if err != nil {
		return "", nil, err
	}
	id, err := reqID(m, "team_id")
	if err != nil {
		return "", nil, err
	}
	if isNull(m["member"]) {
		return "", nil, bad("member", "member: required")
	}
	members, err := decodeMembers("member", m["member"])
	return id, members, err
}

// decodeMemberDelete decodes /team/member_delete's {team_id, user_id}.
func decodeMemberDelete(body []byte) (string, string, error) {
	m, err := decodeObject("", body, []string{"team_id", "user_id"})
	if err != nil {
		return "", "", err
	}
	id, err := reqID(m, "team_id")
	if err != nil {
		return "", "", err
	}
	user, err := reqID(m, "user_id")
	return id, user, err
}

// decodeIDList decodes a delete body {field: [id, ...]}: a non-empty list, without duplicates.
func decodeIDList(body []byte, field string) ([]string, error) {
	m, err := decodeObject("", body, []string{field})
	if err != nil {
		return nil, err
	}
	ids, err := optStrings(field, m[field])
	if err != nil {
		return nil, err
	}
	if len(ids) == 0 {
		return nil, bad(field, "%s: want a non-empty list of ids", field)
	}
	slices.Sort(ids)
	return slices.Compact(ids), nil
}

// decodeOrgNew decodes a /organization/new body; organization_alias is required.
func decodeOrgNew(body []byte) (store.Organization, error) {
	m, err := decodeObject("", body, orgFields)
	if err != nil {
		return store.Organization{}, err
	}
	o, err := orgOf(m)
	if err == nil && o.Alias == "" {
		err = bad("organization_alias", "organization_alias: required")
	}
	return o, err
}

func orgOf(m map[string]json.RawMessage) (store.Organization, error) {
	nk, err := commonFields(m)
	if err != nil {
		return store.Organization{}, err
	}
	o := store.Organization{OrganizationID: nk.OrganizationID, Metadata: nk.Metadata, Permission: nk.Permission}
	o.Alias, err = optID(m, "organization_alias")
	return o, err
}

// decodeOrgUpdate decodes an /organization/update body: organization_id (required) and any
// other /organization/new field (organization_alias cannot be cleared).
func decodeOrgUpdate(body []byte) (string, func(*store.Organization), error) {
	m, err := decodeObject("", body, orgFields)
	if err != nil {
		return "", nil, err
	}
	id, err := reqID(m, "organization_id")
	if err != nil {
		return "", nil, err
	}
	no, err := orgOf(m)
	if err != nil {
		return "", nil, err
	}
	if _, ok := m["organization_alias"]; ok && no.Alias == "" {
		return "", nil, bad("organization_alias", "organization_alias: cannot be cleared")
	}
	return id, func(o *store.Organization) {
		for name := range m {
			switch name {
			case "organization_alias":
				o.Alias = no.Alias
			case "metadata":
				o.Metadata = no.Metadata
			case "object_permission":
				o.Permission = no.Permission
			}
		}
	}, nil
}

// decodeUserNew decodes a /user/new body. teams is a list of team ids (role user) or of
// {team_id, user_role}; auto_create_key may only be false: this gateway never mints a key
// as a side effect (POST /key/generate with user_id does).
func decodeUserNew(body []byte) (store.User, error) {
	m, err := decodeObject("", body, userFields)
	if err != nil {
		return store.User{}, err
	}
	u, err := userOf(m)
	if err != nil {
		return u, err
	}
	if create, err := optBool(m, "auto_create_key"); err != nil || create {
		return u, bad("auto_create_key", "auto_create_key: only false is supported; create the user's keys with POST /key/generate and user_id")
	}
	if v := m["teams"]; !isNull(v) {
		u.Teams, err = decodeUserTeams(v)
	}
	return u, err
}

func userOf(m map[string]json.RawMessage) (store.User, error) {
	nk, err := commonFields(m)
	if err != nil {
		return store.User{}, err
	}
	u := store.User{UserID: nk.UserID, OrganizationID: nk.OrganizationID, Metadata: nk.Metadata, Permission: nk.Permission}
	for _, f := range [...]struct {
		name string
		dst  *string
	}{{"user_email", &u.Email}, {"user_alias", &u.Alias}, {"user_role", &u.Role}} {
		if *f.dst, err = optID(m, f.name); err != nil {
			return u, err
		}
	}
	if u.Role != "" && !slices.Contains(store.UserRoles, u.Role) {
		return u, bad("user_role", "user_role: want one of %s", strings.Join(store.UserRoles, ", "))
	}
	return u, nil
}

// decodeUserTeams decodes /user/new's teams: ["team-id", ...] or [{"team_id", "user_role"}].
func decodeUserTeams(v json.RawMessage) ([]store.Membership, error) {
	var raws []json.RawMessage
	if v[0] != '[' || json.Unmarshal(v, &raws) != nil || len(raws) > maxListLen {
		return nil, bad("teams", "teams: want a list of team ids or of {team_id, user_role}")
	}
	out := make([]store.Membership, 0, len(raws))
	for _, raw := range raws {
		ms := store.Membership{Role: store.TeamRoleUser}
		if raw[0] == '"' {
			if json.Unmarshal(raw, &ms.TeamID) != nil || ms.TeamID == "" || len(ms.TeamID) > maxIDLen {
				return nil, bad("teams", "teams: a team id is empty, malformed or longer than %d bytes", maxIDLen)
			}
		} else if raw[0] != '{' {
			return nil, bad("teams", "teams: want a list of team ids or of {team_id, user_role}")
		} else {
			m, err := decodeObject("teams", raw, []string{"team_id", "user_role"})
			if err != nil {
				return nil, err
			}
			if ms.TeamID, err = reqID(m, "team_id"); err != nil {
				return nil, err
			}
			if role, err := optID(m, "user_role"); err != nil || (role != "" && role != store.TeamRoleAdmin && role != store.TeamRoleUser) {
				return nil, bad("user_role", "teams: user_role: want admin or user")
			} else if role != "" {
				ms.Role = role
			}
		}
		if slices.ContainsFunc(out, func(o store.Membership) bool { return o.TeamID == ms.TeamID }) {
			return nil, bad("teams", "teams: team_id '%s' given twice", truncate(ms.TeamID))
		}
		out = append(out, ms)
	}
	return out, nil
}

// decodeUserUpdate decodes a /user/update body: user_id (required) and the user's fields (not
// teams: use /team/member_add and /team/member_delete).
func decodeUserUpdate(body []byte) (string, func(*store.User), error) {
	m, err := decodeObject("", body, userUpdateFields)
	if err != nil {
		return "", nil, err
	}
	id, err := reqID(m, "user_id")
	if err != nil {
		return "", nil, err
	}
	nu, err := userOf(m)
	if err != nil {
		return "", nil, err
	}
	if _, ok := m["user_role"]; ok && nu.Role == "" {
		return "", nil, bad("user_role", "user_role: cannot be cleared")
	}
	return id, func(u *store.User) {
		for name := range m {
			switch name {
			case "user_email":
				u.Email = nu.Email
			case "user_alias":
				u.Alias = nu.Alias
			case "user_role":
				u.Role = nu.Role
			case "organization_id":
				u.OrganizationID = nu.OrganizationID
			case "metadata":
				u.Metadata = nu.Metadata
			case "object_permission":
				u.Permission = nu.Permission
			}
		}
	}, nil
}

// decodeEndUser decodes a /customer/new or /customer/update body (user_id required); for an
// update the change applies the fields present.
func decodeEndUser(body []byte) (store.EndUser, func(*store.EndUser), error) {
	m, err := decodeObject("", body, endUserFields)
	if err != nil {
		return store.EndUser{}, nil, err
	}
	nk, err := commonFields(m)
	if err != nil {
		return store.EndUser{}, nil, err
	}
	e := store.EndUser{UserID: nk.UserID, Metadata: nk.Metadata, Permission: nk.Permission}
	if e.UserID == "" {
		return e, nil, bad("user_id", "user_id: required")
	}
	if e.Alias, err = optID(m, "alias"); err != nil {
		return e, nil, err
	}
	if e.Blocked, err = optBool(m, "blocked"); err != nil {
		return e, nil, err
	}
	return e, func(c *store.EndUser) {
		for name := range m {
			switch name {
			case "alias":
				c.Alias = e.Alias
			case "blocked":
				c.Blocked = e.Blocked
			case "metadata":
				c.Metadata = e.Metadata
			case "object_permission":
				c.Permission = e.Permission
			}
		}
	}, nil
}

// decodeQuery checks a GET route's query: only names in allowed, each at most once and at
// most maxIDLen bytes; page (from 1) and size (1 to maxPageSize, default maxPageSize) become
// an offset and a limit.
func decodeQuery(q url.Values, allowed []string) (offset, limit, page int, err error) {
	return decodePage(q, allowed, maxPageSize)
}

// decodePage is decodeQuery with size defaulting to defaultSize.
func decodePage(q url.Values, allowed []string, defaultSize int) (offset, limit, page int, err error) {
	for name, vals := range q {
		if !slices.Contains(allowed, name) {
			return 0, 0, 0, bad(name, "unknown query parameter %q (known: %s)", truncate(name), strings.Join(allowed, ", "))
		}
		if len(vals) != 1 || len(vals[0]) > maxIDLen {
			return 0, 0, 0, bad(name, "%s: give it once, at most %d bytes", name, maxIDLen)
		}
	}
	page, limit = 1, defaultSize
	for _, f := range [...]struct {
		name     string
		dst      *int
		min, max int
	}{{"page", &page, 1, 1 << 20}, {"size", &limit, 1, maxPageSize}} {
		if v := q.Get(f.name); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < f.min || n > f.max {
				return 0, 0, 0, bad(f.name, "%s: want an integer from %d to %d", f.name, f.min, f.max)
			}
			*f.dst = n
		}
	}
	return (page - 1) * limit, limit, page, nil
}

// requiredParam decodes a GET route's query holding exactly the one required parameter name.
func requiredParam(q url.Values, name string) (string, error) {
	if _, _, _, err := decodeQuery(q, []string{name}); err != nil {
		return "", err
	}
	v := q.Get(name)
	if v == "" {
		return "", bad(name, "%s: required (?%s=...)", name, name)
	}
	return v, nil
}
