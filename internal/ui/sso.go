package ui

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"
)

// Bounds of sign-in through the OpenID provider: how many sign-ins may be
// pending at once (beyond it the oldest is forgotten), how long one may
// take, and how long one request to the provider may take.
const (
	DefaultMaxPending  = 1000
	DefaultPendingTTL  = 10 * time.Minute
	DefaultSSOTimeout  = 10 * time.Second
	ssoCookie          = "mcpgw_ui_sso"
	ssoCallbackPath    = "/ui/sso/callback"
	defaultSSOScopeSet = "openid email profile"
)

// ssoAlgs are the ID token signature algorithms accepted: the asymmetric
// ones (never "none", never HMAC).
var ssoAlgs = []string{
	oidc.RS256, oidc.RS384, oidc.RS512, oidc.ES256, oidc.ES384, oidc.ES512,
	oidc.PS256, oidc.PS384, oidc.PS512, oidc.EdDSA,
}

// SSOConfig configures sign-in through an OpenID provider: the
// authorization-code flow with PKCE, state and nonce.
type SSOConfig struct {
	// Issuer is the provider's issuer URL; its discovery document gives the
	// endpoints and the key set, and ID tokens must name it.
	Issuer string
	// ClientID is the UI's client at the provider; ID tokens must name it
	// as their audience.
	ClientID string
	// ClientSecret is the client's secret; "" for a public client.
	ClientSecret string
	// AuthURL and TokenURL, when set, replace the discovered endpoints.
	AuthURL, TokenURL string
	// Scopes are requested; "openid" is always among them. Nil means
	// openid, email and profile.
	Scopes []string
	// HTTPClient reaches the provider; nil means a client with
	// DefaultSSOTimeout.
	HTTPClient *http.Client
	// MaxPending bounds the sign-ins pending at once (≤ 0: DefaultMaxPending).
	MaxPending int
	// PendingTTL is how long a sign-in may take (≤ 0: DefaultPendingTTL).
	PendingTTL time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// SSO is the process-wide state of sign-in through the OpenID provider:
// the provider's discovered metadata and the pending sign-ins. The zero
// value is not usable; use NewSSO.
type SSO struct {
	cfg    SSOConfig
	client *http.Client

	mu       sync.Mutex
	provider *ssoProvider // nil until discovered
	pending  map[string]*pendingLogin
}

// ssoProvider is what discovery gives: the endpoints and the ID token
// verifier (issuer, audience, expiry, signature).
type ssoProvider struct {
	endpoint oauth2.Endpoint
	verifier *oidc.IDTokenVerifier
}

// pendingLogin is one sign-in between the redirect to the provider and
// its callback, keyed by its state.
type pendingLogin struct {
	binding  string // the browser's mcpgw_ui_sso cookie
	nonce    string
	verifier string // the PKCE code verifier
	redirect string // the redirect URI sent, sent again with the code
	created  time.Time
}

// NewSSO checks cfg and returns the SSO state; the provider is discovered
// at the first sign-in, so a provider down at start-up delays nothing.
func NewSSO(cfg SSOConfig) (*SSO, error) {
	if cfg.Issuer == "" || cfg.ClientID == "" {
		return nil, errors.New("ui: SSO needs an issuer and a client id")
	}
	if cfg.MaxPending <= 0 {
		cfg.MaxPending = DefaultMaxPending
	}
	if cfg.PendingTTL <= 0 {
		cfg.PendingTTL = DefaultPendingTTL
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if len(cfg.Scopes) == 0 {
		cfg.Scopes = strings.Fields(defaultSSOScopeSet)
	}
	if !slices.Contains(cfg.Scopes, oidc.ScopeOpenID) {
		cfg.Scopes = append([]string{oidc.ScopeOpenID}, cfg.Scopes...)
	}
	client := cfg.HTTPClient
	if client == nil {
		client = &http.Client{Timeout: DefaultSSOTimeout}
	}
	return &SSO{cfg: cfg, client: client, pending: make(map[string]*pendingLogin)}, nil
}

// discover returns the provider's metadata, fetched once; a failure is
// not remembered, so the next sign-in tries again.
func (s *SSO) discover(ctx context.Context) (*ssoProvider, error) {
	s.mu.Lock()
	p := s.provider
	s.mu.Unlock()
	if p != nil {
		return p, nil
	}
	ctx, cancel := context.WithTimeout(oidc.ClientContext(ctx, s.client), DefaultSSOTimeout)
	defer cancel()
	prov, err := oidc.NewProvider(ctx, s.cfg.Issuer)
	if err != nil {
		return nil, fmt.Errorf("ui: discovering the OpenID provider: %w", err)
	}
	ep := prov.Endpoint()
	if s.cfg.AuthURL != "" {
		ep.AuthURL = s.cfg.AuthURL
	}
	if s.cfg.TokenURL != "" {
		ep.TokenURL = s.cfg.TokenURL
	}
	p = &ssoProvider{endpoint: ep, verifier: prov.Verifier(&oidc.Config{
		ClientID: s.cfg.ClientID, SupportedSigningAlgs: ssoAlgs, Now: s.cfg.Now})}
	s.mu.Lock()
	if s.provider == nil {
		s.provider = p
	}
	p = s.provider
	s.mu.Unlock()
	return p, nil
}

// oauth is the client's OAuth configuration for one redirect URI.
func (s *SSO) oauth(p *ssoProvider, redirect string) *oauth2.Config {
	return &oauth2.Config{ClientID: s.cfg.ClientID, ClientSecret: s.cfg.ClientSecret, Endpoint: p.endpoint,
		RedirectURL: redirect, Scopes: s.cfg.Scopes}
}

// begin records a pending sign-in and returns its state and browser
// binding and the provider URL to send the browser to. Expired sign-ins go
// first; when the map is still full the oldest goes.
func (s *SSO) begin(p *ssoProvider, redirect string) (state, binding, authURL string) {
	pl := &pendingLogin{binding: randomToken(), nonce: randomToken(), verifier: oauth2.GenerateVerifier(),
		redirect: redirect, created: s.cfg.Now()}
	state = randomToken()
	s.mu.Lock()
	for id, old := range s.pending {
		if pl.created.Sub(old.created) > s.cfg.PendingTTL {
			delete(s.pending, id)
		}
	}
	for len(s.pending) >= s.cfg.MaxPending {
		s.evictOldest()
	}
	s.pending[state] = pl
	s.mu.Unlock()
	authURL = s.oauth(p, redirect).AuthCodeURL(state, oauth2.S256ChallengeOption(pl.verifier), oidc.Nonce(pl.nonce))
	return state, pl.binding, authURL
}

func (s *SSO) evictOldest() {
	var oldest string
	var at time.Time
	for id, pl := range s.pending {
		if oldest == "" || pl.created.Before(at) {
			oldest, at = id, pl.created
		}
	}
	delete(s.pending, oldest)
}

// take removes and returns the pending sign-in of state when binding is
// its browser's and it has not expired: a state is good for one callback
// only, and only in the browser that started it.
func (s *SSO) take(state, binding string) *pendingLogin {
	if state == "" {
		return nil
	}
	s.mu.Lock()
	pl := s.pending[state]
	delete(s.pending, state)
	s.mu.Unlock()
	if pl == nil || subtle.ConstantTimeCompare([]byte(pl.binding), []byte(binding)) != 1 ||
		s.cfg.Now().Sub(pl.created) > s.cfg.PendingTTL {
		return nil
	}
	return pl
}

// Pending is the number of sign-ins pending (expired ones not yet swept
// included).
func (s *SSO) Pending() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.pending)
}

