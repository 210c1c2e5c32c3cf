package ui

import (
	"context"
	"embed"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"net/url"
	"strings"

	"github.com/mcpgw/mcpgw/internal/identity"
)

//go:embed assets
var assets embed.FS

// Cookie names: the session, and the sign-in form's double-submit token.
const (
	sessionCookie = "mcpgw_ui"
	loginCookie   = "mcpgw_ui_login"
	csrfHeader    = "X-CSRF-Token"
)

// contentSecurityPolicy allows only the UI's own scripts, styles and
// requests; no inline script, no framing.
const contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

// Authenticate establishes the caller of r (identity.Authenticator.Authenticate).
type Authenticate func(ctx context.Context, r *http.Request, method string) (*identity.Caller, error)

// Config is what one generation's UI is built from.
type Config struct {
	// Sessions are the signed-in browsers, shared by every generation.
	Sessions *Sessions
	// Live feeds the activity page; nil: no live log and no statistics.
	Live *Live
	// Upstream reads the upstream sessions and listens open now, for the
	// servers page; nil: not shown.
	Upstream func() Upstream
	// Auth authenticates the key a session signed in with, on every request.
	Auth Authenticate
	// API serves the management and MCP routes the UI drives, in-process.
	API http.Handler
	// Detach stops counting a long-lived stream among the generation's
	// requests in flight; nil: nothing to do.
	Detach func(*http.Request)
	// Separator joins a server's name and a tool's or prompt's in the
	// aggregate lists (MCP_TOOL_PREFIX_SEPARATOR); empty: "-".
	Separator string
	// Logger; nil discards.
	Logger *slog.Logger
	// SSO, with Claims, offers sign-in through an OpenID provider; nil: none.
	SSO *SSO
	// Claims maps an SSO identity's ID token claims to the caller, by the
	// gateway's rule for JWT callers; nil: no SSO sign-in.
	Claims ClaimsCaller
	// PublicBase is the gateway's public base URL for a request, for the
	// SSO redirect URI; nil: the request's own scheme and host.
	PublicBase func(*http.Request) string
}

// Upstream is the gateway's open upstream state, as its metrics export it.
type Upstream struct {
	// Sessions are the upstream sessions held now, by server name.
	Sessions map[string]int `json:"sessions"`
	// Listens are the subscriptions/listen streams and legacy session
	// follows running now, all servers together.
	Listens int `json:"listens"`
	// ListensByServer are, by server name, the listens running now that
	// hold an upstream listener on that server (a listen over several
	// servers counts for each; one that needed none, for none).
	ListensByServer map[string]int `json:"listens_by_server"`
}

// UI is the admin UI's HTTP handler set for one generation.
type UI struct {
	cfg   Config
	pages *template.Template
	files http.Handler
}

// pageNames are the signed-in pages, in navigation order.
var pageNames = []string{"servers", "catalog", "keys", "activity"}

// New builds the UI over cfg.
func New(cfg Config) *UI {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Separator == "" {
		cfg.Separator = "-"
	}
	static, _ := fs.Sub(assets, "assets/static") // a constant path inside the embedded tree
	return &UI{
		cfg:   cfg,
		pages: template.Must(template.ParseFS(assets, "assets/*.html")),
		files: http.StripPrefix("/ui/assets/", http.FileServerFS(static)),
	}
}

// Register adds the UI's routes (all under /ui) to mux.
func (u *UI) Register(mux *http.ServeMux) {
	mux.Handle("GET /ui", u.secure(http.HandlerFunc(u.home)))
	mux.Handle("GET /ui/{$}", u.secure(http.HandlerFunc(u.home)))
	mux.Handle("GET /ui/login", u.secure(http.HandlerFunc(u.loginForm)))
	mux.Handle("POST /ui/login", u.secure(http.HandlerFunc(u.login)))
	mux.Handle("POST /ui/logout", u.secure(http.HandlerFunc(u.logout)))
	for _, p := range pageNames {
		mux.Handle("GET /ui/"+p, u.secure(u.page(p)))
	}
	mux.Handle("GET /ui/assets/{file...}", u.secure(u.files))
	mux.Handle("/ui/api/{path...}", u.secure(http.HandlerFunc(u.proxy)))
	mux.Handle("GET /ui/events", u.secure(http.HandlerFunc(u.events)))
	mux.Handle("GET /ui/stats", u.secure(http.HandlerFunc(u.stats)))
	mux.Handle("POST /ui/mcp", u.secure(http.HandlerFunc(u.mcp)))
	u.registerSSO(mux)
}

