package testpeers

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// fakeOldNode puts a "node" that reports v20.20.2 (Debian's Node, too old for server-everything
// and the Inspector) first on PATH, with /usr/bin:/bin after it.
func fakeOldNode(t *testing.T) {
	t.Helper()
	dir := t.TempDir()
	script := "#!/bin/sh\nif [ \"$1\" = --version ]; then echo v20.20.2; exit 0; fi\nexit 1\n"
	if err := os.WriteFile(filepath.Join(dir, "node"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+":/usr/bin:/bin")
}

// pinnedInstalled skips (or fails under MCPGW_REQUIRE_PEERS=1) when test/node is not installed.
func pinnedInstalled(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(RepoRoot(t), pinnedNodeBin)
	if _, err := os.Stat(bin); err != nil {
		missing(t, "the pinned node "+PinnedNodeVersion, "install it with: scripts/node.sh")
	}
	return bin
}

// The machine's Node (first on PATH, too old) must not be what the Node peers run on.
func TestNodeEverythingIgnoresMachineNode(t *testing.T) {
	pinnedInstalled(t)
	fakeOldNode(t)
	t.Setenv(EnvNode, "")
	argv := NodeEverything(t)
	out, err := exec.Command(argv[0], "--version").Output()
	if err != nil {
		t.Fatalf("%s --version: %v", argv[0], err)
	}
	if got := strings.TrimSpace(string(out)); got != PinnedNodeVersion {
		t.Fatalf("NodeEverything runs on %s (%s), want the pinned %s", argv[0], got, PinnedNodeVersion)
	}
}

// MCPGW_NODE naming a Node older than MinNodeVersion is refused with a hint, not used.
func TestNodeRejectsOldNode(t *testing.T) {
	fakeOldNode(t)
	old, _ := exec.LookPath("node")
	t.Setenv(EnvNode, old)
	_, err := findNode(RepoRoot(t))
	if err == nil || !strings.Contains(err.Error(), "v20.20.2") || !strings.Contains(err.Error(), "scripts/node.sh") {
		t.Fatalf("findNode with an old %s = %v, want an error naming v20.20.2 and scripts/node.sh", EnvNode, err)
	}
}

func TestNodeVersionAtLeast(t *testing.T) {
	for _, tc := range []struct {
		v    string
		want bool
	}{
		{"v22.23.5", true}, {"v22.19.0", true}, {"v22.18.9", false}, {"v20.20.2", false},
		{"v18.19.0", false}, {"v24.0.0", true}, {"v23.0.0", true}, {"garbage", false}, {"", false},
	} {
		if got := versionAtLeast(tc.v, MinNodeVersion); got != tc.want {
			t.Errorf("versionAtLeast(%q, %q) = %v, want %v", tc.v, MinNodeVersion, got, tc.want)
		}
	}
}

// scripts/node.sh (sourced by scripts/test.sh) runs the given command on the pinned node and npm
// even when the machine's own node comes first on PATH.
func TestNodeScriptPinsNodeOverMachineNode(t *testing.T) {
	pinnedInstalled(t)
	fakeOldNode(t)
	root := RepoRoot(t)
	cmd := exec.Command("bash", filepath.Join(root, "scripts", "node.sh"), "sh", "-c",
		`node --version; npm --version; echo "$MCPGW_NODE"; command -v node`)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("scripts/node.sh: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != 4 || lines[0] != PinnedNodeVersion || lines[2] != filepath.Join(root, pinnedNodeBin) ||
		!strings.HasPrefix(lines[3], filepath.Join(root, "test", "node")) {
		t.Fatalf("scripts/node.sh environment:\n%s\nwant node %s from test/node and MCPGW_NODE set", out, PinnedNodeVersion)
	}
	t.Logf("pinned: node %s, npm %s", lines[0], lines[1])
}
