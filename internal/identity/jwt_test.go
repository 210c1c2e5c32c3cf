package identity

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
)

// jwksServer serves a JWKS over real HTTP and signs tokens with its current key; rotate
// replaces the key (and its kid).
type jwksServer struct {
	mu      sync.Mutex
	key     *rsa.PrivateKey
	kid     string
	fetches int
	srv     *httptest.Server
}

func newJWKSServer(t *testing.T) *jwksServer {
	t.Helper()
	s := &jwksServer{}
	s.rotate(t, "k1")
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.fetches++
		set := jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &s.key.PublicKey, KeyID: s.kid, Algorithm: "RS256", Use: "sig"}}}
		_ = json.NewEncoder(w).Encode(set)
	}))
	t.Cleanup(s.srv.Close)
	return s
}

func (s *jwksServer) rotate(t *testing.T, kid string) {
	t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	s.mu.Lock()
	s.key, s.kid = k, kid
	s.mu.Unlock()
}

func (s *jwksServer) sign(t *testing.T, claims map[string]any) string {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	return signWith(t, s.key, s.kid, claims)
}

func signWith(t *testing.T, key *rsa.PrivateKey, kid string, claims map[string]any) string {
	t.Helper()
	sig, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: key},
		(&jose.SignerOptions{}).WithHeader("kid", kid).WithType("JWT"))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := json.Marshal(claims)
	obj, err := sig.Sign(body)
	if err != nil {
		t.Fatal(err)
	}
	out, err := obj.CompactSerialize()
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func baseClaims(over map[string]any) map[string]any {
	c := map[string]any{"iss": "https://idp.example", "sub": "alice", "aud": "mcpgw",
		"exp": time.Now().Add(time.Hour).Unix(), "iat": time.Now().Unix(), "groups": map[string]any{"team": "eng"}}
	for k, v := range over {
		if v == nil {
			delete(c, k)
			continue
		}
		c[k] = v
	}
	return c
}

