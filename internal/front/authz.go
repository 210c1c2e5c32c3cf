package front

import (
	"context"
	"errors"
	"io"
	"maps"
	"net/http"
	"slices"

	"github.com/mcpgw/mcpgw/internal/identity"
	"github.com/mcpgw/mcpgw/internal/store"
)

// access is how much of the management API a route needs from its caller before the route
// looks at what it changes.
type access int

const (
	// adminOnly: the proxy admin (the master key or a proxy_admin user) only.
	adminOnly access = iota
	// viewerRead: the proxy admin and proxy_admin_viewer.
	viewerRead
	// perResource: any authenticated caller; the route decides from the rows it touches
	// (a key's owner or team, a team's members) through a manager's may* methods.
	perResource
)

// manager is the caller of a management route and what its role lets it do.
type manager struct {
	caller *identity.Caller
	keys   *Keys
}

type managerKey struct{}

// managerOf returns the manager the management middleware stored in r's context.
func managerOf(r *http.Request) manager {
	m, _ := r.Context().Value(managerKey{}).(manager)
	return m
}

// admin reports whether the caller is the proxy admin: the master key, or a caller whose role
// (a store user's user_role, or a custom_auth identity's) is proxy_admin.
func (m manager) admin() bool {
	return m.caller != nil && (m.caller.IsMaster || m.caller.Role == identity.RoleProxyAdmin)
}

// viewer reports whether the caller may read everything: the proxy admin or proxy_admin_viewer.
func (m manager) viewer() bool {
	return m.admin() || m.caller != nil && m.caller.Role == identity.RoleProxyAdminViewer
}

// may reports whether the caller has what the route needs before it looks at any row.
func (m manager) may(need access) bool {
	switch need {
	case adminOnly:
		return m.admin()
	case viewerRead:
		return m.viewer()
	}
	return m.caller != nil
}

// teamRole returns the caller's role in team id (store.TeamRoleAdmin or TeamRoleUser), or ""
// when it is not a member (or the team does not exist).
func (m manager) teamRole(ctx context.Context, id string) (string, error) {
	if id == "" || m.caller == nil || m.caller.UserID == "" {
		return "", nil
	}
	t, found, err := m.keys.cfg.Store.LookupTeam(ctx, id)
	if err != nil || !found {
		return "", err
	}
	i := slices.IndexFunc(t.Members, func(ms store.Membership) bool { return ms.UserID == m.caller.UserID })
	if i < 0 {
		return "", nil
	}
	return t.Members[i].Role, nil
}

// plainMember reports whether userID is a member of team teamID without an admin role.
func (m manager) plainMember(ctx context.Context, teamID, userID string) (bool, error) {
	t, found, err := m.keys.cfg.Store.LookupTeam(ctx, teamID)
	if err != nil || !found || !slices.ContainsFunc(t.Members, func(ms store.Membership) bool { return ms.UserID == userID }) {
		return false, err
	}
	u, found, err := m.keys.cfg.Store.LookupUser(ctx, userID)
	if err != nil {
		return false, err
	}
	return !found || u.Role != identity.RoleProxyAdmin && u.Role != identity.RoleProxyAdminViewer, nil
}

// mayMint reports whether the caller may be handed a new secret of a key of user userID
// (generate, regenerate): the proxy admin for anyone; everyone else only for itself or for a
// key of no user, since the secret would act as that user, with its role, teams and keys.
func (m manager) mayMint(userID string) bool {
	return m.admin() || userID == "" || userID == m.caller.UserID
}

// ownsKeys reports whether the caller's role lets it manage keys of its own (internal_user);
// an internal_user_viewer only reads them.
func (m manager) ownsKeys(write bool) bool {
	switch m.caller.Role {
	case identity.RoleInternalUser:
		return true
	case identity.RoleInternalUserViewer:
		return !write
	}
	return false
}

// mayKey reports whether the caller may read (write false) or change a key of user userID in
// team teamID: the proxy admin always; proxy_admin_viewer to read; a team admin for its team's
// keys (writing, only keys of itself, of no user, or of the team's members whose role is not
// an admin role); an internal_user for its own keys (in a team, only a team it is a member
// of); an internal_user_viewer to read its own. Minting a secret is narrower (mayMint).
func (m manager) mayKey(ctx context.Context, write bool, userID, teamID string) (bool, error) {
	if m.admin() || !write && m.viewer() {
		return true, nil
	}
	role, err := m.teamRole(ctx, teamID)
	if err != nil {
		return false, err
	}
	self := userID != "" && userID == m.caller.UserID
	switch {
	case role == store.TeamRoleAdmin && (!write || self || userID == ""):
		return true, nil
	case role == store.TeamRoleAdmin:
		return m.plainMember(ctx, teamID, userID)
	}
	return self && m.ownsKeys(write) && (teamID == "" || role != ""), nil
}

