package front

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"slices"
	"time"

	"github.com/mcpgw/mcpgw/internal/identity"
)

// MaskedSecret replaces every credential value in the server registry's answers.
const MaskedSecret = "****"

// MCPServerView is one server as /v1/mcp/server answers it: LiteLLM's LiteLLM_MCPServerTable
// field names, every credential value masked (MaskedSecret; an os.environ/NAME reference of a
// stored server is shown as written). Status, LastHealthCheck and HealthCheckError are filled
// by the routes from MCPServersConfig.Health.
type MCPServerView struct {
	ServerID              string              `json:"server_id"`
	ServerName            string              `json:"server_name"`
	Alias                 *string             `json:"alias"`
	Description           *string             `json:"description"`
	URL                   *string             `json:"url"`
	Transport             string              `json:"transport"`
	Command               *string             `json:"command"`
	Args                  []string            `json:"args"`
	Env                   map[string]string   `json:"env"`
	AuthType              *string             `json:"auth_type"`
	Credentials           *MCPCredentialsView `json:"credentials"`
	AuthHeaderName        *string             `json:"auth_header_name"`
	OAuth2Flow            *string             `json:"oauth2_flow"`
	TokenURL              *string             `json:"token_url"`
	AuthorizationURL      *string             `json:"authorization_url"`
	MCPAccessGroups       []string            `json:"mcp_access_groups"`
	AllowedTools          []string            `json:"allowed_tools"`
	DisallowedTools       []string            `json:"disallowed_tools"`
	ExtraHeaders          []string            `json:"extra_headers"`
	StaticHeaders         map[string]string   `json:"static_headers"`
	MCPInfo               json.RawMessage     `json:"mcp_info"`
	Timeout               *float64            `json:"timeout"`
	MaxConcurrentRequests *int64              `json:"max_concurrent_requests"`
	RPM                   *int64              `json:"rpm"`
	AllowAllKeys          bool                `json:"allow_all_keys"`
	// The settings of a config file's server that LiteLLM's table has no column for, under
	// their mcp_servers names.
	SpecPath           *string    `json:"spec_path"`
	ProtocolVersion    *string    `json:"protocol_version"`
	ForwardIdentity    *string    `json:"forward_identity"`
	AllowElicitation   bool       `json:"allow_elicitation"`
	AllowSampling      bool       `json:"allow_sampling"`
	PinToolDefinitions bool       `json:"pin_tool_definitions"`
	PinnedTools        []string   `json:"pinned_tools"`
	Guardrails         []string   `json:"guardrails"`
	Status             string     `json:"status"`
	LastHealthCheck    *time.Time `json:"last_health_check"`
	HealthCheckError   *string    `json:"health_check_error"`
	CreatedAt          *time.Time `json:"created_at"`
	UpdatedAt          *time.Time `json:"updated_at"`
	CreatedBy          *string    `json:"created_by"`
	UpdatedBy          *string    `json:"updated_by"`
	// ReadOnly is true for a server from the config file: the API may not change it.
	ReadOnly bool `json:"read_only"`
}

// MCPCredentialsView is LiteLLM's MCPCredentials with its secrets masked.
type MCPCredentialsView struct {
	AuthValue    *string  `json:"auth_value,omitempty"`
	ClientID     *string  `json:"client_id,omitempty"`
	ClientSecret *string  `json:"client_secret,omitempty"`
	Scopes       []string `json:"scopes,omitempty"`
}

// ServerRegistry is what the server routes read and change: the config file's servers
// (read-only) and the stored ones. Its errors are *ServerError when the caller must fix
// something; any other error is answered 500 without its text.
type ServerRegistry interface {
	// Servers returns every server, the file's first.
	Servers(ctx context.Context) ([]MCPServerView, error)
	// Create stores a new server and applies it; by names the caller.
	Create(ctx context.Context, spec MCPServerSpec, by string) (MCPServerView, error)
	// Update changes the stored server spec.ServerID names and applies it.
	Update(ctx context.Context, spec MCPServerSpec, by string) (MCPServerView, error)
	// Delete removes the stored server id and applies the change.
	Delete(ctx context.Context, id string) error
}

// ServerError is a refusal the caller can act on: its message never holds a credential.
type ServerError struct {
	Status int    // an HTTP status
	Param  string // the offending field, or ""
	Msg    string
}

