//go:build unix

package upstream

import (
	"bytes"
	"os"
	"testing"

	"github.com/mcpgw/mcpgw/internal/allocstest"
)

// A message the pipe takes at once is framed in the kept buffer and written
// through the callback bound once: no allocation (doc.go claims it).
func TestStdioWriterAllocs(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	drained := make(chan struct{})
	go func() {
		defer close(drained)
		buf := make([]byte, 64<<10) // one buffer: the measurement counts this goroutine's too
		for {
			if _, err := r.Read(buf); err != nil {
				return
			}
		}
	}()
	defer func() {
		_ = w.Close()
		<-drained
		_ = r.Close()
	}()
	rc, err := w.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	sw := newStdinWriter(rc)
	msg := bytes.Repeat([]byte("m"), 4<<10)
	write := func() {
		buf := sw.frame(msg)
		n, err := sw.writeNow()
		if err != nil {
			t.Fatal(err)
		}
		if n < len(buf) { // the pipe was full: finish as the writer goroutine would
			if _, err := w.Write(buf[n:]); err != nil {
				t.Fatal(err)
			}
		}
		sw.release()
	}
	write() // the first message sizes the buffer
	if n := allocstest.Least(200, write); n > 0 {
		t.Errorf("%v allocations per write, want none", n)
	}
	// A message past reuseMax does not stay: its buffer is dropped.
	sw.frame(make([]byte, reuseMax+1))
	sw.release()
	if sw.buf != nil {
		t.Errorf("kept a %d-byte buffer past reuseMax", cap(sw.buf))
	}
}
