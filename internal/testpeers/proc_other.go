//go:build !unix

package testpeers

import "os/exec"

// setGroup does nothing where process groups are not available.
func setGroup(*exec.Cmd) {}

// killGroup kills the command's process.
func killGroup(cmd *exec.Cmd) {
	if cmd.Process != nil {
		_ = cmd.Process.Kill()
	}
}
