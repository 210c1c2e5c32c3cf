//go:build unix

package upstream

import (
	"errors"
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

// writeNow writes as much of buf to rc as it takes without blocking (rc is
// a pipe's, in non-blocking mode as os.Pipe makes it), and reports how much.
// A nil rc takes nothing: the writer writes it all.
func writeNow(rc syscall.RawConn, buf []byte) (int, error) {
	if rc == nil {
		return 0, nil
	}
	n := 0
	var werr error
	err := rc.Write(func(fd uintptr) bool {
		for n < len(buf) {
			m, err := syscall.Write(int(fd), buf[n:])
			if m > 0 {
				n += m
			}
			switch {
			case errors.Is(err, syscall.EINTR):
				continue
			case errors.Is(err, syscall.EAGAIN):
				return true // full: the rest is the writer's
			case err != nil:
				werr = err
				return true
			case m <= 0:
				return true
			}
		}
		return true
	})
	if err != nil {
		return n, err
	}
	return n, werr
}
