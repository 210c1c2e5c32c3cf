package upstreamid

import (
	"container/list"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"sync"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/mcpgw/mcpgw/internal/identity"
)

// Defaults of Config.
const (
	// DefaultHeader is the header that carries the token upstream.
	DefaultHeader = "X-MCP-Gateway-Identity"
	// TTL is a token's lifetime.
	TTL = 300 * time.Second
	// ReuseMargin is how long before expiry a cached token stops being reused.
	ReuseMargin = 60 * time.Second
	// DefaultCacheSize bounds the cached tokens.
	DefaultCacheSize = 10000
	// minKeyBits is the smallest RSA key accepted.
	minKeyBits = 2048
)

// Key is one RSA signing key and its key id.
type Key struct {
	kid  string
	priv *rsa.PrivateKey
}

// KID returns the key id (the RFC 7638 thumbprint of its public key).
func (k Key) KID() string { return k.kid }

// Config builds a Signer.
type Config struct {
	// Keys are published in JWKS; the last one signs. At least one.
	Keys []Key
	// Issuer is the iss claim: the gateway's public URL.
	Issuer string
	// CacheSize bounds the cached tokens; zero means DefaultCacheSize.
	CacheSize int
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Signer mints and caches identity tokens. It is safe for concurrent use.
type Signer struct {
	signing Key
	issuer  string
	jwks    []byte
	now     func() time.Time
	size    int

	mu    sync.Mutex
	lru   *list.List // of *entry, most recent first
	cache map[cacheKey]*list.Element
}

type cacheKey struct{ binding, aud string }

type entry struct {
	key   cacheKey
	token string
	reuse time.Time // replaced from then on
}

// New returns a signer over cfg.
func New(cfg Config) (*Signer, error) {
	if len(cfg.Keys) == 0 {
		return nil, errors.New("identity signing: no key")
	}
	jwks, err := encodeJWKS(cfg.Keys)
	if err != nil {
		return nil, err
	}
	s := &Signer{signing: cfg.Keys[len(cfg.Keys)-1], issuer: cfg.Issuer, jwks: jwks, now: cfg.Now,
		size: cfg.CacheSize, lru: list.New(), cache: map[cacheKey]*list.Element{}}
	if s.now == nil {
		s.now = time.Now
	}
	if s.size <= 0 {
		s.size = DefaultCacheSize
	}
	return s, nil
}

// JWKS returns the JSON Web Key Set of every key, for /.well-known/jwks.json.
func (s *Signer) JWKS() []byte { return s.jwks }

// Token returns a token naming caller for the audience aud: the cached one
// while it has more than ReuseMargin to live, else a new one.
func (s *Signer) Token(caller *identity.Caller, aud string) (string, error) {
	k := cacheKey{binding: caller.Binding(), aud: aud}
	now := s.now()
	s.mu.Lock()
	if el, ok := s.cache[k]; ok {
		e := el.Value.(*entry)
		if now.Before(e.reuse) {
			s.lru.MoveToFront(el)
			s.mu.Unlock()
			return e.token, nil
		}
	}
	s.mu.Unlock()
	tok, err := s.mint(caller, aud, now)
	if err != nil {
		return "", err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if el, ok := s.cache[k]; ok {
		s.lru.Remove(el)
	}
	s.cache[k] = s.lru.PushFront(&entry{key: k, token: tok, reuse: now.Add(TTL - ReuseMargin)})
	for s.lru.Len() > s.size {
		old := s.lru.Back()
		s.lru.Remove(old)
		delete(s.cache, old.Value.(*entry).key)
	}
	return tok, nil
}

// claims are the token's claims.
type claims struct {
	jwt.RegisteredClaims
	Act map[string]string `json:"act,omitempty"`
}

func (s *Signer) mint(caller *identity.Caller, aud string, now time.Time) (string, error) {
	jti := make([]byte, 16)
	_, _ = rand.Read(jti)
	c := claims{RegisteredClaims: jwt.RegisteredClaims{
		Issuer: s.issuer, Subject: subject(caller), Audience: jwt.ClaimStrings{aud},
		IssuedAt: jwt.NewNumericDate(now), ExpiresAt: jwt.NewNumericDate(now.Add(TTL)),
		ID: hex.EncodeToString(jti),
	}}
	act := map[string]string{}
	if caller != nil {
		for k, v := range map[string]string{"team_id": caller.TeamID, "org_id": caller.OrgID,
			"end_user_id": caller.EndUserID, "key_hash": caller.KeyHash} {
			if v != "" {
				act[k] = v
			}
		}
	}
	if len(act) > 0 {
		c.Act = act
	}
	t := jwt.NewWithClaims(jwt.SigningMethodRS256, c)
	t.Header["kid"] = s.signing.kid
	signed, err := t.SignedString(s.signing.priv)
	if err != nil {
		return "", fmt.Errorf("identity signing: %w", err)
	}
	return signed, nil
}

// subject is sub: the user id, else the key hash, else "anonymous".
func subject(c *identity.Caller) string {
	switch {
	case c == nil:
		return "anonymous"
	case c.UserID != "":
		return c.UserID
	case c.KeyHash != "":
		return "key:" + c.KeyHash
	}
	return "anonymous"
}

// ParseKeys reads every RSA private key of a PEM text (PKCS#1 "RSA PRIVATE
// KEY" or PKCS#8 "PRIVATE KEY" blocks), in order. Errors never quote the
// text.
func ParseKeys(text []byte) ([]Key, error) {
	var keys []Key
	for {
		var b *pem.Block
		b, text = pem.Decode(text)
		if b == nil {
			break
		}
		var priv any
		var err error
		switch b.Type {
		case "RSA PRIVATE KEY":
			priv, err = x509.ParsePKCS1PrivateKey(b.Bytes)
		case "PRIVATE KEY":
			priv, err = x509.ParsePKCS8PrivateKey(b.Bytes)
		default:
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("identity signing key %d: not a valid %s", len(keys)+1, b.Type)
		}
		rk, ok := priv.(*rsa.PrivateKey)
		if !ok {
			return nil, fmt.Errorf("identity signing key %d: not an RSA key (RS256 needs one)", len(keys)+1)
		}
		k, err := NewKey(rk)
		if err != nil {
			return nil, err
		}
		keys = append(keys, k)
	}
	if len(keys) == 0 {
		return nil, errors.New("identity signing key: no RSA private key in the PEM")
	}
	return keys, nil
}

// NewKey wraps priv, which must have at least 2048 bits.
func NewKey(priv *rsa.PrivateKey) (Key, error) {
	if priv.N.BitLen() < minKeyBits {
		return Key{}, fmt.Errorf("identity signing key: %d bits, at least %d required", priv.N.BitLen(), minKeyBits)
	}
	return Key{kid: thumbprint(&priv.PublicKey), priv: priv}, nil
}

// GenerateKey makes a fresh 2048-bit key, for a gateway without one
// configured (see the package doc for why that suits one replica only).
func GenerateKey() (Key, error) {
	priv, err := rsa.GenerateKey(rand.Reader, minKeyBits)
	if err != nil {
		return Key{}, fmt.Errorf("identity signing: generating a key: %w", err)
	}
	return NewKey(priv)
}

// b64 is unpadded base64url.
func b64(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

// thumbprint is the RFC 7638 SHA-256 thumbprint of pub.
func thumbprint(pub *rsa.PublicKey) string {
	// Members in lexicographic order, no whitespace (RFC 7638 section 3).
	canon := `{"e":"` + b64(big.NewInt(int64(pub.E)).Bytes()) + `","kty":"RSA","n":"` + b64(pub.N.Bytes()) + `"}`
	sum := crypto.SHA256.New()
	sum.Write([]byte(canon))
	return b64(sum.Sum(nil))
}

// jwk is one public key of the set.
type jwk struct {
	Kty string `json:"kty"`
	Use string `json:"use"`
	Alg string `json:"alg"`
	Kid string `json:"kid"`
	N   string `json:"n"`
	E   string `json:"e"`
}

func encodeJWKS(keys []Key) ([]byte, error) {
	set := struct {
		Keys []jwk `json:"keys"`
	}{}
	for i := len(keys) - 1; i >= 0; i-- { // the signing key first
		pub := &keys[i].priv.PublicKey
		set.Keys = append(set.Keys, jwk{Kty: "RSA", Use: "sig", Alg: "RS256", Kid: keys[i].kid,
			N: b64(pub.N.Bytes()), E: b64(big.NewInt(int64(pub.E)).Bytes())})
	}
	b, err := json.Marshal(set)
	if err != nil {
		return nil, fmt.Errorf("identity signing: encoding the key set: %w", err)
	}
	return b, nil
}
