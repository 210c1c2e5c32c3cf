package front

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"

	"github.com/mcpgw/mcpgw/internal/gateway"
	"github.com/mcpgw/mcpgw/internal/identity"
)

// maxExplainBody bounds an explain request's body.
const maxExplainBody = 1 << 20

// PolicyExplain serves POST /v1/mcp/policy/explain (proxy admin only): whether a caller may use
// one tool on one server, with every permission level and mcp_policies rule that decided it.
type PolicyExplain struct {
	Auth    *identity.Authenticator
	Gateway *gateway.Gateway
}

// Register adds the route to mux.
func (h *PolicyExplain) Register(mux *http.ServeMux) {
	s := &MCPServers{cfg: MCPServersConfig{Auth: h.Auth}}
	mux.HandleFunc("POST /v1/mcp/policy/explain", s.authed(h.admin(h.explain)))
}

func (h *PolicyExplain) admin(next serverHandler) serverHandler {
	return func(w http.ResponseWriter, r *http.Request, c *identity.Caller) {
		if !(manager{caller: c}).admin() {
			forbid(w, "Only a PROXY_ADMIN may ask for a policy explanation.")
			return
		}
		next(w, r, c)
	}
}

// explainRequest names the caller by key (resolved as a request with that key would be, with
// end_user_id as x-litellm-end-user-id) or by identity (its fields and, optionally, its own
// object_permission lists; it has no other levels), the server (name, id or alias), the tool
// (bare upstream name) and, for a tools/call, its arguments.
type explainRequest struct {
	Key       string           `json:"key"`
	EndUserID string           `json:"end_user_id"`
	Identity  *explainIdentity `json:"identity"`
	Server    string           `json:"server"`
	Tool      string           `json:"tool"`
	Arguments json.RawMessage  `json:"arguments"`
}

type explainIdentity struct {
	UserID           string `json:"user_id"`
	TeamID           string `json:"team_id"`
	OrgID            string `json:"org_id"`
	EndUserID        string `json:"end_user_id"`
	KeyAlias         string `json:"key_alias"`
	Role             string `json:"user_role"`
	ObjectPermission struct {
		MCPServers         []string            `json:"mcp_servers"`
		MCPAccessGroups    []string            `json:"mcp_access_groups"`
		MCPToolPermissions map[string][]string `json:"mcp_tool_permissions"`
		BlockedTools       []string            `json:"blocked_tools"`
	} `json:"object_permission"`
}

func (h *PolicyExplain) explain(w http.ResponseWriter, r *http.Request, _ *identity.Caller) {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxExplainBody+1))
	if err != nil || len(body) > maxExplainBody {
		keyError(w, http.StatusBadRequest, "invalid_request_error", "", "request body unreadable or too large")
		return
	}
	var req explainRequest
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		keyError(w, http.StatusBadRequest, "invalid_request_error", "", "invalid JSON body: "+clipMsg(err.Error()))
		return
	}
	switch {
	case req.Server == "" || req.Tool == "":
		keyError(w, http.StatusBadRequest, "invalid_request_error", "server", "server and tool are required")
		return
	case (req.Key == "") == (req.Identity == nil):
		keyError(w, http.StatusBadRequest, "invalid_request_error", "key", "give exactly one of key and identity")
		return
	case req.Arguments != nil && (len(bytes.TrimSpace(req.Arguments)) == 0 || bytes.TrimSpace(req.Arguments)[0] != '{'):
		keyError(w, http.StatusBadRequest, "invalid_request_error", "arguments", "arguments must be an object")
		return
	}
	subject, err := h.subject(r, &req)
	if err != nil {
		keyError(w, http.StatusBadRequest, "invalid_request_error", "key", err.Error())
		return
	}
	writeJSON(w, http.StatusOK, h.Gateway.Explain(r.Context(), subject, req.Server, req.Tool, req.Arguments))
}

// subject is the caller the request names: a key resolved as a request carrying it would be
// (never logged, never echoed), or the identity as given.
func (h *PolicyExplain) subject(r *http.Request, req *explainRequest) (*identity.Caller, error) {
	if id := req.Identity; id != nil {
		op := id.ObjectPermission
		return &identity.Caller{UserID: id.UserID, TeamID: id.TeamID, OrgID: id.OrgID, EndUserID: id.EndUserID,
			KeyAlias: id.KeyAlias, Role: id.Role, Servers: op.MCPServers, AccessGroups: op.MCPAccessGroups,
			ToolPermissions: op.MCPToolPermissions, BlockedTools: op.BlockedTools}, nil
	}
	probe, err := http.NewRequestWithContext(r.Context(), http.MethodPost, "/mcp", http.NoBody)
	if err != nil {
		return nil, errors.New("cannot build the key's request")
	}
	probe.Header.Set("Authorization", "Bearer "+req.Key)
	if req.EndUserID != "" {
		probe.Header.Set(identity.EndUserHeader, req.EndUserID)
	}
	c, err := h.Auth.Authenticate(r.Context(), probe, "tools/call")
	if err != nil {
		var ae *identity.Error
		if errors.As(err, &ae) {
			return nil, errors.New("the key is not accepted: " + ae.Message)
		}
		return nil, errors.New("the key is not accepted")
	}
	return c, nil
}

func clipMsg(s string) string {
	if len(s) > 200 {
		return s[:200] + "…"
	}
	return s
}
