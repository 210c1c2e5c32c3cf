package front

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/mcpgw/mcpgw/internal/store"
)

type userJSON struct {
	UserID           string           `json:"user_id"`
	UserEmail        *string          `json:"user_email"`
	UserAlias        *string          `json:"user_alias"`
	UserRole         string           `json:"user_role"`
	OrganizationID   *string          `json:"organization_id"`
	Metadata         json.RawMessage  `json:"metadata"`
	ObjectPermission store.Permission `json:"object_permission"`
	Teams            []string         `json:"teams"`
	CreatedAt        time.Time        `json:"created_at"`
	UpdatedAt        time.Time        `json:"updated_at"`
}

type membershipJSON struct {
	TeamID string `json:"team_id"`
	UserID string `json:"user_id"`
	Role   string `json:"role"`
}

func userToJSON(u store.User) userJSON {
	teams := convert(u.Teams, func(m store.Membership) string { return m.TeamID })
	return userJSON{UserID: u.UserID, UserEmail: orNil(u.Email), UserAlias: orNil(u.Alias), UserRole: u.Role,
		OrganizationID: orNil(u.OrganizationID), Metadata: u.Metadata, ObjectPermission: u.Permission, Teams: teams,
		CreatedAt: u.CreatedAt, UpdatedAt: u.UpdatedAt}
}

func (k *Keys) userNew(w http.ResponseWriter, r *http.Request, body []byte) {
	u, err := decodeUserNew(body)
	if err == nil {
		u, err = k.cfg.Store.CreateUser(r.Context(), u)
	}
	k.answer(w, r, userToJSON(u), err)
}

func (k *Keys) userUpdate(w http.ResponseWriter, r *http.Request, body []byte) {
	id, change, err := decodeUserUpdate(body)
	var u store.User
	if err == nil {
		u, err = k.cfg.Store.UpdateUser(r.Context(), id, change)
	}
	k.answer(w, r, userToJSON(u), err)
}

func (k *Keys) userDelete(w http.ResponseWriter, r *http.Request, body []byte) {
	ids, err := decodeIDList(body, "user_ids")
	if err == nil {
		err = k.cfg.Store.DeleteUsers(r.Context(), ids)
	}
	k.answer(w, r, map[string]any{"deleted_users": ids}, err)
}

// userInfo answers LiteLLM's /user/info shape: user_id, user_info, the user's first keys and
// their team memberships.
func (k *Keys) userInfo(w http.ResponseWriter, r *http.Request, _ []byte) {
	m := managerOf(r)
	q := r.URL.Query()
	if !q.Has("user_id") && m.caller.UserID != "" && !m.caller.IsMaster {
		q.Set("user_id", m.caller.UserID) // without user_id: the caller's own, as LiteLLM answers
	}
	id, err := requiredParam(q, "user_id")
	if err == nil && !m.mayUser(id) {
		forbid(w, "your role lets you read only your own user")
		return
	}
	var u store.User
	if err == nil {
		u, err = k.cfg.Store.GetUser(r.Context(), id)
	}
	var keys []keyJSON
	if err == nil {
		keys, err = k.keysOf(r, store.ListQuery{UserID: id})
	}
	ms := convert(u.Teams, func(m store.Membership) membershipJSON { return membershipJSON(m) })
	k.answer(w, r, map[string]any{"user_id": id, "user_info": userToJSON(u), "keys": keys, "teams": ms}, err)
}

func (k *Keys) userList(w http.ResponseWriter, r *http.Request, _ []byte) {
	q := r.URL.Query()
	offset, limit, page, err := decodeQuery(q, []string{"organization_id", "page", "size"})
	var users []store.User
	if err == nil {
		users, err = k.cfg.Store.ListUsers(r.Context(), q.Get("organization_id"), offset, limit)
	}
	k.answer(w, r, map[string]any{"users": convert(users, userToJSON), "page": page, "page_size": limit}, err)
}
