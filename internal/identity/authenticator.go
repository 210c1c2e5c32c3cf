package identity

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"sync/atomic"
	"time"
)

// DefaultTimeout bounds one webhook call when Config.Timeout is zero.
const DefaultTimeout = 5 * time.Second

// Config configures an Authenticator.
type Config struct {
	// MasterKey is general_settings.master_key ("" when unset).
	MasterKey string
	// CustomAuthURL is general_settings.custom_auth (an http or https URL) or "".
	CustomAuthURL string
	// HTTPClient calls the webhook; nil means a client with sane timeouts. Redirects are never followed.
	HTTPClient *http.Client
	// Timeout bounds one webhook call; zero or negative means DefaultTimeout.
	Timeout time.Duration
	// PermitWeak is LITELLM_DANGEROUSLY_PERMIT_WEAK_OR_UNSET_MASTER_KEY=true.
	PermitWeak bool
	// Logger receives warnings; nil discards them. Keys are never logged.
	Logger *slog.Logger
	// MaxWebhookCalls bounds concurrent webhook calls; zero or negative means DefaultMaxWebhookCalls.
	MaxWebhookCalls int
	// NegativeCacheTTL is how long a 401/403 is remembered; zero means DefaultNegativeCacheTTL,
	// negative disables the cache.
	NegativeCacheTTL time.Duration
	// NegativeCacheSize bounds the remembered refusals; zero means DefaultNegativeCacheSize,
	// negative disables the cache.
	NegativeCacheSize int
	// Keys finds keys from the key store; nil means only the master key is known. Unused with a
	// webhook, which decides every key.
	Keys KeyLookup
	// JWT, when set, verifies credentials shaped like a JWT (general_settings.enable_jwt_auth)
	// before any key check; nil means every credential is a key.
	JWT *JWTConfig
	// OnWebhook, when set, is told how long each webhook call took and how it ended ("ok",
	// "refused" for a 401/403, "error" for anything else); for metrics. It must not block.
	OnWebhook func(d time.Duration, outcome string)
}

// Authenticator establishes the caller of each request; it is safe for concurrent use.
type Authenticator struct {
	hasMaster    bool
	masterDigest [sha256.Size]byte
	masterHash   string // hex of masterDigest: the master caller's KeyHash, made once
	open         bool   // no master key, no webhook, PermitWeak: every request is admitted
	webhook      string
	client       *http.Client
	timeout      time.Duration
	log          *slog.Logger
	calls        chan struct{} // one token per webhook call in flight
	refused      *negCache     // recent 401/403 answers by credential digest
	busyLogged   atomic.Int64  // when "webhook busy" was last logged at WARN (unix ns)
	keys         KeyLookup     // nil: no key store
	now          func() time.Time
	onWebhook    func(time.Duration, string) // Config.OnWebhook; nil: none
	jwt          *jwtAuth                    // nil: JWT auth off
}