// secure sets the headers every UI answer carries.
func (u *UI) secure(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", contentSecurityPolicy)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "same-origin") // no-referrer would make a form's Origin "null"
		h.Set("Cache-Control", "no-store")
		h.Set("Cross-Origin-Opener-Policy", "same-origin")
		next.ServeHTTP(w, r)
	})
}

// signedIn is the request's session and caller when its cookie names a
// live session whose key (or SSO identity) is still an admin's; otherwise
// the session (if any) is ended and ok is false.
func (u *UI) signedIn(r *http.Request) (id string, sess *session, who *identity.Caller, ok bool) {
	c, err := r.Cookie(sessionCookie)
	if err != nil {
		return "", nil, nil, false
	}
	sess = u.cfg.Sessions.get(c.Value)
	if sess == nil {
		return "", nil, nil, false
	}
	who, err = u.sessionAdmin(r.Context(), sess)
	if err != nil {
		u.cfg.Sessions.end(c.Value)
		return "", nil, nil, false
	}
	return c.Value, sess, who, true
}

// errNotAdmin is the one refusal of a sign-in, whatever the reason, so the
// form does not tell a wrong key from a valid key of another role.
type errNotAdmin struct{}

func (errNotAdmin) Error() string { return "not the master key or a proxy_admin key" }

// admin authenticates key as the gateway would on its own routes, and
// accepts only the proxy admin: the master key or a proxy_admin identity.
func (u *UI) admin(ctx context.Context, key string) (*identity.Caller, error) {
	if key == "" {
		return nil, errNotAdmin{}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "/ui", nil)
	if err != nil {
		return nil, errNotAdmin{}
	}
	req.Header.Set("Authorization", "Bearer "+key)
	c, err := u.cfg.Auth(ctx, req, "ui")
	if err != nil || c == nil || !(c.IsMaster || c.Role == identity.RoleProxyAdmin) {
		return nil, errNotAdmin{}
	}
	return c, nil
}

// sameOrigin reports whether a state-changing request comes from a page of
// this origin: Sec-Fetch-Site same-origin when the browser sends it, and
// an Origin naming this host; a request with neither is refused.
func sameOrigin(r *http.Request) bool {
	site := r.Header.Get("Sec-Fetch-Site")
	if site != "" && site != "same-origin" {
		return false
	}
	origin := r.Header.Get("Origin")
	if origin == "" {
		return false
	}
	o, err := url.Parse(origin)
	if err != nil || o.Host == "" {
		return false
	}
	want := "http"
	if isHTTPS(r) {
		want = "https"
	}
	return o.Scheme == want && strings.EqualFold(o.Host, r.Host)
}

// isHTTPS reports whether the browser reached the gateway over TLS, here
// or at a proxy in front that says so.
func isHTTPS(r *http.Request) bool {
	return r.TLS != nil || strings.EqualFold(r.Header.Get("X-Forwarded-Proto"), "https")
}

// setCookie sets an HttpOnly, SameSite=Strict cookie under /ui (Secure
// over TLS); maxAge < 0 deletes it.
func setCookie(w http.ResponseWriter, r *http.Request, name, value string, maxAge int) {
	http.SetCookie(w, &http.Cookie{Name: name, Value: value, Path: "/ui", MaxAge: maxAge,
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: isHTTPS(r)})
}

// refuse answers a refused request: JSON for fetches, text otherwise.
func refuse(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write([]byte(`{"error":{"message":"` + msg + `","code":"` + http.StatusText(status) + `"}}`))
}
