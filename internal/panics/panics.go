// Package panics describes a recovered panic for the log without its value.
// Every goroutine the gateway starts recovers a panic and logs it; the value
// may quote a caller's arguments or credentials, and a full stack dump
// (runtime/debug.Stack) prints raw argument words, so the log gets only the
// panic's type and the function:line frames of the panicking goroutine.
package panics

import (
	"fmt"
	"log/slog"
	"runtime"
	"strconv"
	"strings"
)

// Attrs returns the slog key-value pairs that describe the recovered panic v
// (panic_type and stack), for a deferred function that called recover.
func Attrs(v any) []any {
	return []any{"panic_type", fmt.Sprintf("%T", v), "stack", frames()}
}

// frames names the functions and lines of the calling goroutine's stack,
// without argument values.
func frames() string {
	pcs := make([]uintptr, 32)
	n := runtime.Callers(3, pcs) // skip Callers, frames and Attrs
	fs := runtime.CallersFrames(pcs[:n])
	var b strings.Builder
	for {
		f, more := fs.Next()
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

// Go runs f in a goroutine whose panic is logged at ERROR (its type and
// frames only, never its value, which may hold arguments or tokens) instead
// of ending the process; onPanic, when set, runs after the log.
func Go(log *slog.Logger, what string, f func(), onPanic func()) {
	go func() {
		defer func() {
			if v := recover(); v != nil {
				log.Error("recovered from a panic", append([]any{"in", what}, Attrs(v)...)...)
				if onPanic != nil {
					onPanic()
				}
			}
		}()
		f()
	}()
}
