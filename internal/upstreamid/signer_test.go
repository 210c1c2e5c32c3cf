package upstreamid

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"math/big"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/mcpgw/mcpgw/internal/identity"
)

// publicKeys decodes a JWKS into its keys by kid.
func publicKeys(t *testing.T, set []byte) (map[string]*rsa.PublicKey, []string) {
	t.Helper()
	var jwks struct {
		Keys []struct{ Kty, Alg, Kid, N, E string }
	}
	if err := json.Unmarshal(set, &jwks); err != nil {
		t.Fatal(err)
	}
	out := map[string]*rsa.PublicKey{}
	var order []string
	for _, k := range jwks.Keys {
		n, _ := base64.RawURLEncoding.DecodeString(k.N)
		e, _ := base64.RawURLEncoding.DecodeString(k.E)
		if k.Kty != "RSA" || k.Alg != "RS256" {
			t.Fatalf("key %+v", k)
		}
		out[k.Kid] = &rsa.PublicKey{N: new(big.Int).SetBytes(n), E: int(new(big.Int).SetBytes(e).Int64())}
		order = append(order, k.Kid)
	}
	return out, order
}

// verify checks tok against set and returns its claims.
func verify(t *testing.T, set []byte, tok, aud string) jwt.MapClaims {
	t.Helper()
	keys, _ := publicKeys(t, set)
	c := jwt.MapClaims{}
	_, err := jwt.ParseWithClaims(tok, c, func(tk *jwt.Token) (any, error) {
		return keys[tk.Header["kid"].(string)], nil
	}, jwt.WithValidMethods([]string{"RS256"}), jwt.WithAudience(aud), jwt.WithIssuer("https://gw.example"))
	if err != nil {
		t.Fatalf("verify: %v", err)
	}
	return c
}

func testKeys(t *testing.T, n int) []Key {
	t.Helper()
	var keys []Key
	for range n {
		k, err := GenerateKey()
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, k)
	}
	return keys
}

func TestTokenClaims(t *testing.T) {
	s, err := New(Config{Keys: testKeys(t, 1), Issuer: "https://gw.example"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		caller  *identity.Caller
		sub     string
		act     map[string]any
		withAct bool
	}{
		{&identity.Caller{UserID: "alice", TeamID: "t1", OrgID: "o1", KeyHash: "ab"}, "alice", map[string]any{"team_id": "t1", "org_id": "o1", "key_hash": "ab"}, true},
		{&identity.Caller{KeyHash: "cd", EndUserID: "bob"}, "key:cd", map[string]any{"end_user_id": "bob", "key_hash": "cd"}, true},
		{&identity.Caller{}, "anonymous", nil, false},
	} {
		tok, err := s.Token(tc.caller, "https://up.example/mcp")
		if err != nil {
			t.Fatal(err)
		}
		c := verify(t, s.JWKS(), tok, "https://up.example/mcp")
		if c["sub"] != tc.sub {
			t.Errorf("sub = %v, want %s", c["sub"], tc.sub)
		}
		act, ok := c["act"].(map[string]any)
		if ok != tc.withAct || (ok && len(act) != len(tc.act)) {
			t.Errorf("act = %v, want %v", c["act"], tc.act)
		}
		for k, v := range tc.act {
			if act[k] != v {
				t.Errorf("act[%s] = %v, want %v", k, act[k], v)
			}
		}
		exp, _ := c.GetExpirationTime()
		iat, _ := c.GetIssuedAt()
		if exp.Sub(iat.Time) != TTL || c["jti"] == "" {
			t.Errorf("exp-iat = %v, jti %v", exp.Sub(iat.Time), c["jti"])
		}
	}
}

func TestTokenCacheReuseAndLRU(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	s, err := New(Config{Keys: testKeys(t, 1), Issuer: "https://gw.example", CacheSize: 3, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	alice, bob, carol := &identity.Caller{UserID: "alice"}, &identity.Caller{UserID: "bob"}, &identity.Caller{UserID: "carol"}
	first, _ := s.Token(alice, "a")
	if again, _ := s.Token(alice, "a"); again != first {
		t.Fatal("a fresh token was not reused")
	}
	if other, _ := s.Token(alice, "b"); other == first {
		t.Fatal("another audience shared the token")
	}
	if b, _ := s.Token(bob, "a"); b == first {
		t.Fatal("another caller shared the token")
	}
	now = now.Add(TTL - ReuseMargin - time.Second)
	if again, _ := s.Token(alice, "a"); again != first {
		t.Fatal("reused less than its reuse time")
	}
	now = now.Add(time.Second)
	renewed, _ := s.Token(alice, "a")
	if renewed == first {
		t.Fatal("reused past its reuse time")
	}
	// Size 3: carol evicts alice/b, the least recently used.
	_, _ = s.Token(bob, "a")
	_, _ = s.Token(carol, "a")
	if s.lru.Len() != 3 || len(s.cache) != 3 {
		t.Fatalf("cache holds %d/%d, bound 3", s.lru.Len(), len(s.cache))
	}
	if _, ok := s.cache[cacheKey{alice.Binding(), "b"}]; ok {
		t.Fatal("the least recently used entry survived")
	}
}

func TestRotationNewestSigns(t *testing.T) {
	keys := testKeys(t, 2)
	var pemText []byte
	for _, k := range keys {
		pemText = append(pemText, pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(k.priv)})...)
	}
	parsed, err := ParseKeys(pemText)
	if err != nil || len(parsed) != 2 || parsed[1].KID() != keys[1].KID() {
		t.Fatalf("ParseKeys: %v %d", err, len(parsed))
	}
	s, err := New(Config{Keys: parsed, Issuer: "https://gw.example"})
	if err != nil {
		t.Fatal(err)
	}
	pub, order := publicKeys(t, s.JWKS())
	if len(pub) != 2 || order[0] != keys[1].KID() {
		t.Fatalf("JWKS kids %v, want both with the signing key first", order)
	}
	tok, _ := s.Token(&identity.Caller{UserID: "alice"}, "x")
	parsedTok, _, _ := jwt.NewParser().ParseUnverified(tok, jwt.MapClaims{})
	if parsedTok.Header["kid"] != keys[1].KID() {
		t.Fatalf("signed with %v, want the last key", parsedTok.Header["kid"])
	}
	verify(t, s.JWKS(), tok, "x")
}

func TestParseKeysRefuses(t *testing.T) {
	small, _ := rsa.GenerateKey(randReader{}, 1024)
	for name, text := range map[string][]byte{
		"empty":   nil,
		"garbage": []byte("-----BEGIN RSA PRIVATE KEY-----\nAAAA\n-----END RSA PRIVATE KEY-----\n"),
		"small":   pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(small)}),
	} {
		if _, err := ParseKeys(text); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// randReader is crypto/rand for rsa.GenerateKey in tests.
type randReader struct{}

func (randReader) Read(p []byte) (int, error) { return rand.Read(p) }
