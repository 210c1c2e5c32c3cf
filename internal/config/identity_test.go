package config

import "testing"

// TestIdentityKeys reads forward_identity and the mcp_identity_* keys.
func TestIdentityKeys(t *testing.T) {
	src := `mcp_servers:
  a:
    url: https://a.example/mcp
    forward_identity: jwt
  b:
    url: https://b.example/mcp
    forward_identity: none
general_settings:
  mcp_identity_signing_key: os.environ/ID_PEM
  mcp_identity_issuer: https://gw.example
  mcp_identity_header: X-Who
`
	cfg, problems, err := Parse([]byte(src), Options{LookupEnv: envOf(map[string]string{"ID_PEM": "-----BEGIN pem"})})
	if err != nil {
		t.Fatal(err)
	}
	checkProblems(t, problems, nil)
	id := cfg.General.Identity
	if cfg.Servers[0].ForwardIdentity != ForwardIdentityJWT || cfg.Servers[1].ForwardIdentity != "" ||
		id.SigningKey.Reveal() != "-----BEGIN pem" || id.Issuer != "https://gw.example" || id.Header != "X-Who" {
		t.Fatalf("identity = %#v, servers %q %q", id, cfg.Servers[0].ForwardIdentity, cfg.Servers[1].ForwardIdentity)
	}
	_, problems, _ = Parse([]byte(`mcp_servers:
  a:
    url: https://a.example/mcp
    forward_identity: saml
general_settings:
  mcp_identity_issuer: gw.example
  mcp_identity_header: "X Who"
`), Options{})
	checkProblems(t, problems, []want{e(4, "forward_identity must be jwt or none"),
		e(6, "mcp_identity_issuer must be an http(s):// URL"), e(7, "mcp_identity_header must be a header name")})
}
