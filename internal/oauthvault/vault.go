package oauthvault

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/mcpgw/mcpgw/internal/seal"
	"github.com/mcpgw/mcpgw/internal/secretbox"
	"github.com/mcpgw/mcpgw/internal/store"
	"github.com/mcpgw/mcpgw/internal/upstream/auth"
)

// Seal purposes the vault needs its Sealer to know.
const (
	// StatePurpose seals the OAuth state of one authorization in flight.
	StatePurpose = "oauth-state"
	// TicketPurpose seals an authorize link handed to a caller.
	TicketPurpose = "oauth-ticket"
)

// Defaults of Config's bounds.
const (
	// DefaultFlowTTL is how long an authorize link and an authorization in flight stay valid.
	DefaultFlowTTL = 10 * time.Minute
	// DefaultMaxLocks bounds the (user, server) pairs refreshing at once.
	DefaultMaxLocks = 1024
	// DefaultGrantTimeout bounds one token request.
	DefaultGrantTimeout = 30 * time.Second
)

// ErrNoToken means the user holds no usable token for the server: none was stored, or the
// upstream refused to refresh it (and it was deleted).
var ErrNoToken = errors.New("oauthvault: the user holds no token for this server")

// ErrBusy means too many (user, server) pairs are refreshing at once (Config.MaxLocks).
var ErrBusy = errors.New("oauthvault: too many token refreshes in flight")

// Server is one upstream whose credential is each user's own OAuth token.
type Server struct {
	Name             string
	ClientID         string
	ClientSecret     string
	AuthorizationURL string
	TokenURL         string
	Scopes           []string
}

// Tokens is where the sealed tokens are kept (*store.Store).
type Tokens interface {
	PutOAuthToken(ctx context.Context, t store.OAuthToken) error
	GetOAuthToken(ctx context.Context, userID, server string) (store.OAuthToken, error)
	DeleteOAuthToken(ctx context.Context, userID, server, sealed string) (bool, error)
}

// Config builds a Vault.
type Config struct {
	Store   Tokens
	Box     *secretbox.Box // encrypts tokens at rest (the salt-derived key)
	Sealer  *seal.Sealer   // must know StatePurpose and TicketPurpose
	Servers []Server
	// HTTPClient reaches the token endpoints; nil means http.DefaultClient.
	HTTPClient *http.Client
	Logger     *slog.Logger
	// FlowTTL bounds authorize links and authorizations in flight (DefaultFlowTTL).
	FlowTTL time.Duration
	// MaxLocks bounds the pairs refreshing at once (DefaultMaxLocks).
	MaxLocks int
	// Now reads the clock; nil means time.Now.
	Now func() time.Time
}

// Vault runs the authorization-code flow for users, keeps their tokens sealed in the store,
// refreshes them before expiry and drops those the upstream refuses. It is safe for
// concurrent use.
type Vault struct {
	cfg     Config
	servers map[string]Server

	mu    sync.Mutex
	locks map[string]*pairLock // refreshes in flight, by pair; at most cfg.MaxLocks
}

// pairLock is one pair's refresh lock: a one-slot channel, and how many hold or wait for it.
type pairLock struct {
	slot chan struct{}
	refs int
}

