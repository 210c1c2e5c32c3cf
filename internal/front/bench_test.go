package front

import (
	"context"
	"log/slog"
	"testing"

	"github.com/mcpgw/mcpgw/internal/seal"
)

// A request on a session live here is served from this replica's state,
// after asking the tombstones whether it ended.
func BenchmarkOpenLiveSession(b *testing.B) {
	sealer, err := seal.New("front-test-salt-key-0123456789abcdef", SessionPurpose)
	if err != nil {
		b.Fatal(err)
	}
	ss := newSessions(sealer, SessionConfig{}.withDefaults(), slog.New(slog.DiscardHandler))
	defer ss.closeAll()
	id, err := ss.mint(claims{Binding: "v1;u=alice|", Scope: "fs"})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	if _, err := ss.open(ctx, id, "v1;u=alice|", "fs", nil); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ss.open(ctx, id, "v1;u=alice|", "fs", nil); err != nil {
			b.Fatal(err)
		}
	}
}
