package e2e

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// jwksVerifier checks the identity header of an upstream request against
// the gateway's /.well-known/jwks.json, fetched over HTTP.
type jwksVerifier struct {
	mu       sync.Mutex
	gw       string // the gateway's URL, set once it runs
	aud, iss string
	subs     []string // sub of every verified request
	kids     map[string]bool
	newest   *rsa.PublicKey // the key that must sign
	bad      []string
}

// keys fetches the gateway's key set.
func (v *jwksVerifier) keys(gw string) (map[string]*rsa.PublicKey, error) {
	resp, err := http.Get(gw + "/.well-known/jwks.json")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var set struct {
		Keys []struct{ Kid, N, E string }
	}
	if err := json.NewDecoder(resp.Body).Decode(&set); err != nil || resp.StatusCode != 200 {
		return nil, fmt.Errorf("jwks: %d %v", resp.StatusCode, err)
	}
	out := map[string]*rsa.PublicKey{}
	for _, k := range set.Keys {
		n, _ := base64.RawURLEncoding.DecodeString(k.N)
		e, _ := base64.RawURLEncoding.DecodeString(k.E)
		out[k.Kid] = &rsa.PublicKey{N: new(big.Int).SetBytes(n), E: int(new(big.Int).SetBytes(e).Int64())}
	}
	return out, nil
}

// check verifies r's X-MCP-Gateway-Identity; false refuses the request.
func (v *jwksVerifier) check(r *http.Request) bool {
	v.mu.Lock()
	gw := v.gw
	v.mu.Unlock()
	fail := func(why string) bool {
		v.mu.Lock()
		defer v.mu.Unlock()
		v.bad = append(v.bad, why)
		return false
	}
	raw := r.Header.Get("X-Mcp-Gateway-Identity")
	if raw == "" {
		return fail("no identity header")
	}
	keys, err := v.keys(gw)
	if err != nil {
		return fail(err.Error())
	}
	claims := jwt.MapClaims{}
	tok, err := jwt.ParseWithClaims(raw, claims, func(t *jwt.Token) (any, error) {
		kid, _ := t.Header["kid"].(string)
		if k := keys[kid]; k != nil {
			if k.N.Cmp(v.newest.N) != 0 {
				return nil, fmt.Errorf("signed by an older key")
			}
			return k, nil
		}
		return nil, fmt.Errorf("unknown kid")
	}, jwt.WithValidMethods([]string{"RS256"}), jwt.WithAudience(v.aud), jwt.WithIssuer(v.iss), jwt.WithExpirationRequired(), jwt.WithIssuedAt())
	if err != nil {
		return fail("verify: " + err.Error())
	}
	exp, _ := claims.GetExpirationTime()
	iat, _ := claims.GetIssuedAt()
	if exp.Sub(iat.Time) != 300*time.Second || claims["jti"] == "" {
		return fail("lifetime or jti")
	}
	act, _ := claims["act"].(map[string]any)
	sub, _ := claims["sub"].(string)
	v.mu.Lock()
	defer v.mu.Unlock()
	v.subs = append(v.subs, sub+"/"+fmt.Sprint(act["team_id"]))
	v.kids[tok.Header["kid"].(string)] = true
	return true
}

// writeKeys writes n fresh RSA keys to one PEM file and returns its path and
// the last key's public half.
func writeKeys(t *testing.T, n int) (string, *rsa.PublicKey) {
	t.Helper()
	var text []byte
	var last *rsa.PrivateKey
	for range n {
		k, err := rsa.GenerateKey(rand.Reader, 2048)
		if err != nil {
			t.Fatal(err)
		}
		text = append(text, pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(k)})...)
		last = k
	}
	path := filepath.Join(t.TempDir(), "identity.pem")
	if err := os.WriteFile(path, text, 0o600); err != nil {
		t.Fatal(err)
	}
	return path, &last.PublicKey
}

