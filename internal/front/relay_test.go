package front

import (
	"testing"

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
