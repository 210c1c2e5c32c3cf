package front

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/mcpgw/mcpgw/internal/identity"
)

// DefaultServerHealthTimeout bounds the checks one GET /v1/mcp/server/health
// waits for when ServerHealthConfig.Timeout is zero.
const DefaultServerHealthTimeout = 15 * time.Second

// maxHealthIDs bounds the server_ids one request may name.
const maxHealthIDs = 1000

// ServerHealthConfig is what GET /v1/mcp/server/health is built from.
type ServerHealthConfig struct {
	Auth *identity.Authenticator
	// Visible lists the names of the servers the caller may use, in config
	// order (the policy decision listings use).
	Visible func(*identity.Caller) []string
	// All lists every server's name, in config order: what the proxy admin
	// and proxy_admin_viewer see.
	All func() []string
	// Resolve maps a server_id, name or alias to the server's name.
	Resolve func(string) (string, bool)
	// ServerID is a server's server_id (its name when none is configured).
	ServerID func(name string) string
	// Check checks the named servers now (concurrently, bounded) and
	// returns each one's health; it returns when ctx ends at the latest.
	Check func(ctx context.Context, names []string) map[string]ServerHealth
	// Timeout bounds the checks of one request; zero: DefaultServerHealthTimeout.
	Timeout time.Duration
	Logger  *slog.Logger
}

// ServerHealthAPI serves GET /v1/mcp/server/health.
type ServerHealthAPI struct{ cfg ServerHealthConfig }

// NewServerHealthAPI returns the server health route.
func NewServerHealthAPI(cfg ServerHealthConfig) *ServerHealthAPI {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultServerHealthTimeout
	}
	return &ServerHealthAPI{cfg: cfg}
}

// Register adds GET /v1/mcp/server/health to mux.
func (a *ServerHealthAPI) Register(mux *http.ServeMux) {
	mux.HandleFunc("GET /v1/mcp/server/health", a.serve)
}

// serverHealthEntry is one server of the answer: LiteLLM's {server_id,
// status}, with when it was checked and why it failed.
type serverHealthEntry struct {
	ServerID         string  `json:"server_id"`
	Status           string  `json:"status"`
	LastHealthCheck  *string `json:"last_health_check"`
	HealthCheckError *string `json:"health_check_error"`
}

// serve checks the servers the caller may see (those named by server_ids,
// repeated or comma-separated, when given) and answers a JSON list in
// config order. Ids the caller may not see, or that name no server, are left
// out, as LiteLLM does: the answer never tells which servers exist beyond
// the caller's own.
func (a *ServerHealthAPI) serve(w http.ResponseWriter, r *http.Request) {
	caller, err := a.cfg.Auth.Authenticate(r.Context(), r, r.URL.Path)
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
	var names []string
	if m := (manager{caller: caller}); m.viewer() {
		names = a.cfg.All()
	} else {
		names = a.cfg.Visible(caller)
	}
	var ids []string
	for _, v := range r.URL.Query()["server_ids"] {
		for id := range strings.SplitSeq(v, ",") {
			if id = strings.TrimSpace(id); id != "" {
				ids = append(ids, id)
			}
		}
	}
	if len(ids) > maxHealthIDs {
		keyError(w, http.StatusBadRequest, "invalid_request_error", "server_ids", "server_ids names more than 1000 servers")
		return
	}
	if len(ids) > 0 {
		names = a.named(names, ids)
	}
	ctx, cancel := context.WithTimeout(r.Context(), a.cfg.Timeout)
	defer cancel()
	results := a.cfg.Check(ctx, names)
	out := make([]serverHealthEntry, 0, len(names))
	for _, n := range names {
		out = append(out, healthEntry(a.cfg.ServerID(n), results[n]))
	}
	writeJSON(w, http.StatusOK, out)
}

// named keeps the names among visible that one of ids resolves to, in
// visible's order.
func (a *ServerHealthAPI) named(visible, ids []string) []string {
	want := make(map[string]bool, len(ids))
	for _, id := range ids {
		if n, ok := a.cfg.Resolve(id); ok {
			want[n] = true
		}
	}
	var out []string
	for _, n := range visible {
		if want[n] {
			out = append(out, n)
		}
	}
	return out
}

// healthEntry renders one server's health.
func healthEntry(id string, h ServerHealth) serverHealthEntry {
	e := serverHealthEntry{ServerID: id, Status: h.Status}
	if e.Status == "" {
		e.Status = HealthUnknown
	}
	if !h.LastCheck.IsZero() {
		t := h.LastCheck.UTC().Format(time.RFC3339Nano)
		e.LastHealthCheck = &t
	}
	if h.Error != "" {
		msg := h.Error
		e.HealthCheckError = &msg
	}
	return e
}
