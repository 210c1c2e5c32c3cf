package identity

import (
	"strconv"
	"strings"
)

// LiteLLM's user roles (LitellmUserRoles).
const (
	// RoleProxyAdmin manages everything; it is the master key's role.
	RoleProxyAdmin = "proxy_admin"
	// RoleProxyAdminViewer reads everything and changes nothing.
	RoleProxyAdminViewer = "proxy_admin_viewer"
	// RoleInternalUser manages their own keys.
	RoleInternalUser = "internal_user"
	// RoleInternalUserViewer reads their own keys.
	RoleInternalUserViewer = "internal_user_viewer"
)

// MasterUserID is the user id of the master key (LiteLLM's litellm_proxy_admin_name default).
const MasterUserID = "default_user_id"

// Caller is an authenticated identity; it carries bindings and permissions, never the raw key.
type Caller struct {
	// KeyHash is the hex SHA-256 of the gateway credential presented ("" for none).
	KeyHash string
	// KeyAlias and TeamAlias are the stored key's key_alias and its team's team_alias ("" when
	// none); they name the caller in metrics and logs, never in decisions.
	KeyAlias, TeamAlias string
	// UserID is the user the caller acts as.
	UserID string
	// TeamID is the caller's team.
	TeamID string
	// OrgID is the caller's organisation.
	OrgID string
	// EndUserID is the end user the caller acts for.
	EndUserID string
	// Role is the LiteLLM user role (proxy_admin, internal_user, ...).
	Role string
	// IsMaster is true for the master key (and for every caller of an open gateway).
	IsMaster bool

	// Servers is object_permission.mcp_servers: server ids, names, aliases or access-group
	// names. Nil or empty means no restriction at this level.
	Servers []string
	// AccessGroups is object_permission.mcp_access_groups. Nil or empty means no restriction.
	AccessGroups []string
	// ToolPermissions is object_permission.mcp_tool_permissions {server id or name: [tool]}.
	// A server without an entry (or with an empty list) has no tool restriction.
	ToolPermissions map[string][]string
	// BlockedTools is object_permission.blocked_tools: tools never allowed, by bare upstream
	// name or by prefixed name ("<server><separator><tool>").
	BlockedTools []string
	// Grants are the object_permission of the caller's other levels (team, user, end user,
	// organisation); each must allow what the caller's own lists allow. Nil for the master key
	// and for webhook identities, whose webhook decides alone.
	Grants []Grant

	// Claims are a JWT caller's verified token claims (nil for every other caller). Policy
	// rules read them as jwt.*; they are never logged.
	Claims map[string]any

	// KeyLimits and TeamLimits are the tool-call limits set on the caller's stored key and on
	// its team; zero for the master key and webhook identities (no limits).
	KeyLimits, TeamLimits Limits

	// Guardrails name the configured guardrails the caller's key and team ask for (LiteLLM's
	// metadata.guardrails): they run on the caller's tool calls beside the server's own.
	Guardrails []string
}

// Limits are one level's limits on tool calls (LiteLLM's rpm_limit, max_parallel_requests and
// mcp_rpm_limit); nil or absent means not set at that level.
type Limits struct {
	// RPM is rpm_limit: tool calls per minute.
	RPM *int64
	// MaxParallel is max_parallel_requests: tool calls in flight at once.
	MaxParallel *int64
	// ServerRPM is mcp_rpm_limit: tool calls per minute to one server, keyed by the server's
	// name, alias or id as written.
	ServerRPM map[string]int64
}

// Set reports whether any limit is set.
func (l Limits) Set() bool { return l.RPM != nil || l.MaxParallel != nil || len(l.ServerRPM) > 0 }

// Grant levels.
const (
	LevelTeam         = "team"
	LevelUser         = "user"
	LevelEndUser      = "end_user"
	LevelOrganization = "organization"
)

// Grant is one level's object_permission; empty lists restrict nothing at that level.
type Grant struct {
	// Level names the level: LevelTeam, LevelUser, LevelEndUser or LevelOrganization.
	Level string
	// Servers, AccessGroups, ToolPermissions and BlockedTools mean what the Caller's fields do.
	Servers         []string
	AccessGroups    []string
	ToolPermissions map[string][]string
	BlockedTools    []string
}

// Binding returns a stable string naming the caller's user, team, org, end user and key hash,
// for sealing tokens to a caller; two callers differing in any of these get different bindings.
func (c *Caller) Binding() string {
	if c == nil {
		return "v1"
	}
	fields := [...]struct{ tag, val string }{
		{"u", c.UserID}, {"t", c.TeamID}, {"o", c.OrgID}, {"e", c.EndUserID}, {"k", c.KeyHash},
	}
	n := 2
	for _, f := range fields {
		n += 5 + len(f.val) // ;x="" around the value, which needs no quoting most of the time
	}
	var b strings.Builder
	b.Grow(n)
	b.WriteString("v1")
	for _, f := range fields {
		b.WriteByte(';')
		b.WriteString(f.tag)
		b.WriteByte('=')
		if plain(f.val) {
			b.WriteByte('"')
			b.WriteString(f.val)
			b.WriteByte('"')
		} else {
			b.WriteString(strconv.Quote(f.val))
		}
	}
	return b.String()
}

// plain reports a string strconv.Quote only puts quotes around: printable
// ASCII without a quote or a backslash.
func plain(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

// Error is an authentication failure returned by Authenticate; every field is safe to show the caller.
type Error struct {
	// Status is the HTTP status to answer with: 401, 403, 431 or 503.
	Status int
	// Message is a fixed, caller-safe explanation (never a key, never webhook text).
	Message string
	// Challenge is the WWW-Authenticate value to send with a 401 ("" otherwise).
	Challenge string
}

// Error returns the safe message.
func (e *Error) Error() string { return e.Message }

func errMissing() *Error {
	return &Error{Status: 401, Challenge: "Bearer",
		Message: "missing credential: send Authorization: Bearer <key> or x-litellm-api-key: <key>"}
}

func errInvalid() *Error {
	return &Error{Status: 401, Challenge: `Bearer error="invalid_token"`, Message: "invalid credential"}
}

func errForbidden() *Error {
	return &Error{Status: 403, Message: "credential not permitted"}
}

func errHeadersTooLarge() *Error {
	return &Error{Status: 431, Message: "too many or too large request headers for authentication"}
}

func errUnavailable() *Error {
	return &Error{Status: 503, Message: "authentication service unavailable"}
}
