package ui

import (
	"context"
	"net/http"
	"strings"

	"github.com/mcpgw/mcpgw/internal/identity"
)

// ClaimsCaller maps an ID token's verified claims to the gateway's caller by
// the rule JWT callers are decided by (identity.ClaimRule.Caller).
type ClaimsCaller func(ctx context.Context, claims map[string]any) (*identity.Caller, error)

// registerSSO adds the routes of sign-in through the OpenID provider; they
// answer 404 while it is not configured.
func (u *UI) registerSSO(mux *http.ServeMux) {
	mux.Handle("GET /ui/sso/start", u.secure(http.HandlerFunc(u.ssoStart)))
	mux.Handle("GET "+ssoCallbackPath, u.secure(http.HandlerFunc(u.ssoCallback)))
}

// ssoOn reports whether sign-in through the OpenID provider is configured.
func (u *UI) ssoOn() bool { return u.cfg.SSO != nil && u.cfg.Claims != nil }

// ssoStart sends the browser to the provider: a pending sign-in (state,
// nonce, PKCE verifier) bound to this browser by a cookie. It is a link,
// not a form (a form's redirect to another origin is refused by the
// page's form-action policy), and a request another site started is
// refused.
func (u *UI) ssoStart(w http.ResponseWriter, r *http.Request) {
	if !u.ssoOn() {
		http.NotFound(w, r)
		return
	}
	if site := r.Header.Get("Sec-Fetch-Site"); site != "" && site != "same-origin" && site != "none" {
		refuse(w, http.StatusForbidden, "cross-site request refused")
		return
	}
	p, err := u.cfg.SSO.discover(r.Context())
	if err != nil {
		u.cfg.Logger.Warn("ui: the OpenID provider's discovery failed") // its answer may quote anything: not logged
		u.showLogin(w, r, http.StatusServiceUnavailable,
			"Single sign-on is unavailable: the identity provider could not be reached. Try again, or sign in with a key.")
		return
	}
	_, binding, authURL := u.cfg.SSO.begin(p, u.publicBase(r)+ssoCallbackPath)
	http.SetCookie(w, &http.Cookie{Name: ssoCookie, Value: binding, Path: "/ui/sso", MaxAge: int(u.cfg.SSO.cfg.PendingTTL.Seconds()),
		HttpOnly: true, SameSite: http.SameSiteLaxMode, Secure: isHTTPS(r)}) // Lax: the provider's redirect back is cross-site
	http.Redirect(w, r, authURL, http.StatusSeeOther)
}

// ssoCallback completes a sign-in: the state must name a pending sign-in
// of this browser (once), the code is exchanged with its PKCE verifier,
// the ID token verified (signature, issuer, audience, expiry, nonce) and
// its identity admitted only when the gateway's rule makes it the proxy
// admin. The session then ends at the ID token's expiry at the latest.
func (u *UI) ssoCallback(w http.ResponseWriter, r *http.Request) {
	if !u.ssoOn() {
		http.NotFound(w, r)
		return
	}
	q := r.URL.Query()
	binding := ""
	if c, err := r.Cookie(ssoCookie); err == nil {
		binding = c.Value
	}
	pl := u.cfg.SSO.take(q.Get("state"), binding)
	if pl == nil {
		u.ssoRefused(w, http.StatusBadRequest, "This sign-in is unknown, expired or already used, or it was started in another browser. Start again from the sign-in page.")
		return
	}
	http.SetCookie(w, &http.Cookie{Name: ssoCookie, Path: "/ui/sso", MaxAge: -1, HttpOnly: true,
		SameSite: http.SameSiteLaxMode, Secure: isHTTPS(r)}) // the sign-in is over, whatever its outcome
	if q.Get("error") != "" || q.Get("code") == "" {
		u.ssoRefused(w, http.StatusUnauthorized, "The identity provider did not sign you in.")
		return
	}
	p, err := u.cfg.SSO.discover(r.Context())
	if err != nil {
		u.ssoRefused(w, http.StatusServiceUnavailable, "The identity provider could not be reached. Try again.")
		return
	}
	claims, expires, err := u.cfg.SSO.redeem(r.Context(), p, pl, q.Get("code"))
	if err != nil {
		u.cfg.Logger.Warn("ui: an SSO sign-in was refused", "reason", err.Error()) // fixed texts only
		u.ssoRefused(w, http.StatusUnauthorized, "Sign-in refused: the identity provider's answer could not be verified.")
		return
	}
	who := ssoName(claims)
	if _, err := u.ssoAdmin(r.Context(), claims); err != nil {
		u.ssoRefused(w, http.StatusForbidden, "Signed in as "+who+", but that identity is not a proxy admin on this gateway, so it cannot use the admin UI. An admin can give its user the proxy_admin role.")
		return
	}
	id, _ := u.cfg.Sessions.createSSO(claims, who, expires)
	setCookie(w, r, loginCookie, "", -1)
	setCookie(w, r, sessionCookie, id, 0)
	// A page, not a redirect: the browser arrived from the provider's site,
	// and a redirect would carry that cross-site origin on, so the
	// SameSite=Strict session cookie would not be sent with it.
	u.render(w, http.StatusOK, "sso.html", pageData{Page: "signed-in", Who: who})
}

