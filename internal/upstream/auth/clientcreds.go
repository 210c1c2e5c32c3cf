package auth

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/mcpgw/mcpgw/internal/asciifold"
	"golang.org/x/net/http/httpguts"
)

// DefaultMintTimeout bounds one token request when the config sets none.
const DefaultMintTimeout = 30 * time.Second

// failureCooldown is how long Token answers from the last failure (the
// cached token while it is unexpired, else the error) instead of contacting
// a token endpoint that just failed.
const failureCooldown = 5 * time.Second

// TokenSource yields per-request upstream tokens; *ClientCredentials is one.
type TokenSource interface {
	// Token returns a currently valid token.
	Token(ctx context.Context) (string, error)
	// Invalidate marks token stale so the next Token obtains a new one.
	Invalidate(token string)
}

// ClientCredentialsConfig configures an OAuth2 client_credentials grant.
type ClientCredentialsConfig struct {
	// TokenURL is the token endpoint (token_url); http or https.
	TokenURL string
	// ClientID is client_id; required.
	ClientID string
	// ClientSecret is client_secret; sent in the form (client_secret_post).
	ClientSecret string
	// Scopes are requested as one space-separated scope parameter.
	Scopes []string
	// HTTPClient sends token requests; nil means a fresh default client. It is
	// copied and never follows redirects (the secret is in the body).
	HTTPClient *http.Client
	// Clock is the time source; nil means SystemClock.
	Clock Clock
	// MintTimeout bounds one token request; 0 means DefaultMintTimeout.
	MintTimeout time.Duration
}

// ClientCredentials mints, caches and renews client_credentials access
// tokens for one upstream server. It is safe for concurrent use; concurrent
// callers needing a new token share one request.
type ClientCredentials struct {
	tokenURL    string
	form        string
	secret      string
	scopes      []string
	client      *http.Client
	clock       Clock
	mintTimeout time.Duration

	mu       sync.Mutex
	cur      *cachedToken
	flight   *flight
	gen      uint64        // completed (not aborted) mint attempts
	lastErr  error         // result of attempt gen
	lastMiss []string      // scopes attempt gen did not get
	failedAt time.Time     // when the last attempt failed; zero after success
	changed  chan struct{} // closed and replaced whenever the state above changes
}

// cachedToken is one minted access token and its schedule.
type cachedToken struct {
	access  string
	issued  time.Time // when the request for it was sent
	renewAt time.Time // zero: no known expiry, never renewed proactively
	expiry  time.Time // zero: no known expiry
	missing []string  // requested scopes the grant lacks
}

// fresh reports whether t needs no renewal at now.
func (t *cachedToken) fresh(now time.Time) bool {
	return t != nil && (t.renewAt.IsZero() || now.Before(t.renewAt))
}

// valid reports whether t has not expired at now.
func (t *cachedToken) valid(now time.Time) bool {
	return t != nil && (t.expiry.IsZero() || now.Before(t.expiry))
}

// flight is one in-progress mint that later callers wait for.
type flight struct {
	done    chan struct{}
	tok     *cachedToken
	err     error
	aborted bool // the leader's context ended; not an endpoint failure
}

// NewClientCredentials validates cfg and precomputes the request form.
func NewClientCredentials(cfg ClientCredentialsConfig) (*ClientCredentials, error) {
	u, err := url.Parse(strings.TrimSpace(cfg.TokenURL))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, errors.New("oauth2 client_credentials: token_url must be an absolute http(s) URL")
	}
	id := strings.TrimSpace(cfg.ClientID)
	if id == "" {
		return nil, errors.New("oauth2 client_credentials: client_id is required")
	}
	var scopes []string
	seen := make(map[string]bool)
	for _, s := range cfg.Scopes {
		s = strings.TrimSpace(s)
		if s == "" || seen[s] {
			continue
		}
		if strings.ContainsAny(s, " \t\r\n\"\\") {
			return nil, fmt.Errorf("oauth2 client_credentials: scope %q is not a single scope token", s)
		}
		seen[s] = true
		scopes = append(scopes, s)
	}
	secret := strings.TrimSpace(cfg.ClientSecret)
	form := url.Values{"grant_type": {"client_credentials"}, "client_id": {id}}
	if secret != "" {
		form.Set("client_secret", secret)
	}
	if len(scopes) > 0 {
		form.Set("scope", strings.Join(scopes, " "))
	}
	client := &http.Client{}
	if cfg.HTTPClient != nil {
		c := *cfg.HTTPClient
		client = &c
	}
	client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	clock := cfg.Clock
	if clock == nil {
		clock = SystemClock{}
	}
	timeout := cfg.MintTimeout
	if timeout <= 0 {
		timeout = DefaultMintTimeout
	}
	return &ClientCredentials{
		tokenURL:    u.String(),
		form:        form.Encode(),
		secret:      secret,
		scopes:      scopes,
		client:      client,
		clock:       clock,
		mintTimeout: timeout,
		changed:     make(chan struct{}),
	}, nil
}

// Token returns the cached access token unless it is due for renewal (see
// renewalTimes), in which case it mints a new one; concurrent callers share
// that mint. If renewing fails while the cached token is still unexpired,
// the cached token is returned and the failure is left to Watch. For
// failureCooldown after a failed mint, Token does not contact the endpoint
// again: it answers with the unexpired cached token or the last error.
func (c *ClientCredentials) Token(ctx context.Context) (string, error) {
	return c.obtain(ctx, true)
}

