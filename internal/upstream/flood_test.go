package upstream

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpgw/mcpgw/internal/jsonrpc"
)

const floodRequests = 2000

// An upstream that answers one call with thousands of server→client
// requests gets at most MaxServerRequestsPerCall of them served at once;
// the rest are refused at once with a JSON-RPC error instead of each
// getting a goroutine.
func TestServerRequestFloodIsBounded(t *testing.T) {
	for _, transport := range []string{TransportHTTP, TransportStdio} {
		t.Run(transport, func(t *testing.T) {
			var cfg Config
			var refused func() int
			if transport == TransportHTTP {
				f := legacyServer(t, "2025-11-25", func(w http.ResponseWriter, r *http.Request, m *jsonrpc.Message) {
					w.Header().Set("Content-Type", "text/event-stream")
					w.WriteHeader(200)
					for i := range floodRequests {
						fmt.Fprintf(w, "data: %s\n\n", jsonrpc.EncodeRequest(jsonrpc.IntID(int64(1000+i)), "elicitation/create", json.RawMessage(`{"message":"?"}`)))
					}
					fmt.Fprintf(w, "data: %s\n\n", jsonrpc.EncodeResult(m.ID, json.RawMessage(`{"content":[]}`)))
				})
				cfg = Config{Name: "up", URL: f.url(), ProtocolVersion: "2025-11-25"}
				refused = func() int {
					n := 0
					for _, s := range f.requests() {
						if strings.Contains(s.Body, "too many") {
							n++
						}
					}
					return n
				}
			} else {
				cfg = fakeStdioConfig(t, "flood")
			}
			cfg.MaxServerRequestsPerCall = 4
			cfg.RequestTimeout = 20 * time.Second
			c := newClient(t, cfg)
			var now, peak atomic.Int32
			in := &Interactions{Elicit: func(ctx context.Context, _ json.RawMessage) (json.RawMessage, error) {
				n := now.Add(1)
				defer now.Add(-1)
				for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
				}
				<-ctx.Done() // held until the call ends
				return nil, ctx.Err()
			}}
			if _, err := c.CallTool(context.Background(), "t", json.RawMessage(`{}`), Options{Interactions: in}); err != nil {
				t.Fatal(err)
			}
			if p := peak.Load(); p == 0 || p > 4 {
				t.Fatalf("%d server requests served at once, want 1..4", p)
			}
			if refused != nil && refused() < floodRequests-4 {
				t.Fatalf("%d refusals, want the excess refused at once", refused())
			}
		})
	}
}