// errSSOToken is every failure of the code exchange or the ID token's
// checks: the provider's answer is never quoted.
var errSSOToken = errors.New("ui: the provider's answer could not be verified")

// redeem exchanges the code (with the PKCE verifier) and verifies the ID
// token: signature by the provider's keys, issuer, audience (the client
// id), expiry and the sign-in's nonce. It returns the token's claims and
// expiry.
func (s *SSO) redeem(ctx context.Context, p *ssoProvider, pl *pendingLogin, code string) (map[string]any, time.Time, error) {
	ctx, cancel := context.WithTimeout(context.WithValue(ctx, oauth2.HTTPClient, s.client), DefaultSSOTimeout)
	defer cancel()
	tok, err := s.oauth(p, pl.redirect).Exchange(ctx, code, oauth2.VerifierOption(pl.verifier))
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("%w: code exchange failed", errSSOToken)
	}
	raw, _ := tok.Extra("id_token").(string)
	if raw == "" {
		return nil, time.Time{}, fmt.Errorf("%w: no ID token", errSSOToken)
	}
	return s.verifyIDToken(ctx, p, raw, pl.nonce)
}

// verifyIDToken checks raw as redeem describes.
func (s *SSO) verifyIDToken(ctx context.Context, p *ssoProvider, raw, nonce string) (map[string]any, time.Time, error) {
	idt, err := p.verifier.Verify(ctx, raw)
	if err != nil {
		var exp *oidc.TokenExpiredError
		if errors.As(err, &exp) {
			return nil, time.Time{}, fmt.Errorf("%w: ID token expired", errSSOToken)
		}
		return nil, time.Time{}, fmt.Errorf("%w: ID token not verified", errSSOToken)
	}
	if subtle.ConstantTimeCompare([]byte(idt.Nonce), []byte(nonce)) != 1 {
		return nil, time.Time{}, fmt.Errorf("%w: ID token nonce mismatch", errSSOToken)
	}
	if idt.Expiry.IsZero() {
		return nil, time.Time{}, fmt.Errorf("%w: ID token without expiry", errSSOToken)
	}
	var claims map[string]any
	if err := idt.Claims(&claims); err != nil {
		return nil, time.Time{}, fmt.Errorf("%w: ID token claims unreadable", errSSOToken)
	}
	return claims, idt.Expiry, nil
}
