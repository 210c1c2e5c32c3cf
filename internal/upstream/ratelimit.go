package upstream

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

const (
	// msgLinesPerMin bounds the per-message log lines of one client (a
	// malformed message, an unmatched response, a refused server request)
	// per minute, whatever the transport.
	msgLinesPerMin = 60
	// stderrLinesPerMin bounds the stderr lines of one stdio client logged
	// per minute.
	stderrLinesPerMin = 120
)

// lineLimiter lets at most max log lines through per window and counts the
// ones it holds back, so the next line let through can report them.
type lineLimiter struct {
	max    int
	window time.Duration
	now    func() time.Time

	mu         sync.Mutex
	start      time.Time
	n          int
	suppressed int
}

func newLineLimiter(max int, window time.Duration, now func() time.Time) *lineLimiter {
	if now == nil {
		now = time.Now
	}
	return &lineLimiter{max: max, window: window, now: now}
}

// allow reports whether a line may be logged now and, when it may, how many
// lines were held back since the last one let through.
func (l *lineLimiter) allow() (ok bool, suppressed int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if now := l.now(); l.start.IsZero() || now.Sub(l.start) >= l.window {
		l.start, l.n = now, 0
	}
	if l.n >= l.max {
		l.suppressed++
		return false, 0
	}
	l.n++
	suppressed, l.suppressed = l.suppressed, 0
	return true, suppressed
}

// log writes one line through the limiter, with a "suppressed" count when
// lines were held back before it.
func (l *lineLimiter) log(logger *slog.Logger, level slog.Level, msg string, args ...any) {
	if !logger.Enabled(context.Background(), level) {
		return
	}
	ok, n := l.allow()
	if !ok {
		return
	}
	if n > 0 {
		args = append(args, "suppressed", n)
	}
	logger.Log(context.Background(), level, msg, args...)
}

// msgWarn logs a per-message warning about what the upstream sent, rate
// limited per client.
func (e *env) msgWarn(msg string, args ...any) {
	e.msgLog.log(e.log, slog.LevelWarn, msg, args...)
}

// msgDebug logs a per-message debug line, under a limit of its own: debug
// lines never crowd out the warnings operators need.
func (e *env) msgDebug(msg string, args ...any) {
	e.dbgLog.log(e.log, slog.LevelDebug, msg, args...)
}
