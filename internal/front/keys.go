package front

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/mcpgw/mcpgw/internal/identity"
	"github.com/mcpgw/mcpgw/internal/store"
)

// KeysConfig builds the key management API.
type KeysConfig struct {
	Auth *identity.Authenticator
	// Store holds the keys; nil answers every route with 503 (no store configured).
	Store  *store.Store
	Logger *slog.Logger
	// Now is the clock expiries are computed from; nil means time.Now.
	Now func() time.Time
}

// Keys serves LiteLLM's key management routes: POST /key/generate, GET /key/info,
// POST /key/update, GET /key/list, POST /key/delete, POST /key/block, POST /key/unblock and
// POST /key/regenerate (also as POST /key/{key}/regenerate).
// Who may call which is decided by managed and the manager's may* methods (authz.go).
type Keys struct {
	cfg KeysConfig
}

// NewKeys returns the key management API.
func NewKeys(cfg KeysConfig) *Keys {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Keys{cfg: cfg}
}

// Register adds the key routes to mux.
func (k *Keys) Register(mux *http.ServeMux) {
	mux.HandleFunc("POST /key/generate", k.managed(perResource, k.generate))
	mux.HandleFunc("GET /key/info", k.managed(perResource, k.info))
	mux.HandleFunc("POST /key/update", k.managed(perResource, k.update))
	mux.HandleFunc("GET /key/list", k.managed(perResource, k.list))
	mux.HandleFunc("POST /key/delete", k.managed(perResource, k.delete))
	mux.HandleFunc("POST /key/block", k.managed(perResource, k.block(true)))
	mux.HandleFunc("POST /key/unblock", k.managed(adminOnly, k.block(false))) // undoing an admin's block is the admin's
	mux.HandleFunc("POST /key/regenerate", k.managed(perResource, k.regenerate))
	mux.HandleFunc("POST /key/{key}/regenerate", hideKeyInPath("/key/", "/regenerate", k.managed(perResource, k.regenerate)))
}

