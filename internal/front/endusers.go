package front

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/mcpgw/mcpgw/internal/store"
)

type endUserJSON struct {
	UserID           string           `json:"user_id"`
	Alias            *string          `json:"alias"`
	Blocked          bool             `json:"blocked"`
	Metadata         json.RawMessage  `json:"metadata"`
	ObjectPermission store.Permission `json:"object_permission"`
	CreatedAt        time.Time        `json:"created_at"`
	UpdatedAt        time.Time        `json:"updated_at"`
}

func endUserToJSON(e store.EndUser) endUserJSON {
	return endUserJSON{UserID: e.UserID, Alias: orNil(e.Alias), Blocked: e.Blocked, Metadata: e.Metadata,
		ObjectPermission: e.Permission, CreatedAt: e.CreatedAt, UpdatedAt: e.UpdatedAt}
}

func (k *Keys) endUserNew(w http.ResponseWriter, r *http.Request, body []byte) {
	e, _, err := decodeEndUser(body)
	if err == nil {
		e, err = k.cfg.Store.CreateEndUser(r.Context(), e)
	}
	k.answer(w, r, endUserToJSON(e), err)
}

func (k *Keys) endUserUpdate(w http.ResponseWriter, r *http.Request, body []byte) {
	e, change, err := decodeEndUser(body)
	if err == nil {
		e, err = k.cfg.Store.UpdateEndUser(r.Context(), e.UserID, change)
	}
	k.answer(w, r, endUserToJSON(e), err)
}

func (k *Keys) endUserDelete(w http.ResponseWriter, r *http.Request, body []byte) {
	ids, err := decodeIDList(body, "user_ids")
	if err == nil {
		err = k.cfg.Store.DeleteEndUsers(r.Context(), ids)
	}
	k.answer(w, r, map[string]any{"deleted_end_users": ids}, err)
}

func (k *Keys) endUserInfo(w http.ResponseWriter, r *http.Request, _ []byte) {
	id, err := requiredParam(r.URL.Query(), "end_user_id")
	var e store.EndUser
	if err == nil {
		e, err = k.cfg.Store.GetEndUser(r.Context(), id)
	}
	k.answer(w, r, endUserToJSON(e), err)
}

func (k *Keys) endUserList(w http.ResponseWriter, r *http.Request, _ []byte) {
	offset, limit, _, err := decodeQuery(r.URL.Query(), []string{"page", "size"})
	var list []store.EndUser
	if err == nil {
		list, err = k.cfg.Store.ListEndUsers(r.Context(), offset, limit)
	}
	k.answer(w, r, convert(list, endUserToJSON), err)
}

// endUserBlock serves /customer/block and /customer/unblock: {"user_ids": [...]}, all or none.
func (k *Keys) endUserBlock(blocked bool) func(http.ResponseWriter, *http.Request, []byte) {
	return func(w http.ResponseWriter, r *http.Request, body []byte) {
		ids, err := decodeIDList(body, "user_ids")
		if err == nil {
			err = k.cfg.Store.SetEndUsersBlocked(r.Context(), ids, blocked)
		}
		k.answer(w, r, map[string]any{"user_ids": ids, "blocked": blocked}, err)
	}
}
