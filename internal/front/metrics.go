package front

import (
	"errors"
	"net/http"

	"github.com/mcpgw/mcpgw/internal/identity"
)

// Metrics serves GET /metrics: the Prometheus exposition Handler writes,
// behind the admin credential (the master key, or a caller whose role is
// proxy_admin) unless Public (litellm_settings.require_auth_for_metrics_endpoint
// false).
type Metrics struct {
	Auth    *identity.Authenticator
	Public  bool
	Handler http.Handler
}

// Register adds GET /metrics to mux.
func (m *Metrics) Register(mux *http.ServeMux) {
	mux.HandleFunc("GET /metrics", m.serve)
	mux.HandleFunc("GET /metrics/{$}", m.serve)
}

func (m *Metrics) serve(w http.ResponseWriter, r *http.Request) {
	if !m.Public {
		caller, err := m.Auth.Authenticate(r.Context(), withoutBindingHeaders(r), r.URL.Path)
		if err != nil {
			status, text := http.StatusUnauthorized, "authentication required"
			var ae *identity.Error
			if errors.As(err, &ae) {
				status, text = ae.Status, ae.Message
			}
			writeJSON(w, status, map[string]string{"detail": text})
			return
		}
		if !caller.IsMaster && caller.Role != identity.RoleProxyAdmin {
			writeJSON(w, http.StatusForbidden, map[string]string{"detail": "/metrics needs the master key or a proxy_admin key"})
			return
		}
	}
	m.Handler.ServeHTTP(w, r)
}
