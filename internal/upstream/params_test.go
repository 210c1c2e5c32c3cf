package upstream

import (
	"encoding/json"
	"testing"

	"github.com/mcpgw/mcpgw/internal/allocstest"
)

func TestPrepareParams(t *testing.T) {
	meta := json.RawMessage(`{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`)
	cases := []struct {
		name, in     string
		meta         json.RawMessage
		rewrite      int64
		want         string
		caller, upTo string
	}{
		{"no params, modern", ``, meta, 0, `{"_meta":` + string(meta) + `}`, "", ""},
		{"no _meta, legacy", `{"name":"t"}`, nil, 0, `{"name":"t"}`, "", ""},
		{"no _meta, modern", `{"name":"t","arguments":{"a":1}}`, meta, 0, `{"_meta":` + string(meta) + `,"name":"t","arguments":{"a":1}}`, "", ""},
		{"caller protocol keys replaced", `{"name":"t","_meta":{"io.modelcontextprotocol/protocolVersion":"2099-01-01","traceparent":"00-x"}}`, meta,
			0, `{"name":"t","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"traceparent":"00-x"}}`, "", ""},
		{"legacy strips protocol keys", `{"_meta":{"io.modelcontextprotocol/clientInfo":{"name":"c"},"progressToken":7},"name":"t"}`, nil,
			0, `{"_meta":{"progressToken":7},"name":"t"}`, "7", "7"},
		{"legacy, only protocol keys", `{"name":"t","_meta":{"io.modelcontextprotocol/protocolVersion":"2025-11-25"}}`, nil, 0, `{"name":"t"}`, "", ""},
		{"token rewritten", `{"_meta":{"progressToken":"caller-1"},"name":"t"}`, nil, 5, `{"_meta":{"progressToken":"mcpgw-5"},"name":"t"}`, `"caller-1"`, `"mcpgw-5"`},
		{"shared stream, no token", `{"name":"t","_meta":{"traceparent":"x"}}`, nil, 5, `{"name":"t","_meta":{"traceparent":"x"}}`, "", ""},
		{"numeric token rewritten", `{"_meta":{"progressToken":7}}`, nil, 5, `{"_meta":{"progressToken":"mcpgw-5"}}`, "7", `"mcpgw-5"`},
		{"key text inside a string is not _meta", `{"arguments":{"q":"\"_meta\""}}`, nil, 0, `{"arguments":{"q":"\"_meta\""}}`, "", ""},
		{"an escaped _meta key is still _meta", `{"\u005fmeta":{"progressToken":"mcpgw-9"},"name":"t"}`, nil, 5, `{"_meta":{"progressToken":"mcpgw-5"},"name":"t"}`, `"mcpgw-9"`, `"mcpgw-5"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, err := prepareParams(json.RawMessage(tc.in), tc.meta, tc.rewrite)
			if err != nil {
				t.Fatal(err)
			}
			if !sameJSON(t, p.params, tc.want) || string(p.callerToken) != tc.caller || string(p.upToken) != tc.upTo {
				t.Fatalf("got %s (tokens %s → %s), want %s (tokens %s → %s)", p.params, p.callerToken, p.upToken, tc.want, tc.caller, tc.upTo)
			}
		})
	}
	for _, bad := range []string{`[1]`, `{"_meta":3}`, `{"_meta":{`, `{"_meta":{},"\u005fmeta":{"progressToken":1}}`} {
		if _, err := prepareParams(json.RawMessage(bad), meta, 0); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
}

func sameJSON(t *testing.T, got json.RawMessage, want string) bool {
	t.Helper()
	var a, b any
	if err := json.Unmarshal(got, &a); err != nil {
		t.Fatalf("invalid JSON %s", got)
	}
	if err := json.Unmarshal([]byte(want), &b); err != nil {
		t.Fatalf("invalid want %s", want)
	}
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return string(ja) == string(jb)
}

// TestPrepareParamsBuildsNoTokenItDoesNotUse: on a shared stream, params without a
// progressToken cost no more than on a stream of their own (the rewrite is built only for a
// token it replaces).
func TestPrepareParamsBuildsNoTokenItDoesNotUse(t *testing.T) {
	in := json.RawMessage(`{"name":"t","_meta":{"a":1}}`)
	allocs := func(rewrite int64) float64 {
		return allocstest.Least(200, func() {
			if _, err := prepareParams(in, nil, rewrite); err != nil {
				t.Fatal(err)
			}
		})
	}
	if own, shared := allocs(0), allocs(5); shared != own {
		t.Fatalf("params without a token: %v allocations on a shared stream, %v on its own", shared, own)
	}
}
