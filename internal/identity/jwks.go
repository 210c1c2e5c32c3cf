package identity

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/go-jose/go-jose/v4"
)

// DefaultJWKSRefetchGap is the least time between two JWKS fetches of one URL when
// JWTConfig.JWKSRefetchGap is zero.
const DefaultJWKSRefetchGap = 30 * time.Second

// maxJWKSBody bounds one JWKS answer.
const maxJWKSBody = 1 << 20

// errNoKey is the refusal of a token whose key the cached set lacks; it never names the kid.
var errNoKey = errors.New("identity: no cached key verifies the token")

// jwksKeySet is an oidc.KeySet over one JWKS URL. It caches the last set the URL answered and
// fetches it again when a token names a key the cache lacks, at most once per gap: a token
// arriving within the gap with an unknown key is refused without a fetch, so tokens with
// invented kids cost the identity provider at most one request per gap.
type jwksKeySet struct {
	url    string
	client *http.Client
	gap    time.Duration
	now    func() time.Time
	algs   []jose.SignatureAlgorithm
	fetch  chan struct{} // one fetch in flight; verifications needing it wait here

	mu        sync.Mutex
	keys      []jose.JSONWebKey
	lastFetch time.Time // start of the last fetch; zero before the first
}

func newJWKSKeySet(url string, client *http.Client, gap time.Duration, now func() time.Time) *jwksKeySet {
	algs := make([]jose.SignatureAlgorithm, len(jwtAlgs))
	for i, a := range jwtAlgs {
		algs[i] = jose.SignatureAlgorithm(a)
	}
	return &jwksKeySet{url: url, client: client, gap: gap, now: now, algs: algs, fetch: make(chan struct{}, 1)}
}

// VerifySignature implements oidc.KeySet: the cached keys first, then (gap permitting) a
// fresh set.
func (k *jwksKeySet) VerifySignature(ctx context.Context, raw string) ([]byte, error) {
	jws, err := jose.ParseSigned(raw, k.algs)
	if err != nil {
		return nil, fmt.Errorf("identity: malformed jwt: %w", err)
	}
	kid := jws.Signatures[0].Header.KeyID
	if payload, ok := k.verifyCached(jws, kid); ok {
		return payload, nil
	}
	if err := k.refresh(ctx); err != nil {
		return nil, err
	}
	if payload, ok := k.verifyCached(jws, kid); ok {
		return payload, nil
	}
	return nil, errNoKey
}

// verifyCached tries every cached key with the token's kid (every key when it names none).
func (k *jwksKeySet) verifyCached(jws *jose.JSONWebSignature, kid string) ([]byte, bool) {
	k.mu.Lock()
	keys := k.keys
	k.mu.Unlock()
	for i := range keys {
		if kid != "" && keys[i].KeyID != kid {
			continue
		}
		if payload, err := jws.Verify(&keys[i]); err == nil {
			return payload, true
		}
	}
	return nil, false
}

// refresh fetches the set unless a fetch started less than the gap ago; a verification that
// waited for another's fetch then finds the gap not passed and uses its result. A failed
// fetch counts too, so an unreachable provider is not retried in a loop.
func (k *jwksKeySet) refresh(ctx context.Context) error {
	select {
	case k.fetch <- struct{}{}:
	case <-ctx.Done():
		return fmt.Errorf("identity: waiting for the JWKS: %w", ctx.Err())
	}
	defer func() { <-k.fetch }()
	k.mu.Lock()
	now := k.now()
	if !k.lastFetch.IsZero() && now.Sub(k.lastFetch) < k.gap {
		k.mu.Unlock()
		return nil
	}
	k.lastFetch = now
	k.mu.Unlock()
	keys, err := k.get(context.WithoutCancel(ctx))
	if err != nil {
		return err
	}
	k.mu.Lock()
	k.keys = keys
	k.mu.Unlock()
	return nil
}

// get fetches and decodes the set; keys of types or algorithms it cannot use are skipped.
// Errors name the failure class only, never the body.
func (k *jwksKeySet) get(ctx context.Context) ([]jose.JSONWebKey, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, k.url, nil)
	if err != nil {
		return nil, errors.New("identity: bad JWKS URL")
	}
	req.Header.Set("Accept", "application/json")
	resp, err := k.client.Do(req)
	if err != nil {
		return nil, errors.New("identity: fetching the JWKS failed")
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("identity: the JWKS answered status %d", resp.StatusCode)
	}
	var set struct {
		Keys []json.RawMessage `json:"keys"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxJWKSBody)).Decode(&set); err != nil {
		return nil, errors.New("identity: the JWKS is not a key set")
	}
	var keys []jose.JSONWebKey
	for _, raw := range set.Keys {
		var key jose.JSONWebKey
		if json.Unmarshal(raw, &key) != nil || !key.Valid() || !key.IsPublic() {
			continue
		}
		keys = append(keys, key)
	}
	return keys, nil
}
