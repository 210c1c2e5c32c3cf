package front

import (
	"bytes"
	"encoding/json"
)

// withGuardrails is metadata with its guardrails entry set to names (removed when names is
// empty): a key's or team's top-level guardrails field is kept where LiteLLM keeps it,
// metadata.guardrails, which is where the gateway reads it (identity.MetadataGuardrails).
func withGuardrails(metadata json.RawMessage, names []string) (json.RawMessage, error) {
	m := map[string]json.RawMessage{}
	if len(metadata) > 0 {
		if err := json.Unmarshal(metadata, &m); err != nil || m == nil {
			m = map[string]json.RawMessage{}
		}
	}
	if len(names) == 0 {
		delete(m, "guardrails")
	} else {
		b, _ := json.Marshal(names)
		m["guardrails"] = b
	}
	out, _ := json.Marshal(m)
	if len(out) > maxMetadataBytes {
		return nil, bad("guardrails", "metadata with guardrails: larger than %d bytes", maxMetadataBytes)
	}
	return out, nil
}

// decodeGuardrails reads the optional top-level guardrails field of m (a list of guardrail
// names) into metadata; present reports whether m carries it.
func decodeGuardrails(m map[string]json.RawMessage, metadata json.RawMessage) (out json.RawMessage, names []string, present bool, err error) {
	v, ok := m["guardrails"]
	if !ok {
		return metadata, nil, false, nil
	}
	if names, err = optStrings("guardrails", v); err != nil {
		return nil, nil, true, err
	}
	out, err = withGuardrails(bytes.TrimSpace(metadata), names)
	return out, names, true, err
}

// updatedGuardrails is the metadata an update whose body m carries guardrails leaves: the
// body's metadata (decoded, guardrails merged) when it sets metadata too, else current with
// the body's guardrails set. A merge that would pass the metadata bound keeps current.
func updatedGuardrails(m map[string]json.RawMessage, decoded, current json.RawMessage) json.RawMessage {
	if _, set := m["metadata"]; set {
		return decoded
	}
	names, err := optStrings("guardrails", m["guardrails"])
	if err != nil {
		return current
	}
	merged, err := withGuardrails(current, names)
	if err != nil {
		return current
	}
	return merged
}
