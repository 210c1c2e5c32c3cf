package front

import (
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strings"
)

// isClientAuthorize reports whether an authorize request carries OAuth client parameters: the
// client-run flow, as opposed to the vault's (a ticket or the caller's gateway key).
func isClientAuthorize(r *http.Request) bool {
	q := r.URL.Query()
	return q.Get("response_type") != "" || q.Get("client_id") != "" || q.Get("code_challenge") != ""
}

// clientAuthorize checks a client-run authorize request and sends the browser to the upstream's
// authorization endpoint under the server's client, with the gateway's callback and the
// client's PKCE challenge; the client's redirect_uri, state and challenge ride in the sealed state.
func (o *OAuthFlowRoutes) clientAuthorize(w http.ResponseWriter, r *http.Request) {
	server, s, ok := o.clientServer(w, r)
	if !ok {
		return
	}
	q := r.URL.Query()
	reg, ok := o.cfg.Client.openReg(q.Get("client_id"), server)
	switch {
	case !ok:
		oauthError(w, http.StatusBadRequest, "invalid_client", "client_id is not a client registered at this server's registration endpoint")
		return
	case !slices.Contains(reg.Redirects, q.Get("redirect_uri")):
		oauthError(w, http.StatusBadRequest, "invalid_request", "redirect_uri is not one the client registered")
		return
	case q.Get("response_type") != "code":
		oauthError(w, http.StatusBadRequest, "unsupported_response_type", "response_type must be code")
		return
	case q.Get("code_challenge_method") != "S256" || len(q.Get("code_challenge")) < 43 || len(q.Get("code_challenge")) > 128:
		oauthError(w, http.StatusBadRequest, "invalid_request", "PKCE is required: code_challenge with code_challenge_method S256")
		return
	case len(q.Get("state")) > 1024:
		oauthError(w, http.StatusBadRequest, "invalid_request", "state is longer than 1024 bytes")
		return
	}
	b, _ := json.Marshal(clientState{Server: server, Redirect: q.Get("redirect_uri"), State: q.Get("state"), Challenge: q.Get("code_challenge")})
	st, err := o.cfg.Client.Sealer.Seal(ClientStatePurpose, b, ClientFlowTTL)
	u, perr := url.Parse(s.AuthorizationURL)
	if err != nil || perr != nil {
		o.cfg.Logger.Warn("could not start a client-run authorization", "server", server)
		oauthError(w, http.StatusInternalServerError, "server_error", "could not start the authorization")
		return
	}
	up := u.Query()
	up.Set("response_type", "code")
	up.Set("client_id", s.ClientID)
	up.Set("redirect_uri", strings.TrimRight(o.cfg.PublicBase(r), "/")+"/callback")
	up.Set("state", st)
	up.Set("code_challenge", q.Get("code_challenge"))
	up.Set("code_challenge_method", "S256")
	if scope := q.Get("scope"); scope != "" {
		up.Set("scope", scope)
	} else if len(s.Scopes) > 0 {
		up.Set("scope", strings.Join(s.Scopes, " "))
	}
	u.RawQuery = up.Encode()
	w.Header().Set("Cache-Control", "no-store")
	http.Redirect(w, r, u.String(), http.StatusFound)
}

// clientCallback finishes a client-run authorization when the callback's state is one: it
// sends the browser to the client's redirect_uri with a sealed code (the upstream's code bound
// to the server and redirect_uri) and the client's own state. It reports false when the state
// is not a client-run one (the vault's callback then handles it).
func (o *OAuthFlowRoutes) clientCallback(w http.ResponseWriter, r *http.Request) bool {
	if o.cfg.Client == nil {
		return false
	}
	q := r.URL.Query()
	b, err := o.cfg.Client.Sealer.Open(ClientStatePurpose, q.Get("state"))
	var st clientState
	if err != nil || json.Unmarshal(b, &st) != nil {
		return false
	}
	to, _ := url.Parse(st.Redirect) // checked at authorize
	back := to.Query()
	if e := q.Get("error"); e != "" || q.Get("code") == "" {
		back.Set("error", "access_denied")
		back.Set("error_description", "the upstream authorization server did not grant the authorization")
	} else {
		cb, _ := json.Marshal(clientCode{Server: st.Server, Redirect: st.Redirect, Code: q.Get("code")})
		code, err := o.cfg.Client.Sealer.Seal(ClientCodePurpose, cb, ClientFlowTTL)
		if err != nil {
			back.Set("error", "server_error")
		} else {
			back.Set("code", code)
		}
	}
	if st.State != "" {
		back.Set("state", st.State)
	}
	to.RawQuery = back.Encode()
	w.Header().Set("Cache-Control", "no-store")
	http.Redirect(w, r, to.String(), http.StatusFound)
	return true
}

// clientToken relays an authorization_code or refresh_token grant to the upstream's token
// endpoint under the server's client and answers the upstream's token.
func (o *OAuthFlowRoutes) clientToken(w http.ResponseWriter, r *http.Request) {
	server, _, ok := o.clientServer(w, r)
	if !ok {
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, MaxClientBody)
	if err := r.ParseForm(); err != nil {
		oauthError(w, http.StatusBadRequest, "invalid_request", "the body must be an application/x-www-form-urlencoded token request of at most 64 KiB")
		return
	}
	f := r.PostForm
	var form url.Values
	switch f.Get("grant_type") {
	case "authorization_code":
		b, err := o.cfg.Client.Sealer.Open(ClientCodePurpose, f.Get("code"))
		var c clientCode
		if err != nil || json.Unmarshal(b, &c) != nil || c.Server != server {
			oauthError(w, http.StatusBadRequest, "invalid_grant", "the code is invalid, expired or was issued for another server")
			return
		}
		if f.Get("redirect_uri") != c.Redirect {
			oauthError(w, http.StatusBadRequest, "invalid_grant", "redirect_uri is not the one the authorization was made with")
			return
		}
		if f.Get("code_verifier") == "" {
			oauthError(w, http.StatusBadRequest, "invalid_request", "code_verifier is required")
			return
		}
		form = url.Values{"grant_type": {"authorization_code"}, "code": {c.Code}, "code_verifier": {f.Get("code_verifier")},
			"redirect_uri": {strings.TrimRight(o.cfg.PublicBase(r), "/") + "/callback"}}
	case "refresh_token":
		if f.Get("refresh_token") == "" {
			oauthError(w, http.StatusBadRequest, "invalid_request", "refresh_token is required")
			return
		}
		form = url.Values{"grant_type": {"refresh_token"}, "refresh_token": {f.Get("refresh_token")}}
		if sc := f.Get("scope"); sc != "" {
			form.Set("scope", sc)
		}
	default:
		oauthError(w, http.StatusBadRequest, "unsupported_grant_type", "grant_type must be authorization_code or refresh_token")
		return
	}
	g, refused, err := o.cfg.Client.Grant(r.Context(), server, form)
	switch {
	case refused:
		oauthError(w, http.StatusBadRequest, "invalid_grant", "the upstream authorization server refused the grant")
		return
	case err != nil:
		o.cfg.Logger.Warn("a client-run token request to the upstream failed", "server", server, "error", err)
		oauthError(w, http.StatusBadGateway, "server_error", "the upstream authorization server could not be reached or answered badly")
		return
	}
	out := map[string]any{"access_token": g.Access, "token_type": "Bearer"}
	if g.Refresh != "" {
		out["refresh_token"] = g.Refresh
	}
	if g.ExpiresIn > 0 {
		out["expires_in"] = g.ExpiresIn
	}
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Pragma", "no-cache")
	writeJSON(w, http.StatusOK, out)
}
