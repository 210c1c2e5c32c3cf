package front

import (
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/mcpgw/mcpgw/internal/seal"

	"github.com/mcpgw/mcpgw/internal/jsonrpc"
)

func TestAskIDsNameTheirReplica(t *testing.T) {
	if got := askReplica(askID("r1", 7)); got != "r1" {
		t.Fatalf("askReplica(askID(r1, 7)) = %q", got)
	}
	if got := askID("", 3).String(); got != `"mcpgw-3"` {
		t.Fatalf("askID without a relay = %s", got)
	}
	for _, raw := range []string{`"mcpgw-3"`, `7`, `"other-r1.3"`, `"mcpgw-.3"`, `"mcpgw-r1"`} {
		id, err := jsonrpc.ParseID([]byte(raw))
		if err != nil {
			t.Fatal(err)
		}
		if got := askReplica(id); got != "" {
			t.Fatalf("askReplica(%s) = %q, want none", raw, got)
		}
	}
}

// recordingRelay is a Relay that records what this replica forwards and
// lets the test deliver as if from another replica.
type recordingRelay struct {
	name      string
	forwarded []string
	deliver   func(session string, msg []byte)
}

func (r *recordingRelay) Replica() string { return r.name }
func (r *recordingRelay) Forward(_ context.Context, _, session string, _ []byte) error {
	r.forwarded = append(r.forwarded, session)
	return nil
}
func (r *recordingRelay) Receive(deliver func(string, []byte)) func() {
	r.deliver = deliver
	return func() {}
}

// The relay names a session by a digest: the sealed id, which a caller
// presents as a credential, is never handed to the relay, and an answer
// relayed under the digest reaches the request waiting on the session.
func TestRelayNamesSessionsByDigest(t *testing.T) {
	sealer, err := seal.New("front-test-salt-key-0123456789abcdef", SessionPurpose)
	if err != nil {
		t.Fatal(err)
	}
	relay := &recordingRelay{name: "a"}
	ss := newSessions(sealer, SessionConfig{Relay: relay}.withDefaults(), slog.New(slog.DiscardHandler))
	defer ss.closeAll()
	id, err := ss.mint(claims{Binding: "v1;u=alice|", Scope: "fs"})
	if err != nil {
		t.Fatal(err)
	}
	l, err := ss.open(context.Background(), id, "v1;u=alice|", "fs", nil)
	if err != nil {
		t.Fatal(err)
	}
	key := relayKey(id)
	if key == id || strings.Contains(key, id) || len(key) < 20 {
		t.Fatalf("relay key %q reveals or is too short for the id", key)
	}

	h := &MCP{cfg: MCPConfig{Sessions: SessionConfig{Relay: relay}}, ctx: context.Background()}
	answer, err := jsonrpc.Decode([]byte(`{"jsonrpc":"2.0","id":"mcpgw-b.1","result":{}}`))
	if err != nil {
		t.Fatal(err)
	}
	if !h.relayResponse(l, answer) {
		t.Fatal("an answer naming replica b was not relayed")
	}
	if len(relay.forwarded) != 1 || relay.forwarded[0] != key {
		t.Fatalf("forwarded under %q, want the digest %q and never the id", relay.forwarded, key)
	}

	// An answer relayed here under the digest reaches the waiting request.
	got := make(chan *jsonrpc.Message, 1)
	l.pmu.Lock()
	l.pending = map[string]chan *jsonrpc.Message{`"mcpgw-a.7"`: got}
	l.pmu.Unlock()
	ss.receiveRelayed(id, []byte(`{"jsonrpc":"2.0","id":"mcpgw-a.7","result":{"n":1}}`))
	select {
	case <-got:
		t.Fatal("an answer relayed under the raw id was delivered")
	default:
	}
	ss.receiveRelayed(key, []byte(`{"jsonrpc":"2.0","id":"mcpgw-a.7","result":{"n":1}}`))
	select {
	case m := <-got:
		if string(m.Result) != `{"n":1}` {
			t.Fatalf("delivered %s", m.Result)
		}
	default:
		t.Fatal("the answer relayed under the digest was not delivered")
	}
}