// TestSignedIdentityVerifiedByUpstream: a server with forward_identity: jwt
// receives, on every request (tools/list fan-out and tools/call, callers of
// both eras), an RS256 token it verifies against the gateway's JWKS over
// HTTP, naming the caller (sub, team in act) and signed by the newest
// configured key; a server without the option never receives it.
func TestSignedIdentityVerifiedByUpstream(t *testing.T) {
	ver := &jwksVerifier{iss: "https://gateway.example", kids: map[string]bool{}}
	ident := newHeaderPeer(t, "ident", ver.check)
	plain := newHeaderPeer(t, "plain", nil)
	ver.aud = ident.srv.URL + "/mcp"
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			APIKey string `json:"api_key"`
		}
		_ = json.NewDecoder(r.Body).Decode(&req)
		id := map[string]any{"sk-identity-alice-0001": map[string]any{"user_id": "alice", "team_id": "team-a"},
			"sk-identity-bob-000002": map[string]any{"user_id": "bob", "team_id": "team-b"}}[req.APIKey]
		if id == nil {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		_ = json.NewEncoder(w).Encode(id)
	}))
	t.Cleanup(hook.Close)
	keyPath, newest := writeKeys(t, 2)
	ver.newest = newest
	gw := startGateway(t, fmt.Sprintf(`general_settings:
  master_key: %s
  custom_auth: %s
  mcp_identity_signing_key: %s
  mcp_identity_issuer: https://gateway.example
mcp_servers:
  ident:
    url: %s/mcp
    forward_identity: jwt
    protocol_version: "2025-11-25"
  plain:
    url: %s/mcp
    protocol_version: "2026-07-28"
`, testKey, hook.URL, keyPath, ident.srv.URL, plain.srv.URL), nil)
	ver.mu.Lock()
	ver.gw = gw.url
	ver.mu.Unlock()
	for _, version := range []string{"2026-07-28", "2025-11-25"} {
		for _, who := range []struct{ key, want string }{{"sk-identity-alice-0001", "alice/team-a"}, {"sk-identity-bob-000002", "bob/team-b"}} {
			t.Run(version+"/"+who.want, func(t *testing.T) {
				ident.drain()
				plain.drain()
				ver.mu.Lock()
				ver.subs = nil
				ver.mu.Unlock()
				cs := sdkSessionWith(t, gw.url+"/mcp", version, map[string]string{"Authorization": "Bearer " + who.key})
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				tools, err := cs.ListTools(ctx, nil)
				if err != nil || !toolNames(tools.Tools)["ident-whoami"] || !toolNames(tools.Tools)["plain-whoami"] {
					t.Fatalf("tools/list: %v %v (refused: %v)", tools, err, ver.bad)
				}
				res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "ident-whoami", Arguments: map[string]any{}})
				if err != nil || textOf(res) != "ident" {
					t.Fatalf("call: %v %v (refused: %v)", res, err, ver.bad)
				}
				if _, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "plain-whoami", Arguments: map[string]any{}}); err != nil {
					t.Fatal(err)
				}
				ver.mu.Lock()
				subs, bad := ver.subs, ver.bad
				ver.mu.Unlock()
				if len(bad) > 0 || len(subs) == 0 {
					t.Fatalf("verified %v, refused %v", subs, bad)
				}
				for _, s := range subs {
					if s != who.want {
						t.Fatalf("upstream saw %s, want %s", s, who.want)
					}
				}
				if n := len(ident.drain()); n != len(subs) {
					t.Fatalf("%d requests, %d verified", n, len(subs))
				}
				seen := plain.drain()
				if len(seen) == 0 {
					t.Fatal("plain saw nothing")
				}
				for _, h := range seen {
					if h.Get("X-Mcp-Gateway-Identity") != "" {
						t.Fatal("a server without forward_identity received the identity")
					}
				}
			})
		}
	}
	ver.mu.Lock()
	defer ver.mu.Unlock()
	if len(ver.kids) != 1 {
		t.Fatalf("tokens signed by %d keys, want the newest alone", len(ver.kids))
	}
	keys, err := ver.keys(gw.url)
	if err != nil || len(keys) != 2 {
		t.Fatalf("JWKS holds %d keys (%v), want both configured", len(keys), err)
	}
}
