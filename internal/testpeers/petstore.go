package testpeers

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// OASExamplesVersion is the pinned version of @readme/oas-examples in test/peers: ReadMe's
// collection of published OpenAPI documents, whose 3.0/json/petstore.json is the Swagger
// Petstore.
const OASExamplesVersion = "8.2.2"

// PetstoreSpec returns the absolute path of the OpenAPI 3.0 Petstore document installed with
// @readme/oas-examples in <repo>/test/peers, after checking the pinned version.
func PetstoreSpec(t testing.TB) string {
	t.Helper()
	root := RepoRoot(t)
	hint := "install it with: scripts/node.sh npm ci --prefix " + filepath.Join(root, "test", "peers") +
		" --no-audit --no-fund (scripts/test.sh does this)"
	pkgDir := filepath.Join(root, "test", "peers", "node_modules", "@readme", "oas-examples")
	if err := checkVersion(pkgDir, OASExamplesVersion); err != nil {
		missing(t, "@readme/oas-examples@"+OASExamplesVersion, hint+" ("+err.Error()+")")
	}
	return filepath.Join(pkgDir, "3.0", "json", "petstore.json")
}

// checkVersion reports an error unless pkgDir holds version of its package.
func checkVersion(pkgDir, version string) error {
	raw, err := os.ReadFile(filepath.Join(pkgDir, "package.json"))
	if err != nil {
		return err
	}
	var pkg struct {
		Version string `json:"version"`
	}
	if err := json.Unmarshal(raw, &pkg); err != nil {
		return fmt.Errorf("package.json: %w", err)
	}
	if pkg.Version != version {
		return fmt.Errorf("installed version %s, pinned %s", pkg.Version, version)
	}
	return nil
}
