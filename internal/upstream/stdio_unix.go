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

// stdinWriter writes to a child's stdin without blocking (the pipe's end
// is non-blocking, as os.Pipe makes it). Only the goroutine holding the
// transport's wsem uses it: its buffer (again after a message past
// reuseMax) and the callback handed to the raw connection are made once per
// child, so a write allocates nothing (TestStdioWriterAllocs).
type stdinWriter struct {
	rc  syscall.RawConn // nil: nothing is written at once, the writer goroutine writes it all
	buf []byte          // the message being written, newline included
	n   int             // how much of buf the pipe took
	err error
	fn  func(fd uintptr) bool // w.write, bound once
}

func newStdinWriter(rc syscall.RawConn) *stdinWriter {
	w := &stdinWriter{rc: rc}
	w.fn = w.write
	return w
}

// frame fills the buffer with msg and its newline and returns it; it stays
// the writer's until release.
func (w *stdinWriter) frame(msg []byte) []byte {
	w.buf = append(append(w.buf[:0], msg...), '\n')
	return w.buf
}

// release lets go of the buffer, keeping it for the next message unless it
// grew past reuseMax.
func (w *stdinWriter) release() {
	if cap(w.buf) > reuseMax {
		w.buf = nil
	}
}

// writeNow writes as much of the framed message as the pipe takes without
// blocking, and reports how much.
func (w *stdinWriter) writeNow() (int, error) {
	if w.rc == nil {
		return 0, nil
	}
	w.n, w.err = 0, nil
	if err := w.rc.Write(w.fn); err != nil {
		return w.n, err
	}
	return w.n, w.err
}

func (w *stdinWriter) write(fd uintptr) bool {
	for w.n < len(w.buf) {
		m, err := syscall.Write(int(fd), w.buf[w.n:])
		if m > 0 {
			w.n += m
		}
		switch {
		case errors.Is(err, syscall.EINTR):
			continue
		case errors.Is(err, syscall.EAGAIN):
			return true // full: the rest is the writer goroutine's
		case err != nil:
			w.err = err
			return true
		case m <= 0:
			return true
		}
	}
	return true
}
