package front

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"time"

	"github.com/mcpgw/mcpgw/internal/identity"
	"github.com/mcpgw/mcpgw/internal/store"
)

// maxPinBodyBytes bounds a pin request's body.
const maxPinBodyBytes = 1 << 20

// PinAdmin is the tool-definition pinning the pin routes manage (internal/pinning).
type PinAdmin interface {
	// Approve pins server's current definitions (tools nil: the whole server) and approves
	// quarantined ones; by names the admin.
	Approve(ctx context.Context, server string, tools []string, by string) ([]store.ToolPin, error)
	// Unpin removes server's pins of tools (nil: all).
	Unpin(ctx context.Context, server string, tools []string, by string) (int, error)
	// Status returns server's pins as stored.
	Status(ctx context.Context, server string) ([]store.ToolPin, error)
	// Configured reports what server's configuration pins: every tool, or the tools named.
	Configured(server string) (all bool, tools []string)
	// Events returns server's latest pin events, newest first, at most limit.
	Events(ctx context.Context, server string, limit int) ([]store.PinEvent, error)
}

// pinEventsShown is how many of a server's latest pin events GET answers with.
const pinEventsShown = 50

// PinRoutes serves GET, POST and DELETE /v1/mcp/server/{server_id}/pin: a server's pinned
// tool definitions and quarantined tools, approving them, and removing pins.
type PinRoutes struct {
	h    *MCPServers
	pins PinAdmin
}

// NewPinRoutes returns the pin routes over the server registry routes' configuration.
func NewPinRoutes(cfg MCPServersConfig, pins PinAdmin) *PinRoutes {
	return &PinRoutes{h: NewMCPServers(cfg), pins: pins}
}

// Register adds the routes to mux.
func (p *PinRoutes) Register(mux *http.ServeMux) {
	mux.HandleFunc("GET /v1/mcp/server/{server_id}/pin", p.h.authed(p.viewer(p.status)))
	mux.HandleFunc("POST /v1/mcp/server/{server_id}/pin", p.h.authed(p.h.admin("pin tools of", p.approve)))
	mux.HandleFunc("DELETE /v1/mcp/server/{server_id}/pin", p.h.authed(p.h.admin("unpin tools of", p.unpin)))
}

// PinView is one pinned or quarantined tool as the pin routes answer it.
type PinView struct {
	Tool             string    `json:"tool"`
	Digest           string    `json:"digest"`
	Quarantined      bool      `json:"quarantined"`
	QuarantineReason string    `json:"quarantine_reason,omitempty"`
	Changed          []string  `json:"changed,omitempty"`
	PendingDigest    string    `json:"pending_digest,omitempty"`
	UpdatedAt        time.Time `json:"updated_at"`
	UpdatedBy        string    `json:"updated_by,omitempty"`
}

// PinStatus is the pin routes' answer for one server.
type PinStatus struct {
	ServerID           string    `json:"server_id"`
	ServerName         string    `json:"server_name"`
	PinToolDefinitions bool      `json:"pin_tool_definitions"`
	PinnedTools        []string  `json:"pinned_tools"`
	ServerPinned       bool      `json:"server_pinned"`
	Pins               []PinView `json:"pins"`
	Quarantined        []PinView `json:"quarantined"`
	// Events are the latest pin events (pinned, quarantined, restored, approved, unpinned),
	// newest first; GET only.
	Events []PinEventView `json:"events,omitempty"`
}

// PinEventView is one audit row of the pin routes' answer.
type PinEventView struct {
	Tool    string    `json:"tool"`
	Event   string    `json:"event"`
	Changed []string  `json:"changed,omitempty"`
	Actor   string    `json:"actor,omitempty"`
	At      time.Time `json:"at"`
}

type pinHandler func(w http.ResponseWriter, r *http.Request, c *identity.Caller, v MCPServerView)

// server resolves {server_id} (an id or a name) before next.
func (p *PinRoutes) server(next pinHandler) serverHandler {
	return func(w http.ResponseWriter, r *http.Request, c *identity.Caller) {
		id := r.PathValue("server_id")
		all, err := p.h.cfg.Registry.Servers(r.Context())
		if err != nil {
			p.h.cfg.Logger.Error("mcp servers not listed", "error", err.Error())
			keyError(w, http.StatusInternalServerError, "internal_error", "", "the servers could not be listed")
			return
		}
		for _, v := range all {
			if v.ServerID == id || v.ServerName == id {
				next(w, r, c, v)
				return
			}
		}
		keyError(w, http.StatusNotFound, "not_found", "server_id", "MCP server '"+id+"' not found")
	}
}

