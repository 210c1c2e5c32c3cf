package front

import (
	"log/slog"

	"github.com/mcpgw/mcpgw/internal/panics"
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
	log.Error("recovered from a panic; still serving", append([]any{"in", what}, panics.Attrs(v)...)...)
	if after != nil {
		after()
	}
}
