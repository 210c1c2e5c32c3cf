package e2e

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/mcpgw/mcpgw/internal/app"
	"github.com/mcpgw/mcpgw/internal/testpeers"
)

// TestListenAccessLineAtStreamEnd: a subscriptions/listen's access line
// (and with it its metrics and live counters, fed by the same record) is
// written when its stream ends, with the stream's duration, not when the
// handler that opened it returned: the server runs the held stream after
// the handler chain unwound (internal/handoff), and the record waits for
// it.
func TestListenAccessLineAtStreamEnd(t *testing.T) {
	fx := testpeers.StartGoFixtureHTTP(t, false)
	var buf syncBuffer
	gw := startGatewayWith(t, fmt.Sprintf("general_settings:\n  master_key: %s\nmcp_servers:\n  fx:\n    url: %s\n", testKey, fx),
		nil, app.WithLogger(slog.New(slog.NewJSONHandler(&buf, nil))))
	listenLine := func() map[string]any {
		for _, line := range strings.Split(buf.String(), "\n") {
			var rec map[string]any
			if json.Unmarshal([]byte(line), &rec) == nil && rec["msg"] == "mcp request" && rec["method"] == "subscriptions/listen" {
				return rec
			}
		}
		return nil
	}
	events, leave := listenUntilLeft(t, gw.url+"/mcp", modernHeaders("subscriptions/listen", ""))
	if ack := nextEvent(events, 10*time.Second); !strings.Contains(ack, "notifications/subscriptions/acknowledged") {
		t.Fatalf("first event %q, want the acknowledgement", ack)
	}
	const held = 400 * time.Millisecond
	time.Sleep(held)
	if rec := listenLine(); rec != nil {
		t.Fatalf("the listen's access line was written while its stream was open: %v", rec)
	}
	leave()
	var rec map[string]any
	waitUntil(t, 5*time.Second, "the listen's access line", func() bool { rec = listenLine(); return rec != nil })
	if d, _ := rec["duration_ms"].(float64); d < float64(held/time.Millisecond) || rec["status"] != 200.0 {
		t.Fatalf("access line %v: want status 200 and a duration of at least %v", rec, held)
	}
}
