package upstream

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"time"

	"github.com/mcpgw/mcpgw/internal/jsonrpc"
)

const (
	stderrLineMax     = 1024 // longest stderr line logged, in bytes
	stderrLinesPerMin = 120  // stderr lines logged per minute before dropping
	stopGrace         = 2 * time.Second
)

// stdioTransport runs the upstream as a child process speaking
// newline-delimited JSON-RPC on stdin/stdout.
type stdioTransport struct {
	*mux
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	wmu    sync.Mutex // serialises writes to stdin
	exited chan struct{}
}

func startStdio(c *Client) (*stdioTransport, error) {
	cfg := &c.cfg
	cmd := exec.Command(cfg.Command, cfg.Args...)
	cmd.Env = append(os.Environ(), cfg.Env...)
	cmd.Dir = cfg.Dir
	setProcessGroup(cmd)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, connErr("cannot start upstream process", err)
	}
	t := &stdioTransport{cmd: cmd, stdin: stdin, exited: make(chan struct{})}
	t.mux = newMux(c, t.write)
	var readers sync.WaitGroup
	readers.Add(2)
	go func() { defer readers.Done(); t.readLoop(stdout) }()
	go func() { defer readers.Done(); t.logStderr(stderr) }()
	go func() {
		readers.Wait()
		err := cmd.Wait()
		c.noteExit(err)
		t.fail(connErr("upstream process exited", exitReason(err)))
		close(t.exited)
	}()
	c.cfg.Logger.Info("started upstream process", "pid", cmd.Process.Pid)
	return t, nil
}

func exitReason(err error) error {
	if err == nil {
		return errors.New("exit status 0")
	}
	return err
}

func (t *stdioTransport) write(ctx context.Context, msg []byte) error {
	if bytes.IndexByte(msg, '\n') >= 0 {
		// encoding/json never emits raw newlines inside a message, but
		// spliced params might; stdio framing cannot carry them.
		msg = bytes.ReplaceAll(msg, []byte("\n"), nil)
	}
	t.wmu.Lock()
	defer t.wmu.Unlock()
	if err := ctx.Err(); err != nil {
		return err
	}
	buf := make([]byte, 0, len(msg)+1)
	buf = append(append(buf, msg...), '\n')
	if _, err := t.stdin.Write(buf); err != nil {
		return connErr("upstream process is not accepting input", err)
	}
	return nil
}

func (t *stdioTransport) readLoop(stdout io.Reader) {
	br := bufio.NewReaderSize(stdout, 64<<10)
	max := int(t.c.cfg.MaxMessageBytes)
	var line []byte
	for {
		chunk, err := br.ReadSlice('\n')
		line = append(line, chunk...)
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
				t.c.cfg.Logger.Warn("upstream wrote a line that is not a JSON-RPC message", "bytes", len(line))
			} else {
				t.dispatch(msg)
			}
		}
		line = line[:0]
		if err != nil {
			return
		}
	}
}

// logStderr copies the child's stderr into the log, line by line, bounded in
// line length and in lines per minute.
func (t *stdioTransport) logStderr(stderr io.Reader) {
	sc := bufio.NewScanner(stderr)
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	window, count, dropped := time.Now(), 0, 0
	for sc.Scan() {
		if time.Since(window) > time.Minute {
			if dropped > 0 {
				t.c.cfg.Logger.Warn("upstream stderr lines dropped", "count", dropped)
			}
			window, count, dropped = time.Now(), 0, 0
		}
		if count >= stderrLinesPerMin {
			dropped++
			continue
		}
		count++
		line := sc.Bytes()
		if len(line) > stderrLineMax {
			line = append(line[:stderrLineMax:stderrLineMax], "…"...)
		}
		t.c.cfg.Logger.Info("upstream stderr", "line", string(line))
	}
	_, _ = io.Copy(io.Discard, stderr)
}

func (t *stdioTransport) expired() bool { return t.dead() }

// close stops the child: stdin is closed first so a well-behaved server exits
// on its own, then SIGTERM, then SIGKILL.
func (t *stdioTransport) close(ctx context.Context) error {
	t.wmu.Lock()
	_ = t.stdin.Close()
	t.wmu.Unlock()
	for _, step := range []func(){nil, t.terminate, t.kill} {
		if step != nil {
			step()
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
			<-t.exited
			return ctx.Err()
		case <-timer.C:
		}
	}
	<-t.exited
	return fmt.Errorf("upstream process needed SIGKILL")
}
