// Package secretbox encrypts the credentials of servers kept in the store (auth_value,
// client_secret, static header values, env values) so that a copy of the database alone does
// not reveal them.
//
// Design decisions:
//
//   - One key per process, derived once from LITELLM_SALT_KEY with HKDF-SHA256 under its own
//     label (Label), so it is independent of every other key derived from the salt key (the
//     token sealer's keys use other labels) and every replica sharing the salt key derives the
//     same one. The salt key itself is never used as a key.
//   - AES-256-GCM with a random 96-bit nonce per value: values are few and short, and random
//     nonces under one key stay far below GCM's bound for the number of values a store holds.
//   - Each value is bound to where it is stored (the caller's "context": the server's id and
//     the field), as GCM's additional data, so a ciphertext copied to another server or field
//     does not open.
//   - A sealed value is Prefix followed by the unpadded base64url of nonce‖ciphertext, so a
//     stored value says whether it is sealed. Errors never contain the value.
package secretbox

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
)

// Label is the HKDF info string the credential key is derived under.
const Label = "mcpgw stored server credentials v1"

// Prefix starts every sealed value.
const Prefix = "mcpgw:enc:v1:"

// ErrOpen is returned for a value that does not open under this key and context (another salt
// key, a copied or corrupted value).
var ErrOpen = errors.New("secretbox: the value does not open with this LITELLM_SALT_KEY")

// Box seals and opens values under one key; it is safe for concurrent use.
type Box struct {
	aead cipher.AEAD
}

// New derives the key from saltKey (which must not be empty) and returns a Box.
func New(saltKey string) (*Box, error) {
	if strings.TrimSpace(saltKey) == "" {
		return nil, errors.New("secretbox: no salt key")
	}
	key, err := hkdf.Key(sha256.New, []byte(saltKey), nil, Label, 32)
	if err != nil {
		return nil, fmt.Errorf("secretbox: deriving the key: %w", err)
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("secretbox: %w", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("secretbox: %w", err)
	}
	return &Box{aead: aead}, nil
}

// Seal encrypts plain, bound to context.
func (b *Box) Seal(context, plain string) string {
	nonce := make([]byte, b.aead.NonceSize())
	_, _ = rand.Read(nonce) // never fails (crypto/rand)
	out := b.aead.Seal(nonce, nonce, []byte(plain), []byte(context))
	return Prefix + base64.RawURLEncoding.EncodeToString(out)
}

// Open decrypts a value Seal returned for the same context.
func (b *Box) Open(context, sealed string) (string, error) {
	enc, ok := strings.CutPrefix(sealed, Prefix)
	if !ok {
		return "", errors.New("secretbox: the value is not sealed")
	}
	raw, err := base64.RawURLEncoding.DecodeString(enc)
	n := b.aead.NonceSize()
	if err != nil || len(raw) < n+b.aead.Overhead() {
		return "", ErrOpen
	}
	plain, err := b.aead.Open(nil, raw[:n], raw[n:], []byte(context))
	if err != nil {
		return "", ErrOpen
	}
	return string(plain), nil
}

// IsSealed reports whether v is a sealed value.
func IsSealed(v string) bool { return strings.HasPrefix(v, Prefix) }
