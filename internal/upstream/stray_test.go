package upstream

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/mcpgw/mcpgw/internal/jsonrpc"
)

// A roots/list that arrives on a shared stdio stream while a call is in
// flight goes to that call's caller only when the caller's session is its
// own (Owner). On a session shared by several callers it is refused, and the
// call it arrived during is left alone: its caller was never asked.
func TestStrayRootsListNeedsAnOwnSession(t *testing.T) {
	for _, tc := range []struct {
		name      string
		owner     string
		wantAsked bool
		wantReply string
	}{
		{"shared session", "", false, `is not answered on a session shared by several callers"`},
		{"own session", "caller-a", true, `"roots":[{"uri":"file:///a"}]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := fakeStdioConfig(t, "roots")
			cfg.Offer = Offer{Roots: true}
			c := newClient(t, cfg)
			var asked atomic.Int32
			in := &Interactions{Owner: tc.owner, Roots: func(context.Context, json.RawMessage) (json.RawMessage, error) {
				asked.Add(1)
				return json.RawMessage(`{"roots":[{"uri":"file:///a"}]}`), nil
			}}
			res, err := c.Call(context.Background(), "tools/call", json.RawMessage(`{"name":"x","arguments":{}}`),
				Options{Interactions: in})
			if err != nil {
				t.Fatal(err)
			}
			answer := jsonrpc.Member(res.Raw, "rootsAnswer")
			if !strings.Contains(string(answer), tc.wantReply) {
				t.Fatalf("the server's roots/list got %s, want it to contain %s", answer, tc.wantReply)
			}
			if got := asked.Load() == 1; got != tc.wantAsked {
				t.Fatalf("caller asked = %v, want %v", got, tc.wantAsked)
			}
		})
	}
}
