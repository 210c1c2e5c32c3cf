package gateway

import (
	"encoding/json"
	"testing"

	"github.com/mcpgw/mcpgw/internal/mcp"
)

func TestNotifyReachesOnlyTheSessionsCallers(t *testing.T) {
	g := &Gateway{}
	got := map[string]int{}
	all := &Filter{ToolsListChanged: true, ResourceSubscriptions: []string{"file:///dir/"}}
	for _, cred := range []string{"alice", "bob"} {
		g.hub.add("fs", &hubSub{cred: cred, filter: all, emit: func(string, json.RawMessage) { got[cred]++ }})
	}
	g.Notify("fs", "alice", mcp.NotifToolsListChanged, json.RawMessage(`{}`))
	g.Notify("fs", "alice", mcp.NotifResourcesUpdated, json.RawMessage(`{"uri":"file:///dir/a.txt"}`))
	g.Notify("fs", "alice", mcp.NotifResourcesUpdated, json.RawMessage(`{"uri":"file:///other"}`))
	g.Notify("fs", "alice", mcp.NotifPromptsListChanged, json.RawMessage(`{}`))
	g.Notify("other", "alice", mcp.NotifToolsListChanged, json.RawMessage(`{}`))
	if got["alice"] != 2 || got["bob"] != 0 {
		t.Fatalf("deliveries = %v, want alice 2 (a subscribed list change and a sub-resource update), bob 0", got)
	}
}

func TestFilterWants(t *testing.T) {
	f := Filter{ResourceSubscriptions: []string{"file:///cfg.json", "file:///dir/"}}
	for uri, want := range map[string]bool{
		"file:///cfg.json": true, "file:///cfg.json.bak": false, "file:///dir/x": true, "file:///dirx": false, "": false,
	} {
		if got := f.wants(mcp.NotifResourcesUpdated, json.RawMessage(`{"uri":"`+uri+`"}`)); got != want {
			t.Errorf("wants(%q) = %v, want %v", uri, got, want)
		}
	}
}