func (e *ServerError) Error() string { return e.Msg }

// MCPServersConfig builds the server registry routes.
type MCPServersConfig struct {
	Auth     *identity.Authenticator
	Registry ServerRegistry
	// Visible returns the names of the servers c may see (the policy listings use).
	Visible func(c *identity.Caller) []string
	// Health is the prober's last word on a server; nil answers status "unknown".
	Health func(serverID string) ServerHealth
	// Tools lists the tools c may see, LiteLLM's /v1/mcp/tools answer; nil answers an empty list.
	Tools  func(w http.ResponseWriter, r *http.Request, c *identity.Caller)
	Logger *slog.Logger
}

// MCPServers serves LiteLLM's MCP server management routes: GET/POST/PUT /v1/mcp/server,
// GET/DELETE /v1/mcp/server/{server_id}, GET /v1/mcp/access_groups and GET /v1/mcp/tools.
type MCPServers struct {
	cfg MCPServersConfig
}

// NewMCPServers returns the server registry routes.
func NewMCPServers(cfg MCPServersConfig) *MCPServers {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &MCPServers{cfg: cfg}
}

// Register adds the routes to mux.
func (h *MCPServers) Register(mux *http.ServeMux) {
	mux.HandleFunc("GET /v1/mcp/server", h.authed(h.list))
	mux.HandleFunc("GET /v1/mcp/server/{server_id}", h.authed(h.get))
	mux.HandleFunc("POST /v1/mcp/server", h.authed(h.admin("create", h.create)))
	mux.HandleFunc("PUT /v1/mcp/server", h.authed(h.admin("update", h.update)))
	mux.HandleFunc("DELETE /v1/mcp/server/{server_id}", h.authed(h.admin("delete", h.delete)))
	mux.HandleFunc("GET /v1/mcp/access_groups", h.authed(h.accessGroups))
	mux.HandleFunc("GET /v1/mcp/tools", h.authed(h.tools))
}

type serverHandler func(w http.ResponseWriter, r *http.Request, c *identity.Caller)

// authed authenticates the caller, in the management routes' error shape.
func (h *MCPServers) authed(next serverHandler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		caller, err := h.cfg.Auth.Authenticate(r.Context(), r, r.URL.Path)
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
		next(w, r, caller)
	}
}

// admin lets only the proxy admin through, with LiteLLM's message for the others.
func (h *MCPServers) admin(verb string, next serverHandler) serverHandler {
	return func(w http.ResponseWriter, r *http.Request, c *identity.Caller) {
		if !(manager{caller: c}).admin() {
			forbid(w, "User does not have permission to "+verb+" mcp servers. You can only "+verb+
				" mcp servers if you are a PROXY_ADMIN.")
			return
		}
		next(w, r, c)
	}
}

// visible returns the servers c may see: every one for a proxy admin or viewer, else those
// the policy shows c.
func (h *MCPServers) visible(ctx context.Context, c *identity.Caller) ([]MCPServerView, error) {
	all, err := h.cfg.Registry.Servers(ctx)
	if err != nil {
		return nil, err
	}
	if !(manager{caller: c}).viewer() {
		var names []string
		if h.cfg.Visible != nil {
			names = h.cfg.Visible(c)
		}
		all = slices.DeleteFunc(all, func(v MCPServerView) bool { return !slices.Contains(names, v.ServerName) })
	}
	for i := range all {
		h.withHealth(&all[i])
	}
	return all, nil
}

// withHealth fills v's health fields from the prober.
func (h *MCPServers) withHealth(v *MCPServerView) {
	v.Status = HealthUnknown
	if h.cfg.Health == nil {
		return
	}
	sh := h.cfg.Health(v.ServerID)
	if sh.Status != "" {
		v.Status = sh.Status
	}
	if !sh.LastCheck.IsZero() {
		t := sh.LastCheck.UTC()
		v.LastHealthCheck = &t
	}
	if sh.Error != "" {
		e := sh.Error
		v.HealthCheckError = &e
	}
}

func (h *MCPServers) list(w http.ResponseWriter, r *http.Request, c *identity.Caller) {
	all, err := h.visible(r.Context(), c)
	if err != nil {
		h.fail(r.Context(), w, err)
		return
	}
	if all == nil {
		all = []MCPServerView{}
	}
	writeJSON(w, http.StatusOK, all)
}

