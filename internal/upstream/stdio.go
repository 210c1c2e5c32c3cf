package upstream

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/mcpgw/mcpgw/internal/jsonrpc"
)

const (
	stderrLineMax = 1024 // longest stderr line logged, in bytes
	stopGrace     = 2 * time.Second
	// drainGrace is how long the child's output is read after it exited. A
	// descendant outside its process group may keep the pipes open; it must
	// not keep the transport alive.
	drainGrace = time.Second
	// reuseMax bounds the buffer the stdin writer keeps between messages
	// (stdinWriter.release): one that grew past it is dropped once its
	// message is written. The reader keeps only its bufio buffer, as
	// large: a line longer than that is gathered in a buffer of its own,
	// dropped once decoded (readLoop).
	reuseMax = 64 << 10
)

// stdioTransport runs the upstream as a child process speaking
// newline-delimited JSON-RPC on stdin/stdout.
//
// Whoever holds wsem writes to stdin. A caller writes its message itself
// with one non-blocking write, which takes the whole message whenever the
// pipe has room (no handoff to another goroutine); what the pipe does not
// take goes to the writer goroutine, which finishes the message (framing
// survives a caller giving up mid-write) and then lets go of stdin, while
// the caller waits only as long as its context allows. Nothing holds a lock
// across a blocking write: close closes stdin, which unblocks the writer.
type stdioTransport struct {
	*mux
	d      *stdioDialer
	cmd    *exec.Cmd
	stdin  *os.File
	in     *stdinWriter  // writes to stdin at once; used by wsem's holder
	wsem   chan struct{} // capacity 1: held while a message is being written
	writes chan stdioWrite
	quit   chan struct{} // closed by stopWriting: no more writes
	qonce  sync.Once
	// closing marks a stop the gateway asked for: the exit that follows is
	// not a crash and does not count towards the restart backoff.
	closing atomic.Bool
	// exited is closed once the child has exited and every goroutine of the
	// transport has ended.
	exited chan struct{}
}

// stdioWrite is the rest of a message handed to the writer; done gets the
// result.
type stdioWrite struct {
	buf  []byte
	done chan error // buffered: the writer never waits for the caller
}

