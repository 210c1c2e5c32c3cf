package seal

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"time"
)

// MaxTokenBytes is the longest token, in characters, that Open will look at.
const MaxTokenBytes = 64 << 10

// Overhead is the number of raw (pre-base64) bytes a token adds to its payload.
const Overhead = versionLen + nonceLen + expiryLen + tagLen

// MaxPayloadBytes is the largest payload whose token still fits in MaxTokenBytes.
const MaxPayloadBytes = MaxTokenBytes/4*3 - Overhead

// SaltKeyEnv names the environment variable the gateway reads the salt key from.
const SaltKeyEnv = "LITELLM_SALT_KEY"

const (
	version    = 1
	versionLen = 1
	nonceLen   = 12
	expiryLen  = 8
	tagLen     = 16
	keyLen     = 32
	infoPrefix = "mcpgw/seal/v1/"

	// minTokenLen is the base64 length of a token with an empty payload.
	minTokenLen = (Overhead*8 + 5) / 6
)

// ErrNoKey means the salt key is unset or empty, so nothing can be sealed or opened.
var ErrNoKey = errors.New("seal: " + SaltKeyEnv + " is unset or empty; set the same " + SaltKeyEnv + " on every replica")

// ErrInvalid means a token is malformed, truncated, tampered with, foreign or for another purpose.
var ErrInvalid = errors.New("seal: invalid token")

// ErrExpired means a token is authentic but its expiry has passed.
var ErrExpired = errors.New("seal: token expired")

// ErrPurpose means a purpose is empty, duplicated, or not one the Sealer was created with.
var ErrPurpose = errors.New("seal: empty, duplicate or unknown purpose")

// ErrTTL means Seal was given a ttl that is not positive.
var ErrTTL = errors.New("seal: ttl must be positive")

// ErrTooLarge means the payload would produce a token longer than MaxTokenBytes.
var ErrTooLarge = errors.New("seal: payload too large")

// purposeKey is the immutable per-purpose state built once by New.
type purposeKey struct {
	aead cipher.AEAD
	aad  []byte // version byte | purpose
}

// Sealer seals and opens tokens for a fixed set of purposes; it is safe for concurrent use.
type Sealer struct {
	keys     map[string]*purposeKey // read-only after New
	purposes []string               // read-only after New, in New's order
	enc      *base64.Encoding       // strict, unpadded base64url
	now      func() time.Time
}

// New derives one AES-256-GCM key per purpose from saltKey with HKDF-SHA256.
func New(saltKey string, purposes ...string) (*Sealer, error) {
	if saltKey == "" {
		return nil, ErrNoKey
	}
	if len(purposes) == 0 {
		return nil, ErrPurpose
	}
	s := &Sealer{
		keys:     make(map[string]*purposeKey, len(purposes)),
		purposes: append([]string(nil), purposes...),
		enc:      base64.RawURLEncoding.Strict(),
		now:      time.Now,
	}
	for _, p := range purposes {
		if p == "" {
			return nil, ErrPurpose
		}
		if _, dup := s.keys[p]; dup {
			return nil, ErrPurpose
		}
		key, err := hkdf.Key(sha256.New, []byte(saltKey), nil, infoPrefix+p, keyLen)
		if err != nil {
			return nil, err
		}
		block, err := aes.NewCipher(key)
		clear(key)
		if err != nil {
			return nil, err
		}
		aead, err := cipher.NewGCM(block)
		if err != nil {
			return nil, err
		}
		aad := make([]byte, 0, versionLen+len(p))
		aad = append(append(aad, version), p...)
		s.keys[p] = &purposeKey{aead: aead, aad: aad}
	}
	return s, nil
}

// WithClock returns a copy of s that reads the time from now (nil means time.Now); it is meant for tests.
func (s *Sealer) WithClock(now func() time.Time) *Sealer {
	if s == nil {
		return nil
	}
	c := *s
	if now == nil {
		now = time.Now
	}
	c.now = now
	return &c
}

// key returns the state for purpose, or ErrNoKey for a nil Sealer and ErrPurpose for an unknown purpose.
func (s *Sealer) key(purpose string) (*purposeKey, error) {
	if s == nil || s.keys == nil {
		return nil, ErrNoKey
	}
	k, ok := s.keys[purpose]
	if !ok {
		return nil, ErrPurpose
	}
	return k, nil
}

// Seal encrypts payload for purpose, valid for ttl, and returns an unpadded base64url token.
func (s *Sealer) Seal(purpose string, payload []byte, ttl time.Duration) (string, error) {
	k, err := s.key(purpose)
	if err != nil {
		return "", err
	}
	if ttl <= 0 {
		return "", ErrTTL
	}
	if len(payload) > MaxPayloadBytes {
		return "", ErrTooLarge
	}
	expiry := s.now().Add(ttl).UnixMilli()

	rawLen := Overhead + len(payload)
	encLen := s.enc.EncodedLen(rawLen)
	// One allocation holds the encoded token (head) and the raw token (tail);
	// the raw part is sealed in place, then encoded into the head.
	buf := make([]byte, encLen+rawLen)
	raw := buf[encLen:]
	raw[0] = version
	nonce := raw[versionLen : versionLen+nonceLen]
	rand.Read(nonce) // never fails since Go 1.24; it crashes the program instead
	body := raw[versionLen+nonceLen:]
	binary.BigEndian.PutUint64(body, uint64(expiry))
	copy(body[expiryLen:], payload)
	k.aead.Seal(body[:0], nonce, body[:expiryLen+len(payload)], k.aad)

	s.enc.Encode(buf[:encLen], raw)
	return string(buf[:encLen]), nil
}

// Open authenticates and decrypts a token sealed for purpose and returns its payload.
func (s *Sealer) Open(purpose string, token string) ([]byte, error) {
	k, err := s.key(purpose)
	if err != nil {
		return nil, err
	}
	// Length bounds first: nothing oversized or undersized is ever decoded.
	if len(token) > MaxTokenBytes || len(token) < minTokenLen {
		return nil, ErrInvalid
	}
	raw, err := s.enc.DecodeString(token)
	// encoding/base64 skips '\r' and '\n' even in strict mode; requiring the
	// canonical length makes every accepted token have exactly one spelling.
	if err != nil || s.enc.EncodedLen(len(raw)) != len(token) || len(raw) < Overhead || raw[0] != version {
		return nil, ErrInvalid
	}
	nonce := raw[versionLen : versionLen+nonceLen]
	body := raw[versionLen+nonceLen:]
	plain, err := k.aead.Open(body[:0], nonce, body, k.aad)
	if err != nil {
		return nil, ErrInvalid
	}
	// Authentic from here on; only now is the expiry trusted.
	expiry := int64(binary.BigEndian.Uint64(plain))
	if expiry <= s.now().UnixMilli() {
		return nil, ErrExpired
	}
	return plain[expiryLen:len(plain):len(plain)], nil
}
