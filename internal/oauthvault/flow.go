package oauthvault

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// CookiePrefix starts the name of the cookie binding an authorization in flight to the browser
// that started it.
const CookiePrefix = "mcpgw_oauth_"

// CallbackPath is where the authorization server sends the browser back.
const CallbackPath = "/callback"

// ErrFlow means a callback does not belong to an authorization this gateway started for this
// browser (a bad, expired or foreign state, a missing cookie) or the upstream refused it.
var ErrFlow = errors.New("oauthvault: the authorization could not be completed")

// ticket is an authorize link's sealed payload.
type ticket struct {
	User   string `json:"u"`
	Server string `json:"s"`
}

// state is an authorization in flight, sealed into the OAuth state parameter.
type state struct {
	User     string `json:"u"`
	Server   string `json:"s"`
	Verifier string `json:"v"` // the PKCE code_verifier
	Handle   string `json:"h"` // names the browser cookie
	Nonce    string `json:"n"` // SHA-256 of the cookie's value
}

// AuthorizeLink is the path (under the gateway's public base URL) a user opens to authorize
// server: it carries a sealed ticket naming the user, valid for Config.FlowTTL, so a browser
// without the gateway key can start the flow.
func (v *Vault) AuthorizeLink(user, server string) (string, error) {
	b, _ := json.Marshal(ticket{User: user, Server: server})
	t, err := v.cfg.Sealer.Seal(TicketPurpose, b, v.cfg.FlowTTL)
	if err != nil {
		return "", fmt.Errorf("oauthvault: sealing an authorize link: %w", err)
	}
	return "/" + url.PathEscape(server) + "/authorize?ticket=" + url.QueryEscape(t), nil
}

// OpenTicket returns the user an authorize link's ticket names for server.
func (v *Vault) OpenTicket(t, server string) (string, error) {
	b, err := v.cfg.Sealer.Open(TicketPurpose, t)
	var tk ticket
	if err == nil {
		err = json.Unmarshal(b, &tk)
	}
	if err != nil || tk.Server != server || tk.User == "" {
		return "", ErrFlow
	}
	return tk.User, nil
}

// Begin starts user's authorization of server: it returns where to send the browser (the
// upstream's authorization endpoint, with PKCE S256 and a sealed state) and the cookie that
// binds the flow to this browser. base is the gateway's public base URL.
func (v *Vault) Begin(base, user, server string) (string, *http.Cookie, error) {
	s, ok := v.servers[server]
	if !ok || user == "" {
		return "", nil, ErrFlow
	}
	verifier, handle, nonce := random(32), random(9), random(32)
	b, _ := json.Marshal(state{User: user, Server: server, Verifier: verifier, Handle: handle, Nonce: digest(nonce)})
	st, err := v.cfg.Sealer.Seal(StatePurpose, b, v.cfg.FlowTTL)
	if err != nil {
		return "", nil, fmt.Errorf("oauthvault: sealing the state: %w", err)
	}
	u, err := url.Parse(s.AuthorizationURL)
	if err != nil {
		return "", nil, fmt.Errorf("oauthvault: server %q: bad authorization_url", server)
	}
	q := u.Query()
	q.Set("response_type", "code")
	q.Set("client_id", s.ClientID)
	q.Set("redirect_uri", strings.TrimRight(base, "/")+CallbackPath)
	q.Set("state", st)
	q.Set("code_challenge", challenge(verifier))
	q.Set("code_challenge_method", "S256")
	if len(s.Scopes) > 0 {
		q.Set("scope", scopeString(s.Scopes))
	}
	u.RawQuery = q.Encode()
	c := &http.Cookie{Name: CookiePrefix + handle, Value: nonce, Path: CallbackPath, HttpOnly: true,
		Secure: strings.HasPrefix(base, "https://"), SameSite: http.SameSiteLaxMode, MaxAge: int(v.cfg.FlowTTL.Seconds())}
	return u.String(), c, nil
}

// Complete finishes an authorization from the callback request r: the state must open, be
// unexpired and match the browser's cookie; the code is exchanged (with the PKCE verifier) and
// the tokens stored for the state's user. It returns the user and server, and the cookie to
// clear.
func (v *Vault) Complete(ctx context.Context, base string, r *http.Request) (user, server string, clear *http.Cookie, err error) {
	q := r.URL.Query()
	b, err := v.cfg.Sealer.Open(StatePurpose, q.Get("state"))
	var st state
	if err == nil {
		err = json.Unmarshal(b, &st)
	}
	s, known := v.servers[st.Server]
	if err != nil || !known {
		return "", "", nil, ErrFlow
	}
	clear = &http.Cookie{Name: CookiePrefix + st.Handle, Value: "", Path: CallbackPath, MaxAge: -1, HttpOnly: true}
	c, err := r.Cookie(CookiePrefix + st.Handle)
	if err != nil || subtle.ConstantTimeCompare([]byte(digest(c.Value)), []byte(st.Nonce)) != 1 {
		return "", "", clear, fmt.Errorf("%w: the browser that finished it is not the one that started it", ErrFlow)
	}
	if q.Get("error") != "" || q.Get("code") == "" {
		return "", "", clear, fmt.Errorf("%w: the authorization server did not grant it", ErrFlow)
	}
	form := url.Values{"grant_type": {"authorization_code"}, "code": {q.Get("code")},
		"redirect_uri": {strings.TrimRight(base, "/") + CallbackPath}, "code_verifier": {st.Verifier}, "client_id": {s.ClientID}}
	if s.ClientSecret != "" {
		form.Set("client_secret", s.ClientSecret)
	}
	secret := s.ClientSecret
	if secret == "" {
		secret = q.Get("code")
	}
	t, err := grant(ctx, v, s, form, secret)
	if err != nil {
		return "", "", clear, fmt.Errorf("%w: %w", ErrFlow, err)
	}
	if err := v.put(ctx, st.User, st.Server, t); err != nil {
		return "", "", clear, fmt.Errorf("oauthvault: storing the token: %w", err)
	}
	return st.User, st.Server, clear, nil
}

func random(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return base64.RawURLEncoding.EncodeToString(b)
}

func digest(s string) string {
	sum := sha256.Sum256([]byte(s))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

// challenge is the S256 PKCE challenge of verifier (RFC 7636).
func challenge(verifier string) string { return digest(verifier) }
