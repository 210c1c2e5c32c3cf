package front

import (
	"fmt"
	"log/slog"
	"runtime"
	"strconv"
	"strings"
)

// recoverPanic, deferred first in a goroutine the front starts, stops a
// panic from taking the process down: it logs the panic at ERROR, with the
// panic's type and where it happened but never its value (which may hold a
// caller's arguments or credentials), then runs after (when not nil) so the
// goroutine's work can still be answered.
func recoverPanic(log *slog.Logger, what string, after func()) {
	v := recover()
	if v == nil {
		return
	}
	log.Error("recovered from a panic; still serving", "in", what, "panic_type", fmt.Sprintf("%T", v), "stack", panicFrames())
	if after != nil {
		after()
	}
}

// panicFrames names the functions and lines of the panicking goroutine's
// stack, without argument values.
func panicFrames() string {
	pcs := make([]uintptr, 24)
	n := runtime.Callers(3, pcs)
	frames := runtime.CallersFrames(pcs[:n])
	var b strings.Builder
	for {
		f, more := frames.Next()
		if b.Len() > 0 {
			b.WriteString(" < ")
		}
		b.WriteString(f.Function + ":" + strconv.Itoa(f.Line))
		if !more {
			break
		}
	}
	return b.String()
}
