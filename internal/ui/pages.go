package ui

import (
	"bytes"
	"net/http"
	"strings"

	"github.com/mcpgw/mcpgw/internal/identity"
)

// maxLoginBody bounds a sign-in form.
const maxLoginBody = 16 << 10

// pageData is what the page templates render; never a secret.
type pageData struct {
	Page  string
	Pages []string
	CSRF  string
	Who   string
	Error string
	// Sep joins server and tool or prompt names in aggregate lists.
	Sep string
	// SSO offers sign-in through the OpenID provider on the sign-in page.
	SSO bool
}

func (u *UI) render(w http.ResponseWriter, status int, name string, d pageData) {
	var buf bytes.Buffer
	if err := u.pages.ExecuteTemplate(&buf, name, d); err != nil {
		u.cfg.Logger.Error("ui: rendering a page failed", "page", name, "error", err)
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// home sends a signed-in browser to the servers page, another to sign in.
func (u *UI) home(w http.ResponseWriter, r *http.Request) {
	if _, _, _, ok := u.signedIn(r); ok {
		http.Redirect(w, r, "/ui/servers", http.StatusSeeOther)
		return
	}
	http.Redirect(w, r, "/ui/login", http.StatusSeeOther)
}

// loginForm shows the sign-in form with a fresh double-submit token.
func (u *UI) loginForm(w http.ResponseWriter, r *http.Request) {
	u.showLogin(w, r, http.StatusOK, "")
}

func (u *UI) showLogin(w http.ResponseWriter, r *http.Request, status int, msg string) {
	token := randomToken()
	setCookie(w, r, loginCookie, token, 600)
	u.render(w, status, "login.html", pageData{Page: "login", CSRF: token, Error: msg, SSO: u.ssoOn()})
}

// login signs in with the master key or a proxy_admin key: same origin,
// the form's token matching its cookie, then the key checked as the
// gateway checks it.
func (u *UI) login(w http.ResponseWriter, r *http.Request) {
	if !sameOrigin(r) {
		refuse(w, http.StatusForbidden, "cross-origin request refused")
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxLoginBody)
	if err := r.ParseForm(); err != nil {
		refuse(w, http.StatusBadRequest, "invalid form")
		return
	}
	c, err := r.Cookie(loginCookie)
	if err != nil || !(&session{csrf: c.Value}).csrfOK(r.PostForm.Get("csrf")) {
		refuse(w, http.StatusForbidden, "missing or wrong CSRF token")
		return
	}
	key := strings.TrimSpace(r.PostForm.Get("key"))
	who, err := u.admin(r.Context(), key)
	if err != nil {
		u.showLogin(w, r, http.StatusUnauthorized, "Sign-in refused: the UI takes the master key or a proxy_admin key.")
		return
	}
	id, _ := u.cfg.Sessions.create(key, whoName(who))
	setCookie(w, r, loginCookie, "", -1)
	setCookie(w, r, sessionCookie, id, 0)
	http.Redirect(w, r, "/ui/servers", http.StatusSeeOther)
}

// whoName names the signed-in identity on the pages.
func whoName(c *identity.Caller) string {
	switch {
	case c.IsMaster:
		return "master key"
	case c.KeyAlias != "":
		return c.KeyAlias
	case c.UserID != "":
		return c.UserID
	}
	return "proxy admin"
}

// logout ends the session (same origin and its CSRF token required).
func (u *UI) logout(w http.ResponseWriter, r *http.Request) {
	id, sess, _, ok := u.signedIn(r)
	if !ok {
		http.Redirect(w, r, "/ui/login", http.StatusSeeOther)
		return
	}
	if !u.changeAllowed(w, r, sess, r.PostFormValue) {
		return
	}
	u.cfg.Sessions.end(id)
	setCookie(w, r, sessionCookie, "", -1)
	http.Redirect(w, r, "/ui/login", http.StatusSeeOther)
}

// changeAllowed checks a state-changing request of a session: same origin
// and its CSRF token (header, or the form field csrf); it answers 403 when
// not.
func (u *UI) changeAllowed(w http.ResponseWriter, r *http.Request, sess *session, form func(string) string) bool {
	if !sameOrigin(r) {
		refuse(w, http.StatusForbidden, "cross-origin request refused")
		return false
	}
	token := r.Header.Get(csrfHeader)
	if token == "" && form != nil {
		r.Body = http.MaxBytesReader(w, r.Body, maxLoginBody)
		token = form("csrf")
	}
	if !sess.csrfOK(token) {
		refuse(w, http.StatusForbidden, "missing or wrong CSRF token")
		return false
	}
	return true
}

// page renders one signed-in page; its data is fetched by the page's script.
func (u *UI) page(name string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, sess, _, ok := u.signedIn(r)
		if !ok {
			http.Redirect(w, r, "/ui/login", http.StatusSeeOther)
			return
		}
		u.render(w, http.StatusOK, "page.html", pageData{Page: name, Pages: pageNames, CSRF: sess.csrf, Who: sess.who, Sep: u.cfg.Separator})
	})
}