func jwtAuthenticator(t *testing.T, s *jwksServer, mod func(*JWTConfig)) *Authenticator {
	t.Helper()
	cfg := &JWTConfig{KeyURLs: []string{s.srv.URL}, Issuers: []string{"https://idp.example"}, Audiences: []string{"mcpgw"},
		TeamIDField: "groups.team", OrgIDField: "org", AdminScope: "litellm_proxy_admin",
		Resources: func(*http.Request) []string { return []string{"https://gw.example/mcp"} }}
	if mod != nil {
		mod(cfg)
	}
	a, err := New(Config{MasterKey: strongKey, JWT: cfg})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func authBearer(a *Authenticator, tok string) (*Caller, error) {
	return a.Authenticate(context.Background(), request(map[string]string{"Authorization": "Bearer " + tok}), "tools/list")
}

func wantRefused(t *testing.T, err error, status int, msg string) {
	t.Helper()
	var ae *Error
	if !errors.As(err, &ae) || ae.Status != status || !strings.Contains(ae.Message, msg) {
		t.Fatalf("err = %v, want %d containing %q", err, status, msg)
	}
	if status == 401 && ae.Challenge != `Bearer error="invalid_token"` {
		t.Fatalf("challenge = %q", ae.Challenge)
	}
}

func TestJWTCallerClaims(t *testing.T) {
	s := newJWKSServer(t)
	a := jwtAuthenticator(t, s, nil)
	c, err := authBearer(a, s.sign(t, baseClaims(map[string]any{"org": "acme"})))
	if err != nil {
		t.Fatal(err)
	}
	if c.UserID != "alice" || c.TeamID != "eng" || c.OrgID != "acme" || c.IsMaster || c.KeyHash != "" || c.Role != RoleInternalUser {
		t.Fatalf("caller = %+v", c)
	}
	// The resource URL is an audience too (RFC 8707), an aud list naming it is accepted.
	if _, err := authBearer(a, s.sign(t, baseClaims(map[string]any{"aud": []string{"x", "https://gw.example/mcp/"}}))); err != nil {
		t.Fatalf("resource audience refused: %v", err)
	}
	c, err = authBearer(a, s.sign(t, baseClaims(map[string]any{"scope": "openid litellm_proxy_admin"})))
	if err != nil || !c.IsMaster || c.Role != RoleProxyAdmin {
		t.Fatalf("admin scope: %+v %v", c, err)
	}
	if _, err := authBearer(a, strongKey); err != nil {
		t.Fatalf("the master key stops working beside JWT auth: %v", err)
	}
}

func TestJWTRefusals(t *testing.T) {
	s := newJWKSServer(t)
	a := jwtAuthenticator(t, s, nil)
	good := s.sign(t, baseClaims(nil))
	parts := strings.Split(good, ".")
	none := base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"none","typ":"JWT"}`)) + "." + parts[1] + "."
	stranger, _ := rsa.GenerateKey(rand.Reader, 2048)
	for name, c := range map[string]struct {
		tok, msg string
	}{
		"expired":        {s.sign(t, baseClaims(map[string]any{"exp": time.Now().Add(-time.Minute).Unix()})), "expired"},
		"foreign aud":    {s.sign(t, baseClaims(map[string]any{"aud": "someone-else"})), "audience"},
		"no aud":         {s.sign(t, baseClaims(map[string]any{"aud": nil})), "audience"},
		"foreign issuer": {s.sign(t, baseClaims(map[string]any{"iss": "https://evil.example"})), "issuer"},
		"unsigned":       {none, "invalid token"},
		"unknown key":    {signWith(t, stranger, "k1", baseClaims(nil)), "signature"},
		"tampered":       {parts[0] + "." + base64.RawURLEncoding.EncodeToString([]byte(`{"sub":"root","aud":"mcpgw","iss":"https://idp.example","exp":9999999999}`)) + "." + parts[2], "signature"},
	} {
		t.Run(name, func(t *testing.T) {
			got, err := authBearer(a, c.tok)
			if got != nil {
				t.Fatalf("admitted: %+v", got)
			}
			wantRefused(t, err, 401, c.msg)
			if strings.Contains(err.Error(), c.tok) || strings.Contains(err.Error(), parts[1]) {
				t.Fatal("the error quotes the token")
			}
		})
	}
}

// fakeClock is a clock tests move by hand.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

func (s *jwksServer) fetchCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.fetches
}

func TestJWTKeyRotation(t *testing.T) {
	s := newJWKSServer(t)
	clock := &fakeClock{now: time.Now()}
	a := jwtAuthenticator(t, s, func(c *JWTConfig) { c.Now = clock.Now })
	old := s.sign(t, baseClaims(nil))
	if _, err := authBearer(a, old); err != nil {
		t.Fatal(err)
	}
	s.rotate(t, "k2")
	clock.advance(DefaultJWKSRefetchGap)
	if _, err := authBearer(a, s.sign(t, baseClaims(nil))); err != nil {
		t.Fatalf("a token signed by the rotated key: %v", err)
	}
	c, err := authBearer(a, old)
	if c != nil {
		t.Fatalf("a token signed by the retired key is still admitted")
	}
	wantRefused(t, err, 401, "signature")
}

func TestJWKSRefetchGapThrottlesUnknownKids(t *testing.T) {
	s := newJWKSServer(t)
	clock := &fakeClock{now: time.Now()}
	a := jwtAuthenticator(t, s, func(c *JWTConfig) { c.Now = clock.Now })
	if _, err := authBearer(a, s.sign(t, baseClaims(nil))); err != nil {
		t.Fatal(err)
	}
	stranger, _ := rsa.GenerateKey(rand.Reader, 2048)
	forge := func(i int) string {
		return signWith(t, stranger, fmt.Sprintf("random-%d", i), baseClaims(map[string]any{"exp": clock.Now().Add(time.Hour).Unix()}))
	}
	for i := range 20 {
		_, err := authBearer(a, forge(i))
		wantRefused(t, err, 401, "signature")
	}
	if n := s.fetchCount(); n != 1 {
		t.Fatalf("JWKS fetched %d times for one real and 20 forged kids within the gap, want 1", n)
	}
	// A rotation within the gap is not seen yet; once the gap has passed, the first token of
	// the new key fetches the set and is accepted.
	s.rotate(t, "k2")
	clock.advance(DefaultJWKSRefetchGap - time.Second)
	fresh := s.sign(t, baseClaims(map[string]any{"exp": clock.Now().Add(time.Hour).Unix()}))
	_, err := authBearer(a, fresh)
	wantRefused(t, err, 401, "signature")
	if n := s.fetchCount(); n != 1 {
		t.Fatalf("fetched %d times within the gap, want 1", n)
	}
	clock.advance(time.Second)
	if _, err := authBearer(a, fresh); err != nil {
		t.Fatalf("the rotated key after the gap: %v", err)
	}
	for i := range 20 {
		_, err := authBearer(a, forge(100+i))
		wantRefused(t, err, 401, "signature")
	}
	if n := s.fetchCount(); n != 2 {
		t.Fatalf("fetched %d times, want 2 (one per gap)", n)
	}
}

func TestJWTRolesAndLevels(t *testing.T) {
	s := newJWKSServer(t)
	var asked []string
	a := jwtAuthenticator(t, s, func(c *JWTConfig) {
		c.UserRolesField, c.UserAllowedRoles = "roles", []string{"mcp-user"}
		c.TeamIDField, c.TeamIDsField, c.TeamIDDefault = "", "teams", "fallback"
		c.Levels = func(_ context.Context, user, team, org, end string) (StoredKey, error) {
			asked = append(asked, user+"/"+team)
			if team == "broken" {
				return StoredKey{}, errors.New("disk on fire")
			}
			if team == "frozen" {
				return StoredKey{BlockedBy: "team"}, nil
			}
			return StoredKey{TeamAlias: "Eng", Role: RoleInternalUserViewer,
				Grants: []Grant{{Level: LevelTeam, Servers: []string{"fx", ""}}}}, nil
		}
	})
	_, err := authBearer(a, s.sign(t, baseClaims(map[string]any{"roles": []string{"other"}})))
	wantRefused(t, err, 403, "roles")
	c, err := authBearer(a, s.sign(t, baseClaims(map[string]any{"roles": "mcp-user", "teams": []string{"eng", "ops"}})))
	if err != nil || c.TeamID != "eng" || c.TeamAlias != "Eng" || c.Role != RoleInternalUserViewer ||
		len(c.Grants) != 1 || len(c.Grants[0].Servers) != 1 {
		t.Fatalf("caller = %+v, %v", c, err)
	}
	c, err = authBearer(a, s.sign(t, baseClaims(map[string]any{"roles": []string{"mcp-user"}})))
	if err != nil || c.TeamID != "fallback" {
		t.Fatalf("team_id_default: %+v %v", c, err)
	}
	_, err = authBearer(a, s.sign(t, baseClaims(map[string]any{"roles": []string{"mcp-user"}, "teams": "frozen"})))
	wantRefused(t, err, 403, "blocked")
	_, err = authBearer(a, s.sign(t, baseClaims(map[string]any{"roles": []string{"mcp-user"}, "teams": "broken"})))
	wantRefused(t, err, 503, "unavailable")
	if len(asked) != 4 {
		t.Fatalf("levels asked %v", asked)
	}
}