// mayTeam reports whether the caller may read (write false) or change team id: the proxy
// admin; proxy_admin_viewer and members to read; the team's admins to change it.
func (m manager) mayTeam(ctx context.Context, write bool, id string) (bool, error) {
	if m.admin() || !write && m.viewer() {
		return true, nil
	}
	role, err := m.teamRole(ctx, id)
	if err != nil {
		return false, err
	}
	return role == store.TeamRoleAdmin || !write && role != "", nil
}

// mayUser reports whether the caller may read user id: the proxy admin, proxy_admin_viewer,
// and the user itself.
func (m manager) mayUser(id string) bool {
	return m.viewer() || m.caller != nil && id != "" && id == m.caller.UserID
}

// managed authenticates a management route's caller (in the routes' own error shape), refuses
// with 403 one whose role lacks need, and otherwise serves next with the caller's manager in the
// request's context. Without a store every route is 503.
func (k *Keys) managed(need access, next func(http.ResponseWriter, *http.Request, []byte)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		caller, err := k.cfg.Auth.Authenticate(r.Context(), r, r.URL.Path)
		if err != nil {
			var ae *identity.Error
			status, msg := http.StatusUnauthorized, "authentication required"
			if errors.As(err, &ae) {
				status, msg = ae.Status, ae.Message
				if ae.Challenge != "" {
					w.Header().Set("WWW-Authenticate", ae.Challenge)
				}
			}
			keyError(w, status, "auth_error", "", msg)
			return
		}
		m := manager{caller: caller, keys: k}
		if !m.may(need) {
			who := "the proxy admin (the master key or a proxy_admin user)"
			if need == viewerRead {
				who += " or a proxy_admin_viewer"
			}
			forbid(w, "only "+who+" may call "+r.URL.Path)
			return
		}
		if k.cfg.Store == nil {
			keyError(w, http.StatusServiceUnavailable, "internal_server_error", "",
				"no key store: the gateway was started without a data dir")
			return
		}
		var body []byte
		if r.Method != http.MethodGet {
			body, err = io.ReadAll(http.MaxBytesReader(w, r.Body, maxKeyBody))
			if err != nil {
				keyError(w, http.StatusRequestEntityTooLarge, "invalid_request_error", "",
					"request body unreadable or larger than 1 MiB")
				return
			}
		}
		next(w, r.WithContext(context.WithValue(r.Context(), managerKey{}, m)), body)
	}
}

// forbid answers 403 in the management routes' shape.
func forbid(w http.ResponseWriter, msg string) {
	keyError(w, http.StatusForbidden, "auth_error", "", msg)
}

// allow answers 403 (or the store's failure) unless ok; it reports whether to go on.
func (k *Keys) allow(w http.ResponseWriter, r *http.Request, ok bool, err error, what string) bool {
	switch {
	case err != nil:
		k.fail(r.Context(), w, err)
		return false
	case !ok:
		forbid(w, "your role does not allow you to "+what)
		return false
	}
	return true
}

// allowKeyChange checks that the caller may change the stored key with token, and may still
// manage it once change has moved it (to another user or team); only the proxy admin may
// change its limits, and its guardrails only as mayModifyGuardrails allows. A missing key goes
// on, for the store to answer 404.
func (k *Keys) allowKeyChange(w http.ResponseWriter, r *http.Request, token string, change func(*store.Key), mint bool) bool {
	m := managerOf(r)
	if m.admin() {
		return true
	}
	cur, err := k.cfg.Store.Get(r.Context(), token)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return true
	case err != nil:
		k.fail(r.Context(), w, err)
		return false
	}
	ok, err := m.mayKey(r.Context(), true, cur.UserID, cur.TeamID)
	if !k.allow(w, r, ok, err, "change this key") {
		return false
	}
	next := cur
	if change != nil {
		change(&next)
	}
	if !limitsEqual(cur, next) {
		forbid(w, "only the proxy admin may set rpm_limit, max_parallel_requests, mcp_rpm_limit, max_budget or budget_duration")
		return false
	}
	if !k.allowGuardrails(w, r, cur.Metadata, next.Metadata, cur.TeamID, next.TeamID) {
		return false
	}
	if mint && !m.mayMint(next.UserID) {
		forbid(w, "only the proxy admin may be handed a new secret of another user's key")
		return false
	}
	ok, err = m.mayKey(r.Context(), true, next.UserID, next.TeamID)
	return k.allow(w, r, ok, err, "move this key to that user or team")
}

func limitsEqual(a, b store.Key) bool {
	return eqPtr(a.RPMLimit, b.RPMLimit) && eqPtr(a.MaxParallelRequests, b.MaxParallelRequests) && maps.Equal(a.MCPRPMLimit, b.MCPRPMLimit) &&
		eqPtr(a.MaxBudget, b.MaxBudget) && a.Budget.Duration == b.Budget.Duration
}

func eqPtr[T comparable](a, b *T) bool {
	return a == nil && b == nil || a != nil && b != nil && *a == *b
}
