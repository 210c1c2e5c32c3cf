package front

import (
	"context"
	"encoding/json"
	"net/http"
	"time"
)

// DefaultCheckTimeout bounds each readiness check when Health.CheckTimeout is zero.
const DefaultCheckTimeout = 2 * time.Second

// Check is one readiness condition, such as "config" or "db".
type Check struct {
	// Name labels the check in the readiness body.
	Name string
	// Probe returns nil when the condition holds, else an error whose text is shown to callers
	// as the reason (so it must not contain secrets).
	Probe func(ctx context.Context) error
	// HideWhenOK leaves the check out of the readiness body while it passes, so adding it does
	// not change a ready gateway's answer.
	HideWhenOK bool
	// Advisory reports the check's failure in the readiness body without making readiness
	// fail: a dependency the gateway serves without (in a degraded way).
	Advisory bool
}

// Health serves LiteLLM's health endpoints: /health/liveliness (also spelled /health/liveness)
// and /health/readiness.
type Health struct {
	// Version is reported by readiness.
	Version string
	// Checks must all pass for readiness; they run in order, each bounded by CheckTimeout.
	Checks []Check
	// CheckTimeout bounds one check; zero means DefaultCheckTimeout.
	CheckTimeout time.Duration
	// Config, when set and returning non-nil, adds the running config's
	// state to the readiness body as "config".
	Config func() *ConfigStatus
	// Servers, when set, adds each MCP server's last health status
	// (HealthHealthy, HealthUnhealthy or HealthUnknown) to the readiness
	// body as "mcp_servers", keyed by server name. It never fails
	// readiness: one upstream being down does not make the gateway unready.
	Servers func() map[string]string
}

// ConfigStatus is the running config's state as readiness reports it. A
// failed reload does not fail readiness: the config running is still whole.
type ConfigStatus struct {
	// Generation counts the configs applied: 1 for the one started with.
	Generation int64 `json:"generation"`
	// LastReloadError is the first problem of the last reload, when it
	// failed and no reload has succeeded since; it never holds secrets.
	LastReloadError string `json:"last_reload_error,omitempty"`
}

// Register adds the health routes to mux.
func (h *Health) Register(mux *http.ServeMux) {
	mux.HandleFunc("GET /health/liveliness", h.Liveliness)
	mux.HandleFunc("GET /health/liveness", h.Liveliness)
	mux.HandleFunc("GET /health/readiness", h.Readiness)
}

// Liveliness answers 200 while the process serves HTTP, with LiteLLM's body "I'm alive!".
func (h *Health) Liveliness(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, "I'm alive!")
}

// readiness is the body of /health/readiness.
type readiness struct {
	Status  string            `json:"status"` // "healthy" or "unhealthy"
	Reason  string            `json:"reason,omitempty"`
	Checks  map[string]string `json:"checks"` // name → "ok" or the reason it failed
	Version string            `json:"version,omitempty"`
	Config  *ConfigStatus     `json:"config,omitempty"`
	Servers map[string]string `json:"mcp_servers,omitempty"`
}

// Readiness answers 200 {"status":"healthy",...} when every check passes, else 503
// {"status":"unhealthy","reason":"<name>: <why>",...} naming the first failing check.
func (h *Health) Readiness(w http.ResponseWriter, r *http.Request) {
	timeout := h.CheckTimeout
	if timeout <= 0 {
		timeout = DefaultCheckTimeout
	}
	body := readiness{Status: "healthy", Checks: make(map[string]string, len(h.Checks)), Version: h.Version}
	for _, c := range h.Checks {
		ctx, cancel := context.WithTimeout(r.Context(), timeout)
		err := c.Probe(ctx)
		cancel()
		if err == nil {
			if !c.HideWhenOK {
				body.Checks[c.Name] = "ok"
			}
			continue
		}
		body.Checks[c.Name] = err.Error()
		if body.Reason == "" && !c.Advisory {
			body.Status, body.Reason = "unhealthy", c.Name+": "+err.Error()
		}
	}
	if h.Config != nil {
		body.Config = h.Config()
	}
	if h.Servers != nil {
		body.Servers = h.Servers()
	}
	status := http.StatusOK
	if body.Reason != "" {
		status = http.StatusServiceUnavailable
	}
	writeJSON(w, status, body)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, `{"error":"internal error"}`, http.StatusInternalServerError)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}
