package testpeers

import (
	"debug/buildinfo"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// OIDC provider fixture: zitadel/oidc's example OpenID provider, a real OP with a login form,
// the authorization-code flow with PKCE, client credentials and a JWKS endpoint. Its signing
// key is made when it starts, so a restart is a key rotation.
const (
	// EnvOIDCProvider overrides the path of the provider binary.
	EnvOIDCProvider = "MCPGW_OIDC_PROVIDER"
	// OIDCProviderVersion is the pinned module version (scripts/test.sh installs it).
	OIDCProviderVersion = "v3.52.0"
	oidcProviderPkg     = "github.com/zitadel/oidc/v3/example/server"
)

// OIDCProviderBinary returns the provider binary: the file named by MCPGW_OIDC_PROVIDER, else
// <repo>/.tools/bin/server built from the pinned module version.
func OIDCProviderBinary(t testing.TB) string {
	t.Helper()
	root := RepoRoot(t)
	hint := "install it with: GOBIN=" + filepath.Join(root, ".tools", "bin") + " go install " + oidcProviderPkg + "@" +
		OIDCProviderVersion + " (scripts/test.sh does this), or set " + EnvOIDCProvider
	path := os.Getenv(EnvOIDCProvider)
	if path == "" {
		path = filepath.Join(root, ".tools", "bin", "server")
	}
	st, err := os.Stat(path)
	if err != nil || st.IsDir() || st.Mode()&0o111 == 0 {
		missing(t, "the OIDC provider "+path, hint)
	}
	if bi, err := buildinfo.ReadFile(path); err != nil || bi.Path != oidcProviderPkg || bi.Main.Version != OIDCProviderVersion {
		missing(t, "the OIDC provider "+oidcProviderPkg+"@"+OIDCProviderVersion+" at "+path, hint)
	}
	return path
}

// StartOIDCProvider starts the provider on a free port with the given redirect URIs registered
// for its clients ("web" with secret "secret", "native" without one) and returns it as a Peer
// whose URL is the issuer, http://localhost:PORT/ (the provider names itself so). Its users
// are "test-user@localhost" and "test-user2", both with password "verysecure".
func StartOIDCProvider(t testing.TB, redirectURIs ...string) *Peer {
	t.Helper()
	bin := OIDCProviderBinary(t)
	pr := &Peer{name: "zitadel oidc example provider",
		command: func(port int) ([]string, []string) {
			return []string{bin}, []string{"PORT=" + strconv.Itoa(port), "REDIRECT_URI=" + strings.Join(redirectURIs, ",")}
		},
		ready: func(p *proc, port int) bool {
			return strings.Contains(p.out.String(), "server listening") && dialable(port)
		}}
	pr.port = startPeer(t, pr.name, pr.command, pr.ready, pr.set)
	pr.URL = "http://localhost:" + strconv.Itoa(pr.port) + "/"
	return pr
}