// ssoRefused answers a refused sign-in with a page saying why; no session.
func (u *UI) ssoRefused(w http.ResponseWriter, status int, msg string) {
	u.render(w, status, "sso.html", pageData{Page: "refused", Error: msg})
}

// sessionAdmin re-checks a session's authority: a key session's key as the
// gateway checks it, an SSO session's claims by the gateway's rule.
func (u *UI) sessionAdmin(ctx context.Context, sess *session) (*identity.Caller, error) {
	if sess.claims == nil {
		return u.admin(ctx, sess.key)
	}
	return u.ssoAdmin(ctx, sess.claims)
}

// ssoAdmin maps verified claims to the caller by the gateway's rule and
// accepts only the proxy admin.
func (u *UI) ssoAdmin(ctx context.Context, claims map[string]any) (*identity.Caller, error) {
	if u.cfg.Claims == nil {
		return nil, errNotAdmin{}
	}
	c, err := u.cfg.Claims(ctx, claims)
	if err != nil || c == nil || !(c.IsMaster || c.Role == identity.RoleProxyAdmin) {
		return nil, errNotAdmin{}
	}
	return c, nil
}

// actAs makes in act as session id's identity: its key as the credential,
// or, for an SSO session (which holds no gateway credential), a session
// check that re-reads the session and re-applies the rule on every
// authentication of the request.
func (u *UI) actAs(in *http.Request, id string, sess *session) *http.Request {
	if sess.claims == nil {
		in.Header.Set("Authorization", "Bearer "+sess.key)
		return in
	}
	check := func(ctx context.Context) (*identity.Caller, error) {
		s := u.cfg.Sessions.get(id)
		if s == nil {
			return nil, &identity.Error{Status: http.StatusUnauthorized, Message: "the UI session has ended"}
		}
		c, err := u.ssoAdmin(ctx, s.claims)
		if err != nil {
			return nil, &identity.Error{Status: http.StatusForbidden, Message: "the UI session's identity is not a proxy admin"}
		}
		return c, nil
	}
	return in.WithContext(identity.WithSession(in.Context(), check))
}

// publicBase is the gateway's public base URL for r (Config.PublicBase),
// else the request's own scheme and host.
func (u *UI) publicBase(r *http.Request) string {
	if u.cfg.PublicBase != nil {
		return strings.TrimRight(u.cfg.PublicBase(r), "/")
	}
	scheme := "http"
	if isHTTPS(r) {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}

// ssoName names an SSO identity on the pages: its email, preferred
// username, name or subject.
func ssoName(claims map[string]any) string {
	for _, k := range []string{"email", "preferred_username", "name", "sub"} {
		if s, ok := claims[k].(string); ok && s != "" {
			return s
		}
	}
	return "an identity without a name"
}