// New returns a vault over cfg.
func New(cfg Config) (*Vault, error) {
	if cfg.Store == nil || cfg.Box == nil || cfg.Sealer == nil {
		return nil, errors.New("oauthvault: a store, a secretbox and a sealer are required (LITELLM_SALT_KEY and a data dir)")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.FlowTTL <= 0 {
		cfg.FlowTTL = DefaultFlowTTL
	}
	if cfg.MaxLocks <= 0 {
		cfg.MaxLocks = DefaultMaxLocks
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	v := &Vault{cfg: cfg, servers: map[string]Server{}, locks: map[string]*pairLock{}}
	for _, s := range cfg.Servers {
		v.servers[s.Name] = s
	}
	return v, nil
}

// Has reports whether server takes each user's own token.
func (v *Vault) Has(server string) bool { _, ok := v.servers[server]; return ok }

// sealedToken is what one row's sealed value holds.
type sealedToken struct {
	Access  string `json:"a"`
	Refresh string `json:"r,omitempty"`
	RenewAt int64  `json:"n,omitempty"` // unix ms; 0 when the token names no lifetime
	Expiry  int64  `json:"e,omitempty"`
}

// boxContext binds a sealed token to its row, so a value copied to another user or server
// does not open.
func boxContext(user, server string) string {
	return "upstream-oauth-token\x00" + user + "\x00" + server
}

func (v *Vault) put(ctx context.Context, user, server string, t auth.UserToken) error {
	st := sealedToken{Access: t.Access, Refresh: t.Refresh}
	if !t.Expiry.IsZero() {
		st.RenewAt, st.Expiry = t.RenewAt.UnixMilli(), t.Expiry.UnixMilli()
	}
	b, _ := json.Marshal(st)
	return v.cfg.Store.PutOAuthToken(ctx, store.OAuthToken{UserID: user, Server: server,
		Sealed: v.cfg.Box.Seal(boxContext(user, server), string(b)), ExpiresAt: t.Expiry})
}

// get reads and opens the pair's token; ErrNoToken when none is stored or it does not open.
func (v *Vault) get(ctx context.Context, user, server string) (sealedToken, string, error) {
	row, err := v.cfg.Store.GetOAuthToken(ctx, user, server)
	if errors.Is(err, store.ErrNotFound) {
		return sealedToken{}, "", ErrNoToken
	}
	if err != nil {
		return sealedToken{}, "", err
	}
	plain, err := v.cfg.Box.Open(boxContext(user, server), row.Sealed)
	var st sealedToken
	if err == nil {
		err = json.Unmarshal([]byte(plain), &st)
	}
	if err != nil || st.Access == "" {
		v.cfg.Logger.Warn("a stored upstream OAuth token does not open with this LITELLM_SALT_KEY; it is ignored", "server", server)
		return sealedToken{}, "", ErrNoToken
	}
	return st, row.Sealed, nil
}

// Token returns the user's access token for server, refreshed first when it is due for
// renewal (under the pair's lock: one refresh at a time per pair, the others wait and use
// its result). A refresh the upstream refuses deletes the token (ErrNoToken); one that fails
// otherwise leaves the current token in use while it is unexpired.
func (v *Vault) Token(ctx context.Context, user, server string) (string, error) {
	if user == "" || !v.Has(server) {
		return "", ErrNoToken
	}
	st, _, err := v.get(ctx, user, server)
	if err != nil {
		return "", err
	}
	now := v.cfg.Now()
	if st.RenewAt == 0 || now.UnixMilli() < st.RenewAt {
		return st.Access, nil
	}
	return v.refresh(ctx, user, server, "")
}

// Refused handles the upstream refusing token (HTTP 401) for the pair: the token is refreshed
// once if it is still the stored one; when it cannot be, it is deleted. It returns the token
// to retry with, or ErrNoToken.
func (v *Vault) Refused(ctx context.Context, user, server, token string) (string, error) {
	if user == "" || !v.Has(server) {
		return "", ErrNoToken
	}
	return v.refresh(ctx, user, server, token)
}

// refresh renews the pair's token under its lock. stale, when set, is a token the upstream
// refused: the refresh is forced while it is still the stored one. Without stale, the token
// is renewed only if it is still due (another holder of the lock may have renewed it).
func (v *Vault) refresh(ctx context.Context, user, server, stale string) (string, error) {
	release, err := v.lock(ctx, user+"\x00"+server)
	if err != nil {
		return "", err
	}
	defer release()
	st, sealed, err := v.get(ctx, user, server)
	if err != nil {
		return "", err
	}
	now := v.cfg.Now()
	if stale != "" && st.Access != stale {
		return st.Access, nil // already replaced
	}
	if stale == "" && (st.RenewAt == 0 || now.UnixMilli() < st.RenewAt) {
		return st.Access, nil
	}
	usable := stale == "" && (st.Expiry == 0 || now.UnixMilli() < st.Expiry)
	if st.Refresh == "" {
		if usable {
			return st.Access, nil
		}
		v.drop(ctx, user, server, sealed, "no refresh token")
		return "", ErrNoToken
	}
	s := v.servers[server]
	form := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {st.Refresh}, "client_id": {s.ClientID}}
	if s.ClientSecret != "" {
		form.Set("client_secret", s.ClientSecret)
	}
	gctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), DefaultGrantTimeout)
	defer cancel()
	t, err := auth.GrantToken(gctx, v.cfg.HTTPClient, s.TokenURL, form, secretOf(s, st.Refresh), st.Refresh)
	switch {
	case err == nil:
		if err := v.put(ctx, user, server, t); err != nil {
			return "", fmt.Errorf("oauthvault: storing a refreshed token: %w", err)
		}
		return t.Access, nil
	case auth.Refused(err):
		v.drop(ctx, user, server, sealed, "the authorization server refused the refresh")
		return "", ErrNoToken
	case usable:
		v.cfg.Logger.Warn("upstream OAuth token refresh failed; the current token is used until it expires", "server", server, "error", err)
		return st.Access, nil
	}
	return "", fmt.Errorf("oauthvault: refreshing the token of server %q: %w", server, err)
}