func startStdio(d *stdioDialer, notify string) (*stdioTransport, error) {
	cmd := exec.Command(d.command, d.args...)
	cmd.Env = childEnv(os.Getenv, d.environ)
	cmd.Dir = d.dir
	setProcessGroup(cmd)
	// Our own pipes (not cmd's): Wait does not close them under the readers,
	// and the parent's ends are pollable, so closing one unblocks its user.
	var ends [6]*os.File // stdin r/w, stdout r/w, stderr r/w
	for i := 0; i < len(ends); i += 2 {
		r, w, err := os.Pipe()
		if err != nil {
			closeFiles(ends[:i]...)
			return nil, connErr("cannot start upstream process", err)
		}
		ends[i], ends[i+1] = r, w
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = ends[0], ends[3], ends[5]
	err := cmd.Start()
	closeFiles(ends[0], ends[3], ends[5]) // the child has its own copies
	if err != nil {
		closeFiles(ends[1], ends[2], ends[4])
		return nil, connErr("cannot start upstream process", err)
	}
	return runStdio(d, cmd, ends[1], ends[2], ends[4], notify), nil
}

// childEnv returns a child's environment: HOME, LOGNAME, PATH, SHELL, TERM
// and USER from the gateway's (all it inherits, as in the official MCP SDKs:
// the gateway's own secrets, database URLs and model API keys must not reach
// every server it runs), then the configured KEY=VALUE entries, which win.
func childEnv(getenv func(string) string, configured []string) []string {
	inherited := [...]string{"HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER"}
	env := make([]string, 0, len(inherited)+len(configured))
	for _, k := range inherited {
		if v := getenv(k); v != "" {
			env = append(env, k+"="+v)
		}
	}
	// exec.Cmd keeps the last value of a repeated key.
	return append(env, configured...)
}

func closeFiles(fs ...*os.File) {
	for _, f := range fs {
		_ = f.Close()
	}
}

// runStdio starts the goroutines of a started child: stdout reader, stderr
// logger, stdin writer, and the one that waits for the exit and ends the
// others. notify names the session for its notifications (see OwnerKey).
func runStdio(d *stdioDialer, cmd *exec.Cmd, stdin, stdout, stderr *os.File, notify string) *stdioTransport {
	t := &stdioTransport{d: d, cmd: cmd, stdin: stdin, wsem: make(chan struct{}, 1), writes: make(chan stdioWrite),
		quit: make(chan struct{}), exited: make(chan struct{})}
	var rc syscall.RawConn
	if c, err := stdin.SyscallConn(); err == nil {
		rc = c
	}
	t.in = newStdinWriter(rc)
	t.mux = newMux(d.shared, notify, t.write)
	e := d.shared
	var readers sync.WaitGroup
	broken := func() {
		t.fail(connErr("upstream connection failed in the gateway", nil))
		t.kill()
	}
	readers.Go(func() {
		defer e.recoverPanic("stdio reader", func() {
			broken()
			_, _ = io.Copy(io.Discard, stdout)
		})
		t.readLoop(stdout)
	})
	readers.Go(func() {
		defer e.recoverPanic("stdio stderr reader", func() { _, _ = io.Copy(io.Discard, stderr) })
		t.logStderr(stderr)
	})
	drained := make(chan struct{})
	go func() {
		readers.Wait()
		close(drained)
	}()
	wrote := make(chan struct{})
	go func() {
		defer close(wrote)
		defer e.recoverPanic("stdio writer", broken)
		t.writeLoop()
	}()
	go func() {
		defer e.recoverPanic("stdio process waiter", broken)
		err := cmd.Wait()
		// Let the readers take what the child wrote before exiting, but not
		// wait on pipes a descendant keeps open.
		timer := time.NewTimer(drainGrace)
		select {
		case <-drained:
		case <-timer.C:
		}
		timer.Stop()
		closeFiles(stdout, stderr)
		<-drained
		t.stopWriting()
		_ = t.stdin.Close() // unblocks a write the dead child will never read
		<-wrote
		if !t.closing.Load() {
			d.noteExit(err)
		}
		t.fail(connErr("upstream process exited", exitReason(err)))
		close(t.exited)
	}()
	e.log.Info("started upstream process", "pid", cmd.Process.Pid)
	return t
}

func exitReason(err error) error {
	if err == nil {
		return errors.New("exit status 0")
	}
	return err
}

// write hands msg to the writer and waits for it within ctx. If ctx ends
// first, the writer still finishes the message (the stream stays framed),
// but the upstream has not read all of it: the error is undeliveredError.
func (t *stdioTransport) write(ctx context.Context, msg []byte) error {
	if bytes.IndexByte(msg, '\n') >= 0 {
		// encoding/json never emits raw newlines inside a message, but
		// spliced params might; stdio framing cannot carry them.
		msg = bytes.ReplaceAll(msg, []byte("\n"), nil)
	}
	if err := ctx.Err(); err != nil {
		return &undeliveredError{err}
	}
	select {
	case t.wsem <- struct{}{}:
	case <-ctx.Done():
		return &undeliveredError{ctx.Err()}
	case <-t.quit:
		return connErr("upstream process is not accepting input", os.ErrClosed)
	}
	// The holder of wsem owns t.in and its buffer until it lets go of wsem
	// (or the writer goroutine does, for a message it finishes).
	buf := t.in.frame(msg)
	n, err := t.in.writeNow()
	if err != nil || n == len(buf) {
		t.in.release()
		<-t.wsem
		if err != nil {
			return connErr("upstream process is not accepting input", err)
		}
		return nil
	}
	// The pipe is full: the writer finishes the message and lets go of stdin.
	w := stdioWrite{buf: buf[n:], done: make(chan error, 1)}
	select {
	case t.writes <- w:
	case <-t.quit:
		t.in.release()
		<-t.wsem
		return connErr("upstream process is not accepting input", os.ErrClosed)
	}
	select {
	case err := <-w.done:
		if err != nil {
			return connErr("upstream process is not accepting input", err)
		}
		return nil
	case <-ctx.Done():
		return &undeliveredError{ctx.Err()}
	}
}

// writeLoop finishes the messages a caller could not write at once, one at a
// time, until stopWriting; each write's caller holds wsem, which the writer
// releases once the message is written.
func (t *stdioTransport) writeLoop() {
	for {
		select {
		case w := <-t.writes:
			_, err := t.stdin.Write(w.buf)
			t.in.release()
			<-t.wsem
			w.done <- err
		case <-t.quit:
			return
		}
	}
}

func (t *stdioTransport) stopWriting() { t.qonce.Do(func() { close(t.quit) }) }

func (t *stdioTransport) readLoop(stdout io.Reader) {
	budget := t.env.budgetReader(t.mux.ctx, stdout)
	defer budget.releaseHeld()
	br := bufio.NewReaderSize(budget, 64<<10)
	max := int(t.env.maxMessage)
	var long []byte // a line longer than br's buffer, gathered
	for {
		chunk, err := br.ReadSlice('\n')
		line := chunk // a whole line in br's buffer: decoded from there
		if len(long) > 0 || errors.Is(err, bufio.ErrBufferFull) {
			long = append(long, chunk...)
			line = long
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			if len(line) > max {
				t.fail(protoErr("invalid MCP response: message too large", nil))
				t.kill()
				_, _ = io.Copy(io.Discard, br)
				return
			}
			continue
		}
		if len(bytes.TrimSpace(line)) > 0 {
			msg, derr := jsonrpc.Decode(bytes.Clone(bytes.TrimSpace(line)))
			if derr != nil {
				t.env.msgWarn("upstream wrote a line that is not a JSON-RPC message", "bytes", len(line))
			} else {
				t.dispatch(msg)
			}
		}
		long = nil // a gathered line outgrew br's buffer: it is not kept
		budget.releaseHeld()
		if err != nil {
			if errors.As(err, new(*BudgetError)) {
				t.fail(&BudgetError{})
			}
			return
		}
	}
}

// logStderr copies the child's stderr into the log, line by line, bounded in
// line length and in lines per minute (the dialer's stderr limiter, which
// reports the lines it held back on the next line it lets through).
func (t *stdioTransport) logStderr(stderr io.Reader) {
	sc := bufio.NewScanner(stderr)
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for sc.Scan() {
		line := sc.Bytes()
		if len(line) > stderrLineMax {
			line = append(line[:stderrLineMax:stderrLineMax], "…"...)
		}
		t.d.stderrLog.log(t.env.log, slog.LevelInfo, "upstream stderr", "line", string(line))
	}
	_, _ = io.Copy(io.Discard, stderr)
}

func (t *stdioTransport) expired() bool { return t.dead() }

// close stops the child: stdin is closed first so a well-behaved server exits
// on its own, then SIGTERM, then SIGKILL. Every wait is bounded by ctx; when
// ctx ends first the child is killed and close returns without waiting.
func (t *stdioTransport) close(ctx context.Context) error {
	t.closing.Store(true)
	t.stopWriting()
	_ = t.stdin.Close() // EOF for the child; also unblocks a write in progress
	for _, signal := range []func(){nil, t.terminate, t.kill} {
		if signal != nil {
			signal()
		}
		timer := time.NewTimer(stopGrace)
		select {
		case <-t.exited:
			timer.Stop()
			t.serving.Wait()
			return nil
		case <-ctx.Done():
			timer.Stop()
			t.kill()
			return ctx.Err()
		case <-timer.C:
		}
	}
	select {
	case <-t.exited:
		t.serving.Wait()
		return errors.New("upstream process needed SIGKILL")
	case <-ctx.Done():
		return ctx.Err()
	}
}

// stdioDialer runs the upstream as child processes, one per session, and
// restarts a child that keeps dying with exponential backoff.
type stdioDialer struct {
	shared  *env
	command string
	args    []string
	environ []string // configured KEY=VALUE entries (see childEnv)
	dir     string

	stderrLog *lineLimiter // the children's stderr lines

	mu        sync.Mutex // restart backoff
	failures  int
	notBefore time.Time
}

func newStdioDialer(e *env, cfg *Config) *stdioDialer {
	return &stdioDialer{shared: e, command: cfg.Command, args: cfg.Args, environ: cfg.Env, dir: cfg.Dir,
		stderrLog: newLineLimiter(stderrLinesPerMin, time.Minute, nil)}
}

// dial starts the child process unless it died too recently: a child that
// keeps dying is restarted with exponential backoff, not in a loop. A child
// started again at once (again) is not held back.
func (d *stdioDialer) dial(_ context.Context, _ verdict, p peer, again bool) (transport, error) {
	if !again {
		d.mu.Lock()
		wait := time.Until(d.notBefore)
		d.mu.Unlock()
		if wait > 0 {
			return nil, connErr(fmt.Sprintf("upstream process exited; next restart allowed in %s", wait.Round(time.Millisecond)), nil)
		}
	}
	return startStdio(d, p.notify)
}

// noteExit records a child's exit for the restart backoff.
func (d *stdioDialer) noteExit(err error) {
	if d.shared.closing.Load() {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.failures++
	backoff := min(250*time.Millisecond<<min(d.failures-1, 8), 30*time.Second)
	d.notBefore = time.Now().Add(backoff)
	d.shared.log.Warn("upstream process exited", "err", exitReason(err), "restart_backoff", backoff.String())
}

// answered ends the restart backoff: the upstream answered.
func (d *stdioDialer) answered() {
	d.mu.Lock()
	d.failures = 0
	d.notBefore = time.Time{}
	d.mu.Unlock()
}