// New checks cfg and returns an Authenticator. It refuses an unset or weak master key (see
// WeakKeyReason) unless cfg.PermitWeak, and a custom_auth that is not an http(s) URL. Error
// messages never contain the key or the webhook URL.
func New(cfg Config) (*Authenticator, error) {
	a := &Authenticator{timeout: cfg.Timeout, log: cfg.Logger, keys: cfg.Keys, now: time.Now, onWebhook: cfg.OnWebhook}
	if a.log == nil {
		a.log = slog.New(slog.DiscardHandler)
	}
	if a.timeout <= 0 {
		a.timeout = DefaultTimeout
	}
	if reason := WeakKeyReason(cfg.MasterKey); reason != "" {
		if !cfg.PermitWeak {
			return nil, fmt.Errorf("identity: general_settings.master_key is %s; set a strong master key "+
				"(at least %d characters, not an example key) or set %s=true to start anyway",
				reason, MinMasterKeyLen, PermitWeakEnv)
		}
		a.log.Warn("starting with a weak or unset master key because "+PermitWeakEnv+"=true", "reason", reason)
	}
	if cfg.MasterKey != "" {
		a.hasMaster = true
		a.masterDigest = sha256.Sum256([]byte(cfg.MasterKey))
		a.masterHash = hex.EncodeToString(a.masterDigest[:])
	}
	if cfg.CustomAuthURL != "" {
		u, err := url.Parse(cfg.CustomAuthURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, errors.New("identity: general_settings.custom_auth must be an absolute http:// or https:// URL")
		}
		a.webhook = cfg.CustomAuthURL
		a.client = webhookClient(cfg.HTTPClient)
		maxCalls := cfg.MaxWebhookCalls
		if maxCalls <= 0 {
			maxCalls = DefaultMaxWebhookCalls
		}
		a.calls = make(chan struct{}, maxCalls)
		a.refused = newNegCache(cfg.NegativeCacheSize, cfg.NegativeCacheTTL)
	}
	if cfg.JWT != nil {
		j, err := newJWTAuth(*cfg.JWT)
		if err != nil {
			return nil, err
		}
		a.jwt = j
	}
	if !a.hasMaster && a.webhook == "" && a.jwt == nil {
		a.open = true
		a.log.Warn("no master_key and no custom_auth: every request is admitted as proxy_admin")
	}
	return a, nil
}

// webhookClient returns a copy of c (or a fresh client) that never follows redirects, so the
// caller's key is never re-posted to a URL the operator did not configure.
func webhookClient(c *http.Client) *http.Client {
	var out http.Client
	if c != nil {
		out = *c
	} else {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.DialContext = (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext
		tr.TLSHandshakeTimeout = 5 * time.Second
		tr.ResponseHeaderTimeout = 30 * time.Second
		tr.MaxIdleConnsPerHost = 32
		tr.IdleConnTimeout = 90 * time.Second
		out.Transport = tr
	}
	out.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &out
}

// Authenticate establishes the caller of one HTTP request. method is the MCP method or the HTTP
// route, passed to the webhook. Failures are *Error values.
//
// Order: a context carrying a session check (WithSession) is decided by that check alone; an open gateway (no master key and no webhook, only possible with PermitWeak) admits
// every request as proxy_admin; a request without a credential is refused with 401; with a
// webhook configured the webhook decides every key, the master key included, and its identity
// governs; without one the master key is recognised locally and any other key is looked up in
// the key store (Config.Keys): unknown, blocked or expired keys are refused with 401, and
// without a store every other key is refused with 401.
func (a *Authenticator) Authenticate(ctx context.Context, r *http.Request, method string) (*Caller, error) {
	if c, ok, err := sessionCaller(ctx); ok {
		return c, err
	}
	key, _ := Credential(r)
	var digest [sha256.Size]byte
	keyHash, master := "", false
	if key != "" {
		digest = sha256.Sum256([]byte(key))
		// Comparing fixed-size digests in constant time leaks neither content nor length;
		// the master key's hash is made once, not per request.
		master = a.hasMaster && subtle.ConstantTimeCompare(digest[:], a.masterDigest[:]) == 1
		if master {
			keyHash = a.masterHash
		} else {
			keyHash = hex.EncodeToString(digest[:])
		}
	}
	if a.open {
		return &Caller{KeyHash: keyHash, UserID: MasterUserID, Role: RoleProxyAdmin, IsMaster: true}, nil
	}
	if key == "" {
		return nil, errMissing()
	}
	if a.jwt != nil && looksLikeJWT(key) {
		return a.jwt.authenticate(ctx, r, key)
	}
	if a.webhook == "" {
		if master {
			return &Caller{KeyHash: keyHash, UserID: MasterUserID, Role: RoleProxyAdmin, IsMaster: true}, nil
		}
		if a.keys != nil {
			return a.storeKey(ctx, keyHash, r.Header.Get(EndUserHeader))
		}
		return nil, errInvalid()
	}
	c, err := a.askWebhook(ctx, r, key, negKey(digest), method)
	if err != nil {
		return nil, err
	}
	c.KeyHash = keyHash
	return c, nil
}
