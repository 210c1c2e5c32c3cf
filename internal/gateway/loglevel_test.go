package gateway

import (
	"encoding/json"
	"testing"
)

// Log lines outside a request reach a follower at or above its level, and
// only followers of the upstream session (credentials) they came on.
func TestLogLinesFollowLevelAndCredentials(t *testing.T) {
	for _, c := range []struct {
		name, least, level, cred string
		want                     bool
	}{
		{"no level set: every level", "", "debug", "c1", true},
		{"at the level", "warning", "warning", "c1", true},
		{"above the level", "warning", "emergency", "c1", true},
		{"below the level", "warning", "info", "c1", false},
		{"unknown level under a set level", "debug", "loud", "c1", false},
		{"another upstream session", "", "error", "c2", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			g := New(Config{})
			got := 0
			least := c.least
			f := &Filter{ToolsListChanged: true, Log: func() string { return least }}
			remove := g.ls.hub.add("s", &hubSub{cred: "c1", filter: f, emit: func(string, json.RawMessage) { got++ }})
			defer remove()
			g.Notify("s", c.cred, "notifications/message", json.RawMessage(`{"level":"`+c.level+`","data":"x"}`))
			if (got == 1) != c.want {
				t.Fatalf("delivered %d, want %v", got, c.want)
			}
		})
	}
	// A follower without Log (a 2026-07-28 listen, a resources/subscribe
	// follow) gets no log lines.
	g := New(Config{})
	got := 0
	defer g.ls.hub.add("s", &hubSub{cred: "c1", filter: &Filter{ToolsListChanged: true}, emit: func(string, json.RawMessage) { got++ }})()
	g.Notify("s", "c1", "notifications/message", json.RawMessage(`{"level":"emergency","data":"x"}`))
	g.Notify("s", "c1", "notifications/elicitation/complete", json.RawMessage(`{"elicitationId":"e1"}`))
	if got != 0 {
		t.Fatal("a listen without Log or ElicitationComplete received a log line or an elicitation completion")
	}
	// A session that declared URL-mode elicitation follows completions.
	defer g.ls.hub.add("s", &hubSub{cred: "c1", filter: &Filter{ElicitationComplete: true}, emit: func(string, json.RawMessage) { got++ }})()
	g.Notify("s", "c1", "notifications/elicitation/complete", json.RawMessage(`{"elicitationId":"e1"}`))
	if got != 1 {
		t.Fatalf("elicitation completions delivered: %d, want 1", got)
	}
}
