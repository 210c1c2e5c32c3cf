package front

import (
	"encoding/json"
	"testing"
)

// TestGuardrailsChanged: only a difference in a guardrail entry is a change; null, [] and {}
// mean none; other metadata does not count.
func TestGuardrailsChanged(t *testing.T) {
	for _, c := range []struct {
		before, after string
		want          bool
	}{
		{``, `{}`, false},
		{`{"note":1}`, `{"note":2}`, false},
		{`{}`, `{"guardrails":[]}`, false},
		{`{"guardrails":null}`, `{"guardrails":{}}`, false},
		{`{"guardrails":["a"],"x":1}`, `{"x":2,"guardrails":["a"]}`, false},
		{`{}`, `{"guardrails":["a"]}`, true},
		{`{"guardrails":["a"]}`, `{}`, true},
		{`{"guardrails":["a"]}`, `{"guardrails":["a","b"]}`, true},
		{`{"guardrails":{"a":true}}`, `{"guardrails":{"a":false}}`, true},
		{`{}`, `{"disable_global_guardrails":true}`, true},
		{`{}`, `{"disable_global_guardrail":true}`, true},
		{`{}`, `{"opted_out_global_guardrails":["x"]}`, true},
		{`{"guardrails":{"modify_guardrails":false}}`, `{}`, true},
	} {
		if got := guardrailsChanged(json.RawMessage(c.before), json.RawMessage(c.after)); got != c.want {
			t.Errorf("guardrailsChanged(%s, %s) = %v, want %v", c.before, c.after, got, c.want)
		}
	}
}

// TestModifyGuardrailsFlag: modify_guardrails is read from LiteLLM's object form only.
func TestModifyGuardrailsFlag(t *testing.T) {
	for _, c := range []struct {
		metadata           string
		allowed, wantIsSet bool
	}{
		{``, false, false},
		{`{"guardrails":["modify_guardrails"]}`, false, false},
		{`{"guardrails":{"pii":true}}`, false, false},
		{`{"guardrails":{"modify_guardrails":true}}`, true, true},
		{`{"guardrails":{"modify_guardrails":false,"pii":true}}`, false, true},
		{`{"guardrails":{"modify_guardrails":"yes"}}`, false, false},
	} {
		allowed, set := modifyGuardrails(json.RawMessage(c.metadata))
		if allowed != c.allowed || set != c.wantIsSet {
			t.Errorf("modifyGuardrails(%s) = %v, %v; want %v, %v", c.metadata, allowed, set, c.allowed, c.wantIsSet)
		}
	}
}