func (h *MCPServers) get(w http.ResponseWriter, r *http.Request, c *identity.Caller) {
	id := r.PathValue("server_id")
	all, err := h.visible(r.Context(), c)
	if err != nil {
		h.fail(r.Context(), w, err)
		return
	}
	for _, v := range all {
		if v.ServerID == id {
			writeJSON(w, http.StatusOK, v)
			return
		}
	}
	for _, v := range all {
		if v.ServerName == id {
			writeJSON(w, http.StatusOK, v)
			return
		}
	}
	keyError(w, http.StatusNotFound, "not_found_error", "server_id", "mcp server '"+truncate(id)+"' not found")
}

func (h *MCPServers) create(w http.ResponseWriter, r *http.Request, c *identity.Caller) {
	spec, err := decodeServerSpec(r, w, false)
	if err != nil {
		h.fail(r.Context(), w, err)
		return
	}
	v, err := h.cfg.Registry.Create(r.Context(), spec, callerName(c))
	if err != nil {
		h.fail(r.Context(), w, err)
		return
	}
	h.withHealth(&v)
	writeJSON(w, http.StatusCreated, v)
}

func (h *MCPServers) update(w http.ResponseWriter, r *http.Request, c *identity.Caller) {
	spec, err := decodeServerSpec(r, w, true)
	if err != nil {
		h.fail(r.Context(), w, err)
		return
	}
	v, err := h.cfg.Registry.Update(r.Context(), spec, callerName(c))
	if err != nil {
		h.fail(r.Context(), w, err)
		return
	}
	h.withHealth(&v)
	writeJSON(w, http.StatusOK, v)
}

func (h *MCPServers) delete(w http.ResponseWriter, r *http.Request, _ *identity.Caller) {
	id := r.PathValue("server_id")
	if err := h.cfg.Registry.Delete(r.Context(), id); err != nil {
		h.fail(r.Context(), w, err)
		return
	}
	writeJSON(w, http.StatusAccepted, map[string]string{"message": "mcp server '" + truncate(id) + "' deleted"})
}

func (h *MCPServers) accessGroups(w http.ResponseWriter, r *http.Request, c *identity.Caller) {
	all, err := h.visible(r.Context(), c)
	if err != nil {
		h.fail(r.Context(), w, err)
		return
	}
	groups := []string{}
	for _, v := range all {
		for _, g := range v.MCPAccessGroups {
			if g != "" && !slices.Contains(groups, g) {
				groups = append(groups, g)
			}
		}
	}
	slices.Sort(groups)
	writeJSON(w, http.StatusOK, map[string]any{"access_groups": groups})
}

func (h *MCPServers) tools(w http.ResponseWriter, r *http.Request, c *identity.Caller) {
	if h.cfg.Tools == nil {
		writeJSON(w, http.StatusOK, map[string]any{"tools": []any{}})
		return
	}
	h.cfg.Tools(w, r, c)
}

// fail answers err: a *ServerError as it says, anything else 500 (logged; its text, which
// names no credential but may name internals, is not shown).
func (h *MCPServers) fail(ctx context.Context, w http.ResponseWriter, err error) {
	var se *ServerError
	if errors.As(err, &se) {
		typ := "invalid_request_error"
		switch se.Status {
		case http.StatusNotFound:
			typ = "not_found_error"
		case http.StatusConflict:
			typ = "conflict_error"
		case http.StatusForbidden, http.StatusUnauthorized:
			typ = "auth_error"
		case http.StatusInternalServerError, http.StatusServiceUnavailable:
			typ = "internal_server_error"
		}
		keyError(w, se.Status, typ, se.Param, se.Msg)
		return
	}
	h.cfg.Logger.ErrorContext(ctx, "mcp server registry failed", "error", err.Error())
	keyError(w, http.StatusInternalServerError, "internal_server_error", "", "mcp server registry failed")
}

// callerName names the caller in created_by/updated_by: its user id, else "proxy_admin" for
// the master key.
func callerName(c *identity.Caller) string {
	switch {
	case c == nil:
		return ""
	case c.UserID != "":
		return c.UserID
	case c.IsMaster:
		return "proxy_admin"
	}
	return ""
}
