package front

import (
	"context"
	"errors"
	"html"
	"log/slog"
	"net/http"
	"slices"

	"github.com/mcpgw/mcpgw/internal/gateway"
	"github.com/mcpgw/mcpgw/internal/identity"
	"github.com/mcpgw/mcpgw/internal/reqscope"
)

// OAuthFlow is the per-user token vault's authorization-code flow, as the flow endpoints use it.
type OAuthFlow interface {
	// Has reports whether server takes each user's own OAuth token.
	Has(server string) bool
	// OpenTicket returns the user an authorize link's ticket names for server.
	OpenTicket(ticket, server string) (string, error)
	// Begin returns where to send the user's browser and the cookie binding the flow to it.
	Begin(base, user, server string) (string, *http.Cookie, error)
	// Complete finishes a flow from its callback request.
	Complete(ctx context.Context, base string, r *http.Request) (user, server string, clear *http.Cookie, err error)
	// Delete deletes the user's token for server; false when there was none.
	Delete(ctx context.Context, user, server string) (bool, error)
}

// OAuthFlowConfig builds the flow endpoints.
type OAuthFlowConfig struct {
	Flow OAuthFlow // nil serves no vault flow
	// Client is the client-run flow; nil serves none.
	Client *ClientOAuth
	Auth   *identity.Authenticator
	// Resolve maps a URL server segment to the server name; false means 404.
	Resolve func(segment string) (string, bool)
	// Visible lists the servers a caller may use (its key's, team's and other levels'
	// permissions); a server outside it is answered as an unknown one. Nil means every server.
	Visible func(c *identity.Caller) []string
	// PublicBase is the gateway's public base URL for r; nil means the request's own scheme and Host.
	PublicBase func(r *http.Request) string
	Logger     *slog.Logger
}

// OAuthFlowRoutes serves the per-user authorization of upstream servers: GET
// /{server}/authorize (with the caller's gateway key, or an authorize link's ticket) starts the
// authorization-code flow against the server's authorization server; GET /callback finishes
// it; DELETE /{server}/token deletes the caller's own token for the server.
type OAuthFlowRoutes struct{ cfg OAuthFlowConfig }

// NewOAuthFlowRoutes returns the flow endpoints.
func NewOAuthFlowRoutes(cfg OAuthFlowConfig) *OAuthFlowRoutes {
	if cfg.PublicBase == nil {
		cfg.PublicBase = requestBase
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &OAuthFlowRoutes{cfg: cfg}
}

// requestBase is the base URL r itself reached (its scheme and Host; no forwarded header).
func requestBase(r *http.Request) string { return (*PublicURL)(nil).Base(r) }

// WithPublicBase wraps next so the gateway sees the public base URL the request reached
// (gateway.PublicBase), for the authorize links it hands out; base nil means the request's own scheme and Host.
func WithPublicBase(base func(*http.Request) string, next http.Handler) http.Handler {
	if base == nil {
		base = requestBase
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next.ServeHTTP(w, reqscope.Request(gateway.WithPublicBase(r.Context(), func() string { return base(r) }), r))
	})
}

// Register adds the flow routes to mux.
func (o *OAuthFlowRoutes) Register(mux *http.ServeMux) {
	mux.HandleFunc("GET /{server}/authorize", o.authorize)
	mux.HandleFunc("GET /callback", o.callback)
	mux.HandleFunc("DELETE /{server}/token", o.deleteToken)
	if o.cfg.Client != nil {
		mux.HandleFunc("GET /.well-known/oauth-authorization-server/{server}", o.metadata)
		mux.HandleFunc("GET /{server}/.well-known/oauth-authorization-server", o.metadata)
		mux.HandleFunc("GET /.well-known/oauth-authorization-server/{server}/mcp", o.metadata)
		mux.HandleFunc("POST /{server}/register", o.register)
		mux.HandleFunc("POST /{server}/token", o.clientToken)
	}
}

// server resolves the path's server to one that takes users' own tokens, or answers 404.
func (o *OAuthFlowRoutes) server(w http.ResponseWriter, r *http.Request) (string, bool) {
	name, ok := o.cfg.Resolve(r.PathValue("server"))
	if !ok || o.cfg.Flow == nil || !o.cfg.Flow.Has(name) {
		notFlowServer(w)
		return "", false
	}
	return name, true
}

// notFlowServer is the one answer for a server that does not exist, takes no per-user token,
// or is not the caller's to use, so the answer does not tell them apart.
func notFlowServer(w http.ResponseWriter) {
	keyError(w, http.StatusNotFound, "not_found", "server", "no server here takes a per-user OAuth authorization")
}

