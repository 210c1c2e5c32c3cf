package observe

import (
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/mcpgw/mcpgw/internal/panics"
)

// The defaults of a Lines buffer.
const (
	// DefaultLinesSize is how many bytes of lines a Lines buffer holds at most before it
	// writes them out (about 150 access-log lines).
	DefaultLinesSize = 64 << 10
	// DefaultLinesInterval is how long a line waits at most before it is written out.
	DefaultLinesInterval = 100 * time.Millisecond
)

// Lines buffers whole lines for an io.Writer (the process's stderr): a line is
// appended to a bounded buffer, which is written out in one Write when the next
// line would not fit (Size bytes) or when its first line has waited Interval,
// whichever comes first, and on Close. Writes to the writer go out one at a time,
// in order. Lines still buffered when the process dies without Close are lost
// (at most Interval's worth).
type Lines struct {
	w        io.Writer
	size     int
	interval time.Duration
	log      *slog.Logger // where a panic of the flush timer is reported

	mu     sync.Mutex
	buf    []byte // the lines waiting
	spare  []byte // a buffer not being written, for the next lines
	timer  *time.Timer
	armed  bool // timer runs: buf's first line is waiting for it
	closed bool

	wmu sync.Mutex // held while writing to w
}

// NewLines returns a Lines buffer writing to w; size and interval ≤ 0 take the
// defaults. log reports a panic of the flush timer (nil: discarded).
func NewLines(w io.Writer, size int, interval time.Duration, log *slog.Logger) *Lines {
	if size <= 0 {
		size = DefaultLinesSize
	}
	if interval <= 0 {
		interval = DefaultLinesInterval
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	l := &Lines{w: w, size: size, interval: interval, log: log, buf: make([]byte, 0, size)}
	l.timer = time.AfterFunc(time.Hour, l.onTimer)
	l.timer.Stop()
	return l
}

// Write buffers p, one or more whole lines; it never fails (a failure of the
// underlying writer is not reported, as slog does not report it either). A p
// larger than the buffer, or written after Close, goes straight through.
func (l *Lines) Write(p []byte) (int, error) {
	for {
		l.mu.Lock()
		if l.closed || len(p) > l.size {
			l.flushLocked()
			l.wmu.Lock()
			_, _ = l.w.Write(p)
			l.wmu.Unlock()
			return len(p), nil
		}
		if len(l.buf)+len(p) <= l.size {
			l.buf = append(l.buf, p...)
			if !l.armed {
				l.armed = true
				l.timer.Reset(l.interval)
			}
			l.mu.Unlock()
			return len(p), nil
		}
		l.flushLocked()
	}
}

// Flush writes out what is buffered.
func (l *Lines) Flush() {
	l.mu.Lock()
	l.flushLocked()
}

// Close writes out what is buffered; later lines go straight through.
func (l *Lines) Close() {
	l.mu.Lock()
	l.closed = true
	l.armed = false
	l.timer.Stop()
	l.flushLocked()
}

// onTimer writes out the lines whose first has waited the interval.
func (l *Lines) onTimer() {
	defer func() {
		if v := recover(); v != nil {
			l.log.Error("recovered from a panic", append([]any{"in", "access log flush"}, panics.Attrs(v)...)...)
		}
	}()
	l.mu.Lock()
	l.armed = false
	l.flushLocked()
}

// flushLocked writes buf out; it is called with mu held and returns with it
// released. The writes go out in the order their buffers were taken: wmu is
// taken before mu is released.
func (l *Lines) flushLocked() {
	out := l.buf
	if len(out) == 0 {
		l.mu.Unlock()
		return
	}
	l.buf, l.spare = l.spare[:0], nil
	if l.buf == nil {
		l.buf = make([]byte, 0, l.size)
	}
	l.wmu.Lock()
	l.mu.Unlock()
	_, _ = l.w.Write(out)
	l.wmu.Unlock()
	l.mu.Lock()
	if l.spare == nil {
		l.spare = out[:0]
	}
	l.mu.Unlock()
}