// viewer lets only a proxy admin or viewer through.
func (p *PinRoutes) viewer(next pinHandler) serverHandler {
	return p.server(func(w http.ResponseWriter, r *http.Request, c *identity.Caller, v MCPServerView) {
		if !(manager{caller: c}).viewer() {
			forbid(w, "Only a PROXY_ADMIN or PROXY_ADMIN_VIEWER can see tool pins.")
			return
		}
		next(w, r, c, v)
	})
}

func (p *PinRoutes) status(w http.ResponseWriter, r *http.Request, _ *identity.Caller, v MCPServerView) {
	pins, err := p.pins.Status(r.Context(), v.ServerName)
	if err != nil {
		p.answer(w, v, nil, err)
		return
	}
	events, err := p.pins.Events(r.Context(), v.ServerName, pinEventsShown)
	if err != nil {
		p.answer(w, v, nil, err)
		return
	}
	views := make([]PinEventView, 0, len(events))
	for _, e := range events {
		views = append(views, PinEventView{Tool: e.Tool, Event: e.Event, Changed: e.Changed, Actor: e.Actor, At: e.At})
	}
	p.answer(w, v, pins, nil, views...)
}

func (p *PinRoutes) approve(w http.ResponseWriter, r *http.Request, c *identity.Caller) {
	p.server(func(w http.ResponseWriter, r *http.Request, c *identity.Caller, v MCPServerView) {
		tools, ok := pinTools(w, r)
		if !ok {
			return
		}
		pins, err := p.pins.Approve(r.Context(), v.ServerName, tools, callerName(c))
		p.answer(w, v, pins, err)
	})(w, r, c)
}

func (p *PinRoutes) unpin(w http.ResponseWriter, r *http.Request, c *identity.Caller) {
	p.server(func(w http.ResponseWriter, r *http.Request, c *identity.Caller, v MCPServerView) {
		tools, ok := pinTools(w, r)
		if !ok {
			return
		}
		if _, err := p.pins.Unpin(r.Context(), v.ServerName, tools, callerName(c)); err != nil {
			p.answer(w, v, nil, err)
			return
		}
		pins, err := p.pins.Status(r.Context(), v.ServerName)
		p.answer(w, v, pins, err)
	})(w, r, c)
}

// pinTools reads the optional body {"tools": [...]}: nil means the whole server.
func pinTools(w http.ResponseWriter, r *http.Request) ([]string, bool) {
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxPinBodyBytes))
	if err != nil {
		keyError(w, http.StatusBadRequest, "invalid_request_error", "", "the body could not be read")
		return nil, false
	}
	if len(data) == 0 {
		return nil, true
	}
	var body struct {
		Tools []string `json:"tools"`
	}
	if err := json.Unmarshal(data, &body); err != nil {
		keyError(w, http.StatusBadRequest, "invalid_request_error", "tools", "the body must be {\"tools\": [names]} or empty")
		return nil, false
	}
	for _, t := range body.Tools {
		if t == "" {
			keyError(w, http.StatusBadRequest, "invalid_request_error", "tools", "a tool name is empty")
			return nil, false
		}
	}
	if len(body.Tools) == 0 {
		return nil, true
	}
	return body.Tools, true
}

func (p *PinRoutes) answer(w http.ResponseWriter, v MCPServerView, pins []store.ToolPin, err error, events ...PinEventView) {
	if err != nil {
		p.h.cfg.Logger.Error("tool pins not read or written", "server", v.ServerName, "error", err.Error())
		keyError(w, http.StatusInternalServerError, "internal_error", "", "the tool pins could not be read or written")
		return
	}
	all, tools := p.pins.Configured(v.ServerName)
	out := PinStatus{ServerID: v.ServerID, ServerName: v.ServerName, PinToolDefinitions: all, PinnedTools: tools,
		Pins: []PinView{}, Quarantined: []PinView{}, Events: events}
	if out.PinnedTools == nil {
		out.PinnedTools = []string{}
	}
	for _, pin := range pins {
		if pin.Tool == "" {
			out.ServerPinned = true
			continue
		}
		pv := PinView{Tool: pin.Tool, Digest: pin.Digest, Quarantined: pin.Quarantine != "", QuarantineReason: pin.Quarantine,
			Changed: pin.Changed, PendingDigest: pin.PendingDigest, UpdatedAt: pin.UpdatedAt, UpdatedBy: pin.UpdatedBy}
		if pv.Quarantined {
			out.Quarantined = append(out.Quarantined, pv)
		} else {
			out.Pins = append(out.Pins, pv)
		}
	}
	writeJSON(w, http.StatusOK, out)
}