// ticketUser is the user an authorize link's ticket names for server.
func (o *OAuthFlowRoutes) ticketUser(w http.ResponseWriter, r *http.Request, server string) (string, bool) {
	u, err := o.cfg.Flow.OpenTicket(r.URL.Query().Get("ticket"), server)
	if err != nil {
		keyError(w, http.StatusUnauthorized, "auth_error", "ticket", "the authorize link is invalid or has expired; ask for a new one")
		return "", false
	}
	return u, true
}

// keyed authenticates the request's gateway key, then resolves the path's server among those
// the caller may use: a server outside the caller's permissions is answered as an unknown one
// (404), and the caller is authenticated first, so a stranger learns nothing about which
// servers exist. A caller that names no user cannot hold tokens.
func (o *OAuthFlowRoutes) keyed(w http.ResponseWriter, r *http.Request) (server, user string, ok bool) {
	caller, err := o.cfg.Auth.Authenticate(r.Context(), r, r.URL.Path)
	if err != nil {
		status, msg := http.StatusUnauthorized, "authentication required"
		var ae *identity.Error
		if errors.As(err, &ae) {
			status, msg = ae.Status, ae.Message
		}
		keyError(w, status, "auth_error", "", msg)
		return "", "", false
	}
	if server, ok = o.server(w, r); !ok {
		return "", "", false
	}
	if o.cfg.Visible != nil && !slices.Contains(o.cfg.Visible(caller), server) {
		notFlowServer(w)
		return "", "", false
	}
	if caller.UserID == "" {
		keyError(w, http.StatusForbidden, "auth_error", "user_id", "the key names no user; per-user authorizations need a key with a user_id")
		return "", "", false
	}
	return server, caller.UserID, true
}

// authorize starts the flow for the user an authorize link's ticket names (the gateway hands
// the link only to a caller using the server) or, without a ticket, for the gateway key's user
// on a server the key may use.
func (o *OAuthFlowRoutes) authorize(w http.ResponseWriter, r *http.Request) {
	if isClientAuthorize(r) {
		o.clientAuthorize(w, r)
		return
	}
	var server, user string
	var ok bool
	if r.URL.Query().Get("ticket") != "" {
		if server, ok = o.server(w, r); ok {
			user, ok = o.ticketUser(w, r, server)
		}
	} else {
		server, user, ok = o.keyed(w, r)
	}
	if !ok {
		return
	}
	to, cookie, err := o.cfg.Flow.Begin(o.cfg.PublicBase(r), user, server)
	if err != nil {
		o.cfg.Logger.Warn("could not start an upstream authorization", "server", server, "error", err)
		keyError(w, http.StatusInternalServerError, "internal_error", "", "could not start the authorization")
		return
	}
	http.SetCookie(w, cookie)
	w.Header().Set("Cache-Control", "no-store")
	http.Redirect(w, r, to, http.StatusFound)
}

func (o *OAuthFlowRoutes) callback(w http.ResponseWriter, r *http.Request) {
	if o.clientCallback(w, r) {
		return
	}
	if o.cfg.Flow == nil {
		w.Header().Set("Cache-Control", "no-store")
		http.Error(w, "The authorization could not be completed. Start it again from your client.", http.StatusBadRequest)
		return
	}
	_, server, clear, err := o.cfg.Flow.Complete(r.Context(), o.cfg.PublicBase(r), r)
	if clear != nil {
		http.SetCookie(w, clear)
	}
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	if err != nil {
		o.cfg.Logger.Warn("an upstream authorization could not be completed", "error", err)
		w.WriteHeader(http.StatusBadRequest)
		_, _ = w.Write([]byte("<!doctype html><title>Authorization failed</title><p>The authorization could not be completed. Start it again from your client.</p>\n"))
		return
	}
	_, _ = w.Write([]byte("<!doctype html><title>Authorized</title><p>The gateway may now use " + html.EscapeString(server) +
		" on your behalf. You can close this window and retry your request.</p>\n"))
}

func (o *OAuthFlowRoutes) deleteToken(w http.ResponseWriter, r *http.Request) {
	server, user, ok := o.keyed(w, r)
	if !ok {
		return
	}
	deleted, err := o.cfg.Flow.Delete(r.Context(), user, server)
	if err != nil {
		o.cfg.Logger.Warn("could not delete an upstream OAuth token", "server", server, "error", err)
		keyError(w, http.StatusInternalServerError, "internal_error", "", "could not delete the token")
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"server": server, "deleted": deleted})
}
