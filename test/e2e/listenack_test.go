package e2e

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// listenWith opens subscriptions/listen with the given filter and returns
// the HTTP status and the stream's data lines (for a refusal, its body as
// one line); the channel closes when the stream ends.
func listenWith(t *testing.T, url string, hdr map[string]string, filter string) (int, <-chan string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	body := `{"jsonrpc":"2.0","id":"L1","method":"subscriptions/listen","params":{"notifications":` + filter + `,` + modernMeta + `}}`
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	events := make(chan string, 16)
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); resp.Body.Close(); <-done })
	go func() {
		defer close(done)
		defer close(events)
		if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
			b, _ := io.ReadAll(resp.Body)
			events <- string(b)
			return
		}
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				select {
				case events <- d:
				case <-ctx.Done():
					return
				}
			}
		}
	}()
	return resp.StatusCode, events
}

// nextEvent waits up to d for the stream's next data line; "" when none
// came or the stream ended.
func nextEvent(events <-chan string, d time.Duration) string {
	select {
	case ev := <-events:
		return ev
	case <-time.After(d):
		return ""
	}
}

// triggerUpstream calls the go-sdk fixture's test_trigger_tool_change
// directly on the upstream (not through the gateway).
func triggerUpstream(t *testing.T, upstream string, id int) {
	t.Helper()
	trigger := modernHeaders("tools/call", "test_trigger_tool_change")
	delete(trigger, "Authorization")
	if status, _, out := rpc(t, upstream, trigger, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"test_trigger_tool_change","arguments":{},`+modernMeta+`}}`, id)); status != 200 {
		t.Fatalf("trigger upstream: %d %v", status, out)
	}
}

// waitOpen waits until open (an upstream's listeners) is n.
func waitOpen(t *testing.T, open *atomic.Int64, n int64, within time.Duration, what string) {
	t.Helper()
	for deadline := time.Now().Add(within); open.Load() != n; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: %d upstream listeners open, want %d", what, open.Load(), n)
		}
	}
}

// The acknowledgement means the upstream listen is established: a change the
// upstream makes the moment the caller holds the ack is delivered, with no
// timing margin, even from an upstream slow (300 ms) to establish its
// listen. Run with -count=20 to look for the race.
func TestListenChangeRightAfterAckIsDelivered(t *testing.T) {
	peer := startListenPeer(t, true)
	slow := func(r *http.Request) {
		if r.Header.Get("Mcp-Method") == "subscriptions/listen" {
			select {
			case <-time.After(300 * time.Millisecond):
			case <-r.Context().Done():
			}
		}
	}
	peer.before.Store(&slow)
	gw := startGateway(t, fmt.Sprintf(`model_list: []
mcp_servers:
  peer:
    url: %s
    transport: http
    protocol_version: "2026-07-28"
general_settings:
  master_key: %s
`, peer.url, testKey), nil)
	status, events := listenWith(t, gw.url+"/mcp/", modernHeaders("subscriptions/listen", ""), `{"toolsListChanged":true}`)
	if status != 200 {
		t.Fatalf("listen: %d %s", status, nextEvent(events, time.Second))
	}
	if first := nextEvent(events, 15*time.Second); !strings.Contains(first, "notifications/subscriptions/acknowledged") || !strings.Contains(first, `"toolsListChanged":true`) {
		t.Fatalf("first event = %q", first)
	}
	if n := peer.open.Load(); n != 1 {
		t.Fatalf("acknowledged with %d upstream listeners open, want 1", n)
	}
	triggerUpstream(t, peer.url, 2)
	if ev := nextEvent(events, 5*time.Second); !strings.Contains(ev, "notifications/tools/list_changed") || !strings.Contains(ev, `"io.modelcontextprotocol/subscriptionId":"L1"`) {
		t.Fatalf("a change right after the ack: got %q, want tools/list_changed tagged L1", ev)
	}
	if ev := nextEvent(events, 500*time.Millisecond); ev != "" {
		t.Fatalf("a second event for one change: %q", ev)
	}
}

// Shutting the gateway down with a listen open ends the listen (with its
// final response) and every upstream listener at once: a modern caller's
// listen on a modern or a legacy upstream, and a legacy caller's stream
// following a modern upstream.
func TestShutdownWithOpenListenIsPrompt(t *testing.T) {
	for _, tc := range []struct {
		name           string
		legacyUpstream bool
		legacyCaller   bool
	}{{"modern", false, false}, {"legacy-upstream", true, false}, {"legacy-caller", false, true}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			peer := startListenPeer(t, !tc.legacyUpstream)
			version := "2026-07-28"
			if tc.legacyUpstream {
				version = "2025-11-25"
			}
			gw := startGateway(t, fmt.Sprintf(`model_list: []
mcp_servers:
  peer:
    url: %s
    transport: http
    protocol_version: "%s"
general_settings:
  master_key: %s
`, peer.url, version, testKey), nil)
			var events <-chan string
			if tc.legacyCaller {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				client := sdk.NewClient(&sdk.Implementation{Name: "legacy", Version: "1"}, nil)
				cs, err := client.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: gw.url + "/mcp", HTTPClient: &http.Client{Transport: authTransport{testKey}}},
					&sdk.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
				if err != nil {
					t.Fatal(err)
				}
				defer cs.Close()
				waitOpen(t, &peer.open, 1, 5*time.Second, "the legacy caller's follow")
			} else {
				_, events = listenWith(t, gw.url+"/mcp/", modernHeaders("subscriptions/listen", ""), `{"toolsListChanged":true}`)
				if first := nextEvent(events, 15*time.Second); !strings.Contains(first, "notifications/subscriptions/acknowledged") {
					t.Fatalf("first event = %q", first)
				}
			}
			start := time.Now()
			gw.app.Drain()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_ = gw.app.Close(ctx)
			if d := time.Since(start); d > time.Second {
				t.Fatalf("shutdown with an open listen took %v", d)
			}
			if events != nil {
				final := ""
				for ev := range events {
					final = ev
				}
				if !strings.Contains(final, `"result"`) || !strings.Contains(final, `"id":"L1"`) {
					t.Fatalf("the listen ended without its final response; last data %q", final)
				}
			}
			if !tc.legacyUpstream {
				waitOpen(t, &peer.open, 0, 3*time.Second, "after shutdown")
			}
		})
	}
}
