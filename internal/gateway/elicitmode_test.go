package gateway

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/mcpgw/mcpgw/internal/fault"
	"github.com/mcpgw/mcpgw/internal/jsonrpc"
	"github.com/mcpgw/mcpgw/internal/upstream"
)

// Elicitation modes against declared capabilities: {} alone is form only; a
// mode not declared is refused with -32602; a URL-mode request without an
// elicitationId gets one for a 2025-era caller.
func TestPrepareElicitation(t *testing.T) {
	const form = `{"mode":"form","message":"m","requestedSchema":{"type":"object"}}`
	const url = `{"mode":"url","message":"m","url":"https://example.com"}`
	const urlWithID = `{"mode":"url","message":"m","url":"https://example.com","elicitationId":"e1"}`
	for _, c := range []struct {
		name, caps, params string
		addID              bool
		refused            bool
		wantID             string // "" none, "*" any
	}{
		{"form to {}", `{"elicitation":{}}`, form, true, false, ""},
		{"url to {}", `{"elicitation":{}}`, url, true, true, ""},
		{"url to form only", `{"elicitation":{"form":{}}}`, url, true, true, ""},
		{"form to url only", `{"elicitation":{"url":{}}}`, form, true, true, ""},
		{"no mode means form", `{"elicitation":{"url":{}}}`, `{"message":"m"}`, true, true, ""},
		{"url to both, id added", `{"elicitation":{"form":{},"url":{}}}`, url, true, false, "*"},
		{"url keeps its id", `{"elicitation":{"url":{}}}`, urlWithID, true, false, "e1"},
		{"url, modern: no id added", `{"elicitation":{"url":{}}}`, url, false, false, ""},
		{"no elicitation at all", `{}`, form, true, true, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			out, err := PrepareElicitation(json.RawMessage(c.caps), json.RawMessage(c.params), c.addID)
			var je *jsonrpc.Error
			if c.refused {
				if !errors.As(err, &je) || je.Code != jsonrpc.CodeInvalidParams {
					t.Fatalf("want -32602, got %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			id, _ := jsonrpc.StringMember(out, "elicitationId")
			if (c.wantID == "*" && id == "") || (c.wantID != "*" && id != c.wantID) {
				t.Fatalf("elicitationId = %q, want %q (%s)", id, c.wantID, out)
			}
		})
	}
}

// A legacy upstream's -32042 never reaches a 2026-07-28 caller: a tool call
// gets an isError result naming the URL, other methods -32602; a legacy
// caller gets it as sent.
func TestURLElicitationRequiredMapping(t *testing.T) {
	err := &upstream.RPCError{Err: &jsonrpc.Error{Code: -32042, Message: "needs a browser",
		Data: json.RawMessage(`{"elicitations":[{"mode":"url","url":"https://example.com/auth","message":"Sign in","elicitationId":"x"}]}`)}}
	g := New(Config{})
	urlElicitationRequired := func(op *Operation, err error) (answered, bool) {
		a := answer(*op, g.failure(op, "s", err))
		return a, a.Err == nil || a.Err.Code != -32042
	}
	out, ok := urlElicitationRequired(&Operation{Surface: fault.Modern, Method: "tools/call"}, err)
	if !ok || out.Err != nil || !strings.Contains(string(out.Result), "https://example.com/auth") || !strings.Contains(string(out.Result), `"isError":true`) {
		t.Fatalf("tools/call: %+v", out)
	}
	out, ok = urlElicitationRequired(&Operation{Surface: fault.Modern, Method: "prompts/get"}, err)
	if !ok || out.Err == nil || out.Err.Code != jsonrpc.CodeInvalidParams {
		t.Fatalf("prompts/get: %+v", out)
	}
	if _, ok := urlElicitationRequired(&Operation{Method: "tools/call"}, err); ok {
		t.Fatal("a legacy caller's -32042 was rewritten")
	}
}