// keyJSON is a stored key as LiteLLM answers it; the secret appears only in /key/generate's
// answer.
type keyJSON struct {
	Key                 string           `json:"key,omitempty"`
	KeyName             string           `json:"key_name"`
	KeyAlias            *string          `json:"key_alias"`
	Token               string           `json:"token"`
	Expires             *time.Time       `json:"expires"`
	UserID              *string          `json:"user_id"`
	TeamID              *string          `json:"team_id"`
	OrganizationID      *string          `json:"organization_id"`
	Metadata            json.RawMessage  `json:"metadata"`
	ObjectPermission    store.Permission `json:"object_permission"`
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

func orNil(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func toJSON(k store.Key) keyJSON {
	return keyJSON{KeyName: k.KeyName, KeyAlias: orNil(k.Alias), Token: k.Token, Expires: k.Expires,
		UserID: orNil(k.UserID), TeamID: orNil(k.TeamID), OrganizationID: orNil(k.OrganizationID),
		Metadata: k.Metadata, ObjectPermission: k.Permission, Blocked: k.Blocked, RPMLimit: k.RPMLimit,
		MaxParallelRequests: k.MaxParallelRequests, MCPRPMLimit: k.MCPRPMLimit, Spend: k.Spend, MaxBudget: k.MaxBudget,
		BudgetDuration: orNil(k.Budget.Duration), BudgetResetAt: k.Budget.ResetAt, CreatedAt: k.CreatedAt, UpdatedAt: k.UpdatedAt}
}

// keyError answers LiteLLM's ProxyException shape:
// {"error": {"message", "type", "param", "code"}}, code being the status as a string.
func keyError(w http.ResponseWriter, status int, typ, param, msg string) {
	var p *string
	if param != "" {
		p = &param
	}
	writeJSON(w, status, map[string]any{"error": map[string]any{
		"message": msg, "type": typ, "param": p, "code": strconv.Itoa(status)}})
}

// fail answers err: a badRequest is 400, a store.RefError as failRef says, an unknown key
// 404, a duplicate alias 400, anything else 500 (logged; the store's text is not shown).
func (k *Keys) fail(ctx context.Context, w http.ResponseWriter, err error) {
	var br *badRequest
	var re *store.RefError
	switch {
	case errors.As(err, &br):
		keyError(w, http.StatusBadRequest, "invalid_request_error", br.param, br.msg)
	case errors.As(err, &re):
		failRef(w, re)
	case errors.Is(err, store.ErrDuplicateAlias):
		keyError(w, http.StatusBadRequest, "invalid_request_error", "key_alias",
			"key_alias already in use: key aliases must be unique")
	case errors.Is(err, store.ErrNotFound):
		keyError(w, http.StatusNotFound, "not_found_error", "key", err.Error())
	default:
		k.cfg.Logger.ErrorContext(ctx, "key store failed", "error", err.Error())
		keyError(w, http.StatusInternalServerError, "internal_server_error", "", "key store failed")
	}
}

func (k *Keys) generate(w http.ResponseWriter, r *http.Request, body []byte) {
	nk, err := decodeGenerate(body, k.cfg.Now())
	if err != nil {
		k.fail(r.Context(), w, err)
		return
	}
	if m := managerOf(r); !m.admin() {
		if nk.UserID == "" {
			nk.UserID = m.caller.UserID // a key a user makes is theirs, unless they name another
		}
		if nk.RPMLimit != nil || nk.MaxParallelRequests != nil || nk.MCPRPMLimit != nil || nk.MaxBudget != nil || nk.BudgetDuration != "" {
			forbid(w, "only the proxy admin may set rpm_limit, max_parallel_requests, mcp_rpm_limit, max_budget or budget_duration")
			return
		}
		ok, err := m.mayKey(r.Context(), true, nk.UserID, nk.TeamID)
		if !k.allow(w, r, ok && m.mayMint(nk.UserID), err, "create a key for that user or team") {
			return
		}
		if !k.allowGuardrails(w, r, nil, nk.Metadata, nk.TeamID) {
			return
		}
	}
	secret, stored, err := k.cfg.Store.Generate(r.Context(), nk)
	if err != nil {
		k.fail(r.Context(), w, err)
		return
	}
	out := toJSON(stored)
	out.Key = secret
	writeJSON(w, http.StatusOK, out)
}

func (k *Keys) info(w http.ResponseWriter, r *http.Request, _ []byte) {
	ref := r.URL.Query().Get("key")
	if ref == "" {
		k.fail(r.Context(), w, bad("key", "key: required (?key=sk-... or its token)"))
		return
	}
	token, err := tokenOf("key", ref)
	if err != nil {
		k.fail(r.Context(), w, err)
		return
	}
	stored, err := k.cfg.Store.Get(r.Context(), token)
	if err != nil {
		k.fail(r.Context(), w, err)
		return
	}
	ok, err := managerOf(r).mayKey(r.Context(), false, stored.UserID, stored.TeamID)
	if !k.allow(w, r, ok, err, "read this key") {
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"key": token, "info": toJSON(stored)})
}

func (k *Keys) delete(w http.ResponseWriter, r *http.Request, body []byte) {
	tokens, err := decodeDelete(body)
	if err != nil {
		k.fail(r.Context(), w, err)
		return
	}
	for _, t := range tokens {
		if !k.allowKeyChange(w, r, t, nil, false) {
			return
		}
	}
	err = k.cfg.Store.Delete(r.Context(), tokens)
	if err != nil {
		k.fail(r.Context(), w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"deleted_keys": tokens})
}

func (k *Keys) block(blocked bool) func(http.ResponseWriter, *http.Request, []byte) {
	return func(w http.ResponseWriter, r *http.Request, body []byte) {
		token, err := decodeKeyRef(body)
		if err != nil {
			k.fail(r.Context(), w, err)
			return
		}
		if !k.allowKeyChange(w, r, token, nil, false) {
			return
		}
		stored, err := k.cfg.Store.SetBlocked(r.Context(), token, blocked)
		if err != nil {
			k.fail(r.Context(), w, err)
			return
		}
		writeJSON(w, http.StatusOK, toJSON(stored))
	}
}

func (k *Keys) update(w http.ResponseWriter, r *http.Request, body []byte) {
	token, change, err := decodeUpdate(body, k.cfg.Now())
	if err != nil {
		k.fail(r.Context(), w, err)
		return
	}
	if !k.allowKeyChange(w, r, token, change, false) {
		return
	}
	stored, err := k.cfg.Store.Update(r.Context(), token, change)
	if err != nil {
		k.fail(r.Context(), w, err)
		return
	}
	writeJSON(w, http.StatusOK, toJSON(stored))
}

func (k *Keys) list(w http.ResponseWriter, r *http.Request, _ []byte) {
	q, page, full, err := decodeList(r.URL.Query())
	if err != nil {
		k.fail(r.Context(), w, err)
		return
	}
	if !k.scopeKeyList(w, r, &q) {
		return
	}
	keys, total, err := k.cfg.Store.List(r.Context(), q)
	if err != nil {
		k.fail(r.Context(), w, err)
		return
	}
	out := make([]any, 0, len(keys))
	for _, key := range keys {
		if full {
			out = append(out, toJSON(key))
		} else {
			out = append(out, key.Token)
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"keys": out, "total_count": total, "current_page": page,
		"total_pages": (total + q.Limit - 1) / q.Limit})
}

// scopeKeyList narrows a /key/list query to what the caller may read: everything for the proxy
// admin and proxy_admin_viewer; a team's keys for that team's admins (team_id given); otherwise
// the caller's own keys (another user_id is refused).
func (k *Keys) scopeKeyList(w http.ResponseWriter, r *http.Request, q *store.ListQuery) bool {
	m := managerOf(r)
	if m.viewer() {
		return true
	}
	if q.TeamID != "" {
		role, err := m.teamRole(r.Context(), q.TeamID)
		if err != nil {
			k.fail(r.Context(), w, err)
			return false
		}
		if role == store.TeamRoleAdmin {
			return true
		}
	}
	if m.caller.UserID == "" || !m.ownsKeys(false) || q.UserID != "" && q.UserID != m.caller.UserID {
		forbid(w, "your role lets you list only your own keys (or, as a team admin, your team's with team_id)")
		return false
	}
	q.UserID = m.caller.UserID
	return true
}
