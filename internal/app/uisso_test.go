package app

import (
	"strings"
	"testing"
)

// TestReadUISSO: GENERIC_CLIENT_ID turns the UI's SSO on and needs GENERIC_ISSUER; URLs must be
// http(s); errors name the variable and never a value; the client secret is a gateway secret.
func TestReadUISSO(t *testing.T) {
	env := func(kv ...string) func(string) (string, bool) {
		m := map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
	}
	if c, err := readUISSO(env()); c != nil || err != nil {
		t.Fatalf("unset: %v %v", c, err)
	}
	_, err := readUISSO(env("GENERIC_CLIENT_ID", "ui", "GENERIC_CLIENT_SECRET", "hush-9"))
	if err == nil || !strings.Contains(err.Error(), "GENERIC_ISSUER") || strings.Contains(err.Error(), "hush-9") {
		t.Fatalf("without an issuer: %v", err)
	}
	_, err = readUISSO(env("GENERIC_CLIENT_ID", "ui", "GENERIC_ISSUER", "https://op.example", "GENERIC_TOKEN_ENDPOINT", "ftp://x/tok"))
	if err == nil || !strings.Contains(err.Error(), "GENERIC_TOKEN_ENDPOINT") || strings.Contains(err.Error(), "ftp://") {
		t.Fatalf("a bad token endpoint: %v", err)
	}
	c, err := readUISSO(env("GENERIC_CLIENT_ID", "ui", "GENERIC_ISSUER", "https://op.example", "GENERIC_SCOPE", "openid,email groups"))
	if err != nil || c.ClientID != "ui" || c.Issuer != "https://op.example" || strings.Join(c.Scopes, " ") != "openid email groups" {
		t.Fatalf("%+v %v", c, err)
	}
	if !deniedToAPI("generic_client_secret") {
		t.Error("GENERIC_CLIENT_SECRET is readable by server configs posted through the API")
	}
}