// secretOf is what a token request's errors must never contain.
func secretOf(s Server, grant string) string {
	if s.ClientSecret != "" {
		return s.ClientSecret
	}
	return grant
}

// drop deletes the pair's token while it is still sealed (a token stored meanwhile stays).
func (v *Vault) drop(ctx context.Context, user, server, sealed, why string) {
	if _, err := v.cfg.Store.DeleteOAuthToken(context.WithoutCancel(ctx), user, server, sealed); err != nil {
		v.cfg.Logger.Warn("could not delete a refused upstream OAuth token", "server", server, "error", err)
		return
	}
	v.cfg.Logger.Info("upstream OAuth token dropped; the user must authorize again", "server", server, "reason", why)
}

// Delete deletes the user's token for server; false when there was none.
func (v *Vault) Delete(ctx context.Context, user, server string) (bool, error) {
	return v.cfg.Store.DeleteOAuthToken(ctx, user, server, "")
}

// lock takes the pair's refresh lock, waiting while another holds it; ErrBusy when
// MaxLocks other pairs hold or wait for theirs. The returned release must be called once.
func (v *Vault) lock(ctx context.Context, key string) (func(), error) {
	v.mu.Lock()
	l := v.locks[key]
	if l == nil {
		if len(v.locks) >= v.cfg.MaxLocks {
			v.mu.Unlock()
			return nil, ErrBusy
		}
		l = &pairLock{slot: make(chan struct{}, 1)}
		v.locks[key] = l
	}
	l.refs++
	v.mu.Unlock()
	unref := func() {
		v.mu.Lock()
		if l.refs--; l.refs == 0 {
			delete(v.locks, key)
		}
		v.mu.Unlock()
	}
	select {
	case l.slot <- struct{}{}:
		return func() { <-l.slot; unref() }, nil
	case <-ctx.Done():
		unref()
		return nil, ctx.Err()
	}
}

// scopeString joins scopes as RFC 6749 wants them.
func scopeString(scopes []string) string { return strings.Join(scopes, " ") }

// grant runs one token request for s within DefaultGrantTimeout.
func grant(ctx context.Context, v *Vault, s Server, form url.Values, secret string) (auth.UserToken, error) {
	ctx, cancel := context.WithTimeout(ctx, DefaultGrantTimeout)
	defer cancel()
	return auth.GrantToken(ctx, v.cfg.HTTPClient, s.TokenURL, form, secret, "")
}
