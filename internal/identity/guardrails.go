package identity

import (
	"bytes"
	"encoding/json"
	"slices"
	"unicode/utf8"
)

// MetadataGuardrails reads the guardrail names a key's or team's metadata asks for, LiteLLM's
// metadata.guardrails: a list of names, or an object {name: true|false} naming those that are
// on (its modify_guardrails entry is LiteLLM's permission flag, not a guardrail). Anything else
// (absent, another shape, non-string entries) names none.
func MetadataGuardrails(metadata json.RawMessage) []string {
	if !mayNameGuardrails(metadata) {
		return nil
	}
	var m struct {
		Guardrails json.RawMessage `json:"guardrails"`
	}
	if len(metadata) == 0 || json.Unmarshal(metadata, &m) != nil || len(m.Guardrails) == 0 {
		return nil
	}
	var list []any
	if json.Unmarshal(m.Guardrails, &list) == nil {
		var out []string
		for _, v := range list {
			if s, ok := v.(string); ok && s != "" && !slices.Contains(out, s) {
				out = append(out, s)
			}
		}
		return out
	}
	var on map[string]bool
	if json.Unmarshal(m.Guardrails, &on) != nil {
		return nil
	}
	var out []string
	for name, enabled := range on {
		if enabled && name != "" && name != "modify_guardrails" { // LiteLLM's permission flag, not a guardrail
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// mayNameGuardrails reports whether metadata may hold a guardrails member as encoding/json
// matches it (case-insensitively, Unicode folds included, escapes decoded). Read on every
// request with a store key, so metadata that cannot (ASCII, no escape, no "guardrails" in any
// case) is not decoded at all.
func mayNameGuardrails(metadata []byte) bool {
	const name = "guardrails"
	for i, b := range metadata {
		if b == '\\' || b >= utf8.RuneSelf {
			return true
		}
		if (b|0x20) == 'g' && len(metadata)-i >= len(name) && bytes.EqualFold(metadata[i:i+len(name)], []byte(name)) {
			return true
		}
	}
	return false
}