// obtain implements Token; cooldown=false (Watch) always attempts a due
// renewal.
func (c *ClientCredentials) obtain(ctx context.Context, cooldown bool) (string, error) {
	for {
		c.mu.Lock()
		now := c.clock.Now()
		cur := c.cur
		if cur.fresh(now) {
			c.mu.Unlock()
			return cur.access, nil
		}
		if cooldown && !c.failedAt.IsZero() && now.Before(c.failedAt.Add(failureCooldown)) {
			err := c.lastErr
			c.mu.Unlock()
			if cur.valid(now) {
				return cur.access, nil
			}
			return "", err
		}
		f := c.flight
		leader := f == nil
		if leader {
			f = &flight{done: make(chan struct{})}
			c.flight = f
		}
		c.mu.Unlock()

		if leader {
			c.run(ctx, f)
		} else {
			select {
			case <-f.done:
			case <-ctx.Done():
				return "", ctx.Err()
			}
		}
		if f.err == nil {
			return f.tok.access, nil
		}
		if f.aborted {
			if ctx.Err() == nil {
				continue // the leader gave up, not the endpoint: try ourselves
			}
			return "", f.err
		}
		c.mu.Lock()
		cur, now = c.cur, c.clock.Now()
		c.mu.Unlock()
		if cur.valid(now) {
			return cur.access, nil
		}
		return "", f.err
	}
}

// run performs the mint for flight f and publishes its result.
func (c *ClientCredentials) run(ctx context.Context, f *flight) {
	tok, missing, err := c.mint(ctx)
	c.mu.Lock()
	c.flight = nil
	switch {
	case err != nil && ctx.Err() != nil:
		f.aborted = true
	case err != nil:
		c.gen++
		c.lastErr, c.lastMiss = err, nil
		c.failedAt = c.clock.Now()
	default:
		c.gen++
		c.cur = tok
		c.lastErr, c.lastMiss = nil, missing
		c.failedAt = time.Time{}
	}
	f.tok, f.err = tok, err
	c.signalLocked()
	c.mu.Unlock()
	close(f.done)
}

// Grant reports how many mint attempts have completed and whether the
// cached token lacks requested scopes. A follower compares it with a later
// Problem's Gen to tell a loss after it started from one it started with.
func (c *ClientCredentials) Grant() (gen uint64, narrowed bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.gen, c.cur != nil && len(c.cur.missing) > 0
}

// signalLocked wakes every Watch; c.mu must be held.
func (c *ClientCredentials) signalLocked() {
	close(c.changed)
	c.changed = make(chan struct{})
}

// Invalidate marks token stale if it is the cached one, so the next Token
// mints anew (for "401 → refresh once → retry once"). Invalidating a token
// that was already replaced is a no-op, so concurrent 401s on the same
// stale token cause one mint, not several. It also lifts the failure
// cooldown.
func (c *ClientCredentials) Invalidate(token string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cur == nil || token == "" || c.cur.access != token {
		return
	}
	c.cur = nil
	c.failedAt = time.Time{}
	c.signalLocked()
}

// mint performs one token request. Errors carry the status and OAuth error
// code at most: never the response body, never the client secret.
func (c *ClientCredentials) mint(ctx context.Context) (*cachedToken, []string, error) {
	issued := c.clock.Now()
	ctx, cancel := context.WithTimeout(ctx, c.mintTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.tokenURL, strings.NewReader(c.form))
	if err != nil {
		return nil, nil, redact(fmt.Errorf("oauth2 client_credentials: %w", err), c.secret)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	resp, err := c.client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // its text repeats the token URL, which may carry a credential
		}
		return nil, nil, redact(fmt.Errorf("oauth2 client_credentials: token request failed: %w", err), c.secret)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxTokenResponse+1))
	if err != nil {
		return nil, nil, redact(fmt.Errorf("oauth2 client_credentials: reading token response: %w", err), c.secret)
	}
	fields, parsed := parseTokenBody(resp.Header.Get("Content-Type"), body)
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, nil, &TokenError{StatusCode: resp.StatusCode, Code: safeErrorCode(fields.errCode, c.secret)}
	}
	switch {
	case len(body) > maxTokenResponse || !parsed:
		return nil, nil, fmt.Errorf("%w: unparsable body (HTTP %d)", ErrMalformedTokenResponse, resp.StatusCode)
	case fields.access == "" && fields.errCode != "":
		return nil, nil, &TokenError{StatusCode: resp.StatusCode, Code: safeErrorCode(fields.errCode, c.secret)}
	case fields.access == "":
		return nil, nil, fmt.Errorf("%w: no access_token", ErrMalformedTokenResponse)
	case fields.tokenType != "" && !asciifold.Equal(fields.tokenType, "bearer"):
		return nil, nil, fmt.Errorf("%w: token_type is not bearer", ErrMalformedTokenResponse)
	case !httpguts.ValidHeaderFieldValue(fields.access):
		return nil, nil, fmt.Errorf("%w: access_token has control characters", ErrMalformedTokenResponse)
	}
	renewAt, expiry := renewalTimes(issued, lifetime(fields.expiresIn))
	var missing []string
	if fields.scope != nil {
		missing = missingScopes(c.scopes, *fields.scope)
	}
	return &cachedToken{access: fields.access, issued: issued, renewAt: renewAt, expiry: expiry, missing: missing}, missing, nil
}
