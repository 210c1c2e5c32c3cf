package front

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"reflect"
	"time"

	"github.com/mcpgw/mcpgw/internal/store"
)

// RegisterDirectory adds LiteLLM's team, organisation, user and end-user (customer) routes to
// mux. They share the key routes' guard (managed, with the access each route needs; see
// authz.go), error shape, body bound and store.
func (k *Keys) RegisterDirectory(mux *http.ServeMux) {
	for path, route := range map[string]struct {
		need access
		h    func(http.ResponseWriter, *http.Request, []byte)
	}{
		"POST /team/new":           {adminOnly, k.teamNew},
		"POST /team/update":        {perResource, k.teamUpdate},
		"POST /team/delete":        {adminOnly, k.teamDelete},
		"GET /team/info":           {perResource, k.teamInfo},
		"GET /team/list":           {perResource, k.teamList},
		"POST /team/member_add":    {perResource, k.teamMemberAdd},
		"POST /team/member_delete": {perResource, k.teamMemberDelete},
		"POST /team/block":         {adminOnly, k.teamBlock(true)},
		"POST /team/unblock":       {adminOnly, k.teamBlock(false)},

		"POST /organization/new":      {adminOnly, k.orgNew},
		"PATCH /organization/update":  {adminOnly, k.orgUpdate},
		"POST /organization/update":   {adminOnly, k.orgUpdate},
		"DELETE /organization/delete": {adminOnly, k.orgDelete},
		"POST /organization/delete":   {adminOnly, k.orgDelete},
		"GET /organization/info":      {viewerRead, k.orgInfo},
		"GET /organization/list":      {viewerRead, k.orgList},

		"POST /user/new":    {adminOnly, k.userNew},
		"POST /user/update": {adminOnly, k.userUpdate},
		"POST /user/delete": {adminOnly, k.userDelete},
		"GET /user/info":    {perResource, k.userInfo},
		"GET /user/list":    {viewerRead, k.userList},
	} {
		mux.HandleFunc(path, k.managed(route.need, route.h))
	}
	for _, prefix := range []string{"/customer", "/end_user"} {
		mux.HandleFunc("POST "+prefix+"/new", k.managed(adminOnly, k.endUserNew))
		mux.HandleFunc("POST "+prefix+"/update", k.managed(adminOnly, k.endUserUpdate))
		mux.HandleFunc("POST "+prefix+"/delete", k.managed(adminOnly, k.endUserDelete))
		mux.HandleFunc("GET "+prefix+"/info", k.managed(viewerRead, k.endUserInfo))
		mux.HandleFunc("GET "+prefix+"/list", k.managed(viewerRead, k.endUserList))
		mux.HandleFunc("POST "+prefix+"/block", k.managed(adminOnly, k.endUserBlock(true)))
		mux.HandleFunc("POST "+prefix+"/unblock", k.managed(adminOnly, k.endUserBlock(false)))
	}
}

// failRef answers a write the store refused because of one row: the row missing is 404; a
// row still in use (an organisation with teams, users or keys) is 409, the request being
// well-formed but conflicting with what is stored; anything else (a foreign id that does not
// exist, an alias or id in use) is 400.
func failRef(w http.ResponseWriter, re *store.RefError) {
	switch {
	case errors.Is(re, store.ErrNotFound):
		keyError(w, http.StatusNotFound, "not_found_error", re.Field, re.Msg)
	case errors.Is(re, store.ErrInUse):
		keyError(w, http.StatusConflict, "conflict_error", re.Field, re.Msg)
	default:
		keyError(w, http.StatusBadRequest, "invalid_request_error", re.Field, re.Msg)
	}
}

// answer writes v, or fails with err.
func (k *Keys) answer(w http.ResponseWriter, r *http.Request, v any, err error) {
	if err != nil {
		k.fail(r.Context(), w, err)
		return
	}
	writeJSON(w, http.StatusOK, v)
}

// maxEmbedded bounds the keys and teams an info answer embeds (/key/list and /team/list page
// through the rest).
const maxEmbedded = maxPageSize

type memberJSON struct {
	UserID string `json:"user_id"`
	Role   string `json:"role"`
}

