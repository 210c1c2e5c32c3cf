package gateway

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/mcpgw/mcpgw/internal/fakemcp"
	"github.com/mcpgw/mcpgw/internal/mcp"
	"github.com/mcpgw/mcpgw/internal/upstream"
)

// A caller's own upstream session sends its notifications to that caller
// alone, even to none presenting the same key; a caller that has one hears
// that server's list changes and log lines there, not a second time from
// the shared session; the shared session's reach the callers without one
// of their own, and its resource updates (the listen subscribes there)
// every follower.
func TestOwnSessionNotificationsReachTheirOwnerOnly(t *testing.T) {
	g := newTestGateway(t, Config{}, upSpec{name: "s", fake: fakemcp.New(t, fakemcp.Opts{Legacy: true})})
	// Caller A has an upstream session of its own on s; B is an owner
	// that has none there yet; "shared" keeps no state upstream.
	if _, err := g.servers["s"].Client.Info(context.Background(), upstream.Options{Interactions: &upstream.Interactions{Owner: "A"}}); err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	for _, who := range []string{"A", "B", "shared"} {
		owner := who
		if who == "shared" {
			owner = ""
		}
		f := &Filter{ToolsListChanged: true, ResourceSubscriptions: []string{"file:///x"}, Log: func() string { return "" },
			ElicitationComplete: true, Owner: func() string { return owner }}
		defer g.ls.hub.add("s", &hubSub{cred: "", filter: f, emit: func(string, json.RawMessage) { got[who]++ }})()
	}
	for _, c := range []struct {
		name, from, method, params string
		want                       []string
	}{
		{"list change on the shared session", "", mcp.NotifToolsListChanged, `{}`, []string{"B", "shared"}},
		{"log line on the shared session", "", mcp.NotifMessage, `{"level":"error","data":"x"}`, []string{"B", "shared"}},
		{"resource update on the shared session", "", mcp.NotifResourcesUpdated, `{"uri":"file:///x"}`, []string{"A", "B", "shared"}},
		{"list change on A's session", upstream.OwnerKey("", "A"), mcp.NotifToolsListChanged, `{}`, []string{"A"}},
		{"log line on A's session", upstream.OwnerKey("", "A"), mcp.NotifMessage, `{"level":"debug","data":"x"}`, []string{"A"}},
		{"elicitation completion on A's session", upstream.OwnerKey("", "A"), mcp.NotifElicitationComplete, `{"elicitationId":"e"}`, []string{"A"}},
		{"resource update on B's session", upstream.OwnerKey("", "B"), mcp.NotifResourcesUpdated, `{"uri":"file:///x"}`, []string{"B"}},
		{"another key's shared session", "other", mcp.NotifToolsListChanged, `{}`, nil},
		{"another key's session of A", upstream.OwnerKey("other", "A"), mcp.NotifToolsListChanged, `{}`, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			clear(got)
			g.Notify("s", c.from, c.method, json.RawMessage(c.params))
			want := map[string]int{}
			for _, w := range c.want {
				want[w] = 1
			}
			for _, who := range []string{"A", "B", "shared"} {
				if got[who] != want[who] {
					t.Errorf("%s received %d, want %d", who, got[who], want[who])
				}
			}
		})
	}
}
