//go:build unix

package upstream

import (
	"os/exec"
	"syscall"
)

// setProcessGroup puts the child in its own process group, so that stopping
// it also stops what it spawned (npx and shell wrappers fork the real server).
func setProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

func (t *stdioTransport) signal(sig syscall.Signal) {
	if p := t.cmd.Process; p != nil {
		_ = syscall.Kill(-p.Pid, sig)
	}
}

func (t *stdioTransport) terminate() { t.signal(syscall.SIGTERM) }

func (t *stdioTransport) kill() { t.signal(syscall.SIGKILL) }
