package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/mcpgw/mcpgw/internal/testpeers"
)

// nodePackageMeta is the part of an installed npm package's package.json the tests read.
type nodePackageMeta struct {
	Version string            `json:"version"`
	Bin     map[string]string `json:"bin"`
}

// peerMissing fails the test under MCPGW_REQUIRE_PEERS=1 and skips it otherwise, like
// internal/testpeers does for the upstream fixtures.
func peerMissing(t *testing.T, what, hint string) {
	t.Helper()
	if os.Getenv(testpeers.EnvRequirePeers) == "1" {
		t.Fatalf("%s is not installed (%s=1): %s", what, testpeers.EnvRequirePeers, hint)
	}
	t.Skipf("%s is not installed; %s", what, hint)
}

// nodeBinary returns the node executable (the pinned one, see testpeers.Node) and the
// test/clients folder the pinned npm clients are installed in.
func nodeBinary(t *testing.T) (node, dir string) {
	t.Helper()
	return testpeers.Node(t), filepath.Join(testpeers.RepoRoot(t), "test", "clients")
}

// nodePackage checks that pkg is installed under dir at exactly version and returns its folder
// and package.json.
func nodePackage(t *testing.T, dir, pkg, version string) (pkgDir string, meta nodePackageMeta) {
	t.Helper()
	pkgDir = filepath.Join(dir, "node_modules", filepath.FromSlash(pkg))
	raw, err := os.ReadFile(filepath.Join(pkgDir, "package.json"))
	if err != nil {
		peerMissing(t, pkg+"@"+version, npmInstallHint(dir))
	}
	if err := json.Unmarshal(raw, &meta); err != nil || meta.Version != version {
		peerMissing(t, pkg+"@"+version+" (found "+meta.Version+")", npmInstallHint(dir))
	}
	return pkgDir, meta
}

func npmInstallHint(dir string) string {
	return "install it with: npm ci --prefix " + dir + " --no-audit --no-fund (scripts/test.sh does this)"
}
