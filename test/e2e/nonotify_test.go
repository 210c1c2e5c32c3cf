package e2e

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestLegacyCallerNoNotifications is the seed's legacy-caller-no-notifications
// case (kinds tools and updated): the modern upstream advertises no
// capabilities and refuses subscriptions/listen with -32601. A legacy
// caller's initialize still advertises the four flags; the gateway never
// tries an upstream listen; resources/subscribe fails with an MCP error
// within 3 s; tool calls work; after a call through the gateway that adds a
// tool, no notification arrives, yet the next tools/list shows it, although
// the upstream let its lists be cached for a minute.
func TestLegacyCallerNoNotifications(t *testing.T) {
	for _, kind := range []string{"tools", "updated"} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			peer := startProbePeer(t, false, true)
			gw := discoveryGateway(t, peer.url, "", "", "", nil)
			notes := make(chan string, 16)
			client := sdk.NewClient(&sdk.Implementation{Name: "legacy-caller", Version: "1"}, &sdk.ClientOptions{
				ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) { notes <- "tools" },
				ResourceUpdatedHandler: func(context.Context, *sdk.ResourceUpdatedNotificationRequest) { notes <- "updated" },
			})
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			tr := &sdk.StreamableClientTransport{Endpoint: gw.url + "/mcp/", HTTPClient: &http.Client{Transport: authTransport{subscriptionKey}}}
			cs, err := client.Connect(ctx, tr, &sdk.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			caps := cs.InitializeResult().Capabilities
			if caps.Tools == nil || !caps.Tools.ListChanged || caps.Prompts == nil || !caps.Prompts.ListChanged ||
				caps.Resources == nil || !caps.Resources.ListChanged || !caps.Resources.Subscribe {
				t.Fatalf("initialize capabilities: %+v", caps)
			}
			names := func() []string {
				res, err := cs.ListTools(ctx, nil)
				if err != nil {
					t.Fatal(err)
				}
				var out []string
				for _, tool := range res.Tools {
					out = append(out, tool.Name)
				}
				return out
			}
			if before := names(); !contains(before, "peer-change_tools") || contains(before, "peer-added") {
				t.Fatalf("tools before the change: %v", before)
			}
			call := func() {
				res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "peer-change_tools", Arguments: map[string]any{}})
				if err != nil || res.IsError {
					t.Fatalf("peer-change_tools: %v %+v", err, res)
				}
			}
			if kind == "updated" {
				sctx, scancel := context.WithTimeout(ctx, 3*time.Second)
				err := cs.Subscribe(sctx, &sdk.SubscribeParams{URI: "test://value"})
				scancel()
				if err == nil || errors.Is(err, context.DeadlineExceeded) {
					t.Fatalf("resources/subscribe: %v, want an MCP error within 3 s", err)
				}
				call()
			} else {
				call()
				select {
				case n := <-notes:
					t.Fatalf("a %s notification arrived from an upstream that sends none", n)
				case <-time.After(500 * time.Millisecond):
				}
				if after := names(); !contains(after, "peer-added") {
					t.Fatalf("tools after the change: %v", after)
				}
			}
			if _, listens, _, _, _ := peer.snapshot(); listens != 0 {
				t.Fatalf("%d upstream listens attempted", listens)
			}
		})
	}
}