type teamJSON struct {
	TeamID              string           `json:"team_id"`
	TeamAlias           *string          `json:"team_alias"`
	OrganizationID      *string          `json:"organization_id"`
	Metadata            json.RawMessage  `json:"metadata"`
	ObjectPermission    store.Permission `json:"object_permission"`
	MembersWithRoles    []memberJSON     `json:"members_with_roles"`
	Blocked             bool             `json:"blocked"`
	RPMLimit            *int64           `json:"rpm_limit"`
	MaxParallelRequests *int64           `json:"max_parallel_requests"`
	MCPRPMLimit         map[string]int64 `json:"mcp_rpm_limit"`
	Spend               float64          `json:"spend"`
	MaxBudget           *float64         `json:"max_budget"`
	BudgetDuration      *string          `json:"budget_duration"`
	BudgetResetAt       *time.Time       `json:"budget_reset_at"`
	CreatedAt           time.Time        `json:"created_at"`
	UpdatedAt           time.Time        `json:"updated_at"`
}

func teamToJSON(t store.Team) teamJSON {
	members := convert(t.Members, func(m store.Membership) memberJSON { return memberJSON{UserID: m.UserID, Role: m.Role} })
	return teamJSON{TeamID: t.TeamID, TeamAlias: orNil(t.Alias), OrganizationID: orNil(t.OrganizationID),
		Metadata: t.Metadata, ObjectPermission: t.Permission, MembersWithRoles: members, Blocked: t.Blocked,
		RPMLimit: t.RPMLimit, MaxParallelRequests: t.MaxParallelRequests, MCPRPMLimit: t.MCPRPMLimit,
		Spend: t.Spend, MaxBudget: t.MaxBudget, BudgetDuration: orNil(t.Budget.Duration), BudgetResetAt: t.Budget.ResetAt,
		CreatedAt: t.CreatedAt, UpdatedAt: t.UpdatedAt}
}

// convert returns f of each of xs, in order; never nil, so that an empty list answers [].
func convert[T, J any](xs []T, f func(T) J) []J {
	out := make([]J, 0, len(xs))
	for _, x := range xs {
		out = append(out, f(x))
	}
	return out
}

// keysOf returns the first maxEmbedded keys matching q as key objects.
func (k *Keys) keysOf(r *http.Request, q store.ListQuery) ([]keyJSON, error) {
	q.Limit = maxEmbedded
	keys, _, err := k.cfg.Store.List(r.Context(), q)
	return convert(keys, toJSON), err
}

func (k *Keys) teamNew(w http.ResponseWriter, r *http.Request, body []byte) {
	t, err := decodeTeamNew(body)
	if err == nil {
		t, err = k.cfg.Store.CreateTeam(r.Context(), t)
	}
	k.answer(w, r, teamToJSON(t), err)
}

func (k *Keys) teamUpdate(w http.ResponseWriter, r *http.Request, body []byte) {
	id, change, err := decodeTeamUpdate(body)
	if err == nil && !k.allowTeamChange(w, r, id, change) {
		return
	}
	var t store.Team
	if err == nil {
		t, err = k.cfg.Store.UpdateTeam(r.Context(), id, change)
	}
	k.answer(w, r, teamToJSON(t), err)
}

func (k *Keys) teamDelete(w http.ResponseWriter, r *http.Request, body []byte) {
	ids, err := decodeIDList(body, "team_ids")
	if err == nil {
		err = k.cfg.Store.DeleteTeams(r.Context(), ids)
	}
	k.answer(w, r, map[string]any{"deleted_teams": ids}, err)
}

func (k *Keys) teamInfo(w http.ResponseWriter, r *http.Request, _ []byte) {
	id, err := requiredParam(r.URL.Query(), "team_id")
	if err == nil && !k.allowTeam(w, r, false, id, "read this team") {
		return
	}
	var t store.Team
	if err == nil {
		t, err = k.cfg.Store.GetTeam(r.Context(), id)
	}
	q := store.ListQuery{TeamID: id}
	if m := managerOf(r); err == nil && !m.viewer() {
		if role, rerr := m.teamRole(r.Context(), id); rerr != nil || role != store.TeamRoleAdmin {
			q.UserID, err = m.caller.UserID, rerr // a plain member sees only its own keys of the team
		}
	}
	var keys []keyJSON
	if err == nil {
		keys, err = k.keysOf(r, q)
	}
	k.answer(w, r, map[string]any{"team_id": id, "team_info": teamToJSON(t), "keys": keys}, err)
}

