package identity

import (
	"encoding/json"
	"slices"
)

// MetadataGuardrails reads the guardrail names a key's or team's metadata asks for, LiteLLM's
// metadata.guardrails: a list of names, or an object {name: true|false} naming those that are
// on (its modify_guardrails entry is LiteLLM's permission flag, not a guardrail). Anything else
// (absent, another shape, non-string entries) names none.
func MetadataGuardrails(metadata json.RawMessage) []string {
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
