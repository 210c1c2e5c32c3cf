// Package testpeers finds and starts the real third-party MCP peers that tests run against: the
// go-sdk conformance fixture, @modelcontextprotocol/server-everything and the other reference
// servers (server-filesystem, -memory, -sequential-thinking). It is a test helper:
// import it only from _test.go files.
//
// scripts/test.sh installs both peers and sets MCPGW_REQUIRE_PEERS=1, so a missing peer fails
// the run there; elsewhere a test that needs a missing peer is skipped with the install command.
//
// Every Node-based peer and client runs on one node, chosen by Node: $MCPGW_NODE (set by
// scripts/node.sh, which scripts/test.sh sources), else the pinned node scripts/node.sh installs
// in test/node, else node on PATH; it must be at least MinNodeVersion, whatever the machine has.
package testpeers

import (
	"debug/buildinfo"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// Pinned peer versions; scripts/test.sh and test/peers/package.json install these.
const (
	GoSDKVersion          = "v1.8.0"
	NodeEverythingVersion = "2026.8.31"
	// NodeReferenceVersion is the pinned version of the other reference servers in test/peers:
	// @modelcontextprotocol/server-filesystem, -memory and -sequential-thinking.
	NodeReferenceVersion = "2026.8.31"
)

// Environment variables the helpers read.
const (
	// EnvRequirePeers set to "1" turns a missing peer into a test failure instead of a skip.
	EnvRequirePeers = "MCPGW_REQUIRE_PEERS"
	// EnvGoFixture overrides the path of the go-sdk everything-server binary.
	EnvGoFixture = "MCPGW_GO_FIXTURE"
)

const goFixturePkg = "github.com/modelcontextprotocol/go-sdk/conformance/everything-server"

// RepoRoot returns the directory holding go.mod, found by walking up from the working directory.
func RepoRoot(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatalf("testpeers: %v", err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatalf("testpeers: no go.mod above the working directory")
		}
		dir = parent
	}
}

// missing fails (under MCPGW_REQUIRE_PEERS=1) or skips the test because a peer is not installed.
func missing(t testing.TB, what, hint string) {
	t.Helper()
	if os.Getenv(EnvRequirePeers) == "1" {
		t.Fatalf("testpeers: %s is not installed (%s=1): %s", what, EnvRequirePeers, hint)
	}
	t.Skipf("testpeers: %s is not installed; %s", what, hint)
}

// GoFixtureInstallCommand returns the command that installs the go-sdk fixture under root.
func GoFixtureInstallCommand(root string) string {
	return fmt.Sprintf("GOBIN=%s go install %s@%s", filepath.Join(root, ".tools", "bin"), goFixturePkg, GoSDKVersion)
}

// GoFixture returns the path of the go-sdk conformance fixture binary everything-server: the
// file named by MCPGW_GO_FIXTURE, else <repo>/.tools/bin/everything-server.
func GoFixture(t testing.TB) string {
	t.Helper()
	root := RepoRoot(t)
	hint := "install it with: " + GoFixtureInstallCommand(root) + " (scripts/test.sh does this), or set " + EnvGoFixture
	path := os.Getenv(EnvGoFixture)
	pinned := path == ""
	if pinned {
		path = filepath.Join(root, ".tools", "bin", "everything-server")
	}
	if st, err := os.Stat(path); err != nil || st.IsDir() || st.Mode()&0o111 == 0 {
		missing(t, "the go-sdk fixture "+path, hint)
	}
	if pinned {
		// The binary records the module version it was built from.
		if bi, err := buildinfo.ReadFile(path); err != nil || bi.Main.Version != GoSDKVersion {
			got := "unknown"
			if err == nil {
				got = bi.Main.Version
			}
			missing(t, "the go-sdk fixture "+GoSDKVersion+" (found "+got+" at "+path+")", hint)
		}
	}
	return path
}

// NodeEverything returns the argv that runs @modelcontextprotocol/server-everything from
// <repo>/test/peers: the node binary and the package's entry file. Append the transport
// ("stdio", "sse" or "streamableHttp") to choose one; stdio is its default.
func NodeEverything(t testing.TB) []string {
	t.Helper()
	return NodeServer(t, "server-everything")
}

// NodeServer returns the argv (pinned node, entry file) that runs the reference server
// @modelcontextprotocol/<name> installed in <repo>/test/peers at its pinned version: one of
// server-everything, server-filesystem, server-memory, server-sequential-thinking. Append the
// server's own arguments.
func NodeServer(t testing.TB, name string) []string {
	t.Helper()
	version := NodeReferenceVersion
	if name == "server-everything" {
		version = NodeEverythingVersion
	}
	root := RepoRoot(t)
	node := Node(t)
	hint := "install it with: scripts/node.sh npm ci --prefix " + filepath.Join(root, "test", "peers") +
		" --no-audit --no-fund (scripts/test.sh does this)"
	pkgDir := filepath.Join(root, "test", "peers", "node_modules", "@modelcontextprotocol", name)
	entry, err := nodeEntry(pkgDir, version)
	if err != nil {
		missing(t, "@modelcontextprotocol/"+name+"@"+version, hint+" ("+err.Error()+")")
	}
	return []string{node, entry}
}

// nodeEntry reads the package's package.json and returns the absolute path of its bin entry,
// after checking the installed version is the pinned one.
func nodeEntry(pkgDir, version string) (string, error) {
	raw, err := os.ReadFile(filepath.Join(pkgDir, "package.json"))
	if err != nil {
		return "", err
	}
	var pkg struct {
		Version string          `json:"version"`
		Bin     json.RawMessage `json:"bin"`
	}
	if err := json.Unmarshal(raw, &pkg); err != nil {
		return "", fmt.Errorf("package.json: %w", err)
	}
	if pkg.Version != version {
		return "", fmt.Errorf("installed version %s, want %s", strconv.Quote(pkg.Version), version)
	}
	var rel string
	if err := json.Unmarshal(pkg.Bin, &rel); err != nil {
		var bins map[string]string
		if err := json.Unmarshal(pkg.Bin, &bins); err != nil || len(bins) == 0 {
			return "", errors.New("package.json has no bin entry")
		}
		rel = bins["mcp-"+filepath.Base(pkgDir)]
		if rel == "" {
			for _, v := range bins {
				rel = v
				break
			}
		}
	}
	entry := filepath.Join(pkgDir, filepath.FromSlash(rel))
	if _, err := os.Stat(entry); err != nil {
		return "", err
	}
	return entry, nil
}