func (k *Keys) teamList(w http.ResponseWriter, r *http.Request, _ []byte) {
	q := r.URL.Query()
	offset, limit, _, err := decodeQuery(q, []string{"organization_id", "user_id", "page", "size"})
	user := q.Get("user_id")
	if m := managerOf(r); err == nil && !m.viewer() {
		if m.caller.UserID == "" || user != "" && user != m.caller.UserID {
			forbid(w, "your role lets you list only the teams you are a member of")
			return
		}
		user = m.caller.UserID
	}
	var teams []store.Team
	if err == nil {
		teams, err = k.cfg.Store.ListTeams(r.Context(), store.TeamQuery{OrganizationID: q.Get("organization_id"),
			UserID: user, Offset: offset, Limit: limit})
	}
	k.answer(w, r, convert(teams, teamToJSON), err)
}

func (k *Keys) teamMemberAdd(w http.ResponseWriter, r *http.Request, body []byte) {
	id, members, err := decodeMemberAdd(body)
	if m := managerOf(r); err == nil && !m.admin() {
		// Adding a member who is no user yet creates the user: that is /user/new's, the
		// proxy admin's.
		for _, ms := range members {
			_, found, lerr := k.cfg.Store.LookupUser(r.Context(), ms.UserID)
			if !k.allow(w, r, found, lerr, "add "+ms.UserID+", who is not a user yet (the proxy admin creates users)") {
				return
			}
		}
	}
	k.changeMembers(w, r, id, err, func(ctx context.Context) (store.Team, error) {
		return k.cfg.Store.AddTeamMembers(ctx, id, members)
	})
}

func (k *Keys) teamMemberDelete(w http.ResponseWriter, r *http.Request, body []byte) {
	id, user, err := decodeMemberDelete(body)
	k.changeMembers(w, r, id, err, func(ctx context.Context) (store.Team, error) {
		return k.cfg.Store.RemoveTeamMembers(ctx, id, []string{user})
	})
}

// changeMembers serves a change of the members of team id, decoded with err: a caller who may
// change the team (the proxy admin, the team's admins) has it made by change and is answered
// the team as stored.
func (k *Keys) changeMembers(w http.ResponseWriter, r *http.Request, id string, err error,
	change func(context.Context) (store.Team, error)) {
	if err == nil && !k.allowTeam(w, r, true, id, "change this team's members") {
		return
	}
	var t store.Team
	if err == nil {
		t, err = change(r.Context())
	}
	k.answer(w, r, teamToJSON(t), err)
}

// allowTeam reports whether the caller may read (write false) or change the team with id,
// having answered the refusal (403, saying it may not do what) or the error when not.
func (k *Keys) allowTeam(w http.ResponseWriter, r *http.Request, write bool, id, what string) bool {
	ok, err := managerOf(r).mayTeam(r.Context(), write, id)
	return k.allow(w, r, ok, err, what)
}

// allowTeamChange checks that the caller may change team id: the proxy admin anything; the
// team's admins only its alias and metadata (its permissions, limits, organisation and blocked
// flag would widen what its own keys reach), the metadata's guardrails only as
// mayModifyGuardrails allows.
func (k *Keys) allowTeamChange(w http.ResponseWriter, r *http.Request, id string, change func(*store.Team)) bool {
	if managerOf(r).admin() {
		return true
	}
	if !k.allowTeam(w, r, true, id, "change this team") {
		return false
	}
	cur, err := k.cfg.Store.GetTeam(r.Context(), id)
	if err != nil {
		k.fail(r.Context(), w, err)
		return false
	}
	next := cur
	change(&next)
	allowed := cur // what a team admin may change: the alias and metadata, nothing else
	allowed.Alias, allowed.Metadata = next.Alias, next.Metadata
	if !reflect.DeepEqual(allowed, next) {
		forbid(w, "a team admin may change the team's alias, metadata and members; its object_permission, limits, organization_id and blocked are the proxy admin's")
		return false
	}
	return k.allowGuardrails(w, r, cur.Metadata, next.Metadata, id)
}

// teamBlock serves /team/block and /team/unblock: {"team_id"}; the answer is the team as stored.
func (k *Keys) teamBlock(blocked bool) func(http.ResponseWriter, *http.Request, []byte) {
	return func(w http.ResponseWriter, r *http.Request, body []byte) {
		m, err := decodeObject("", body, []string{"team_id"})
		var id string
		if err == nil {
			id, err = reqID(m, "team_id")
		}
		var t store.Team
		if err == nil {
			t, err = k.cfg.Store.UpdateTeam(r.Context(), id, func(t *store.Team) { t.Blocked = blocked })
		}
		k.answer(w, r, teamToJSON(t), err)
	}
}
