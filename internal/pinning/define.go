package pinning

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
)

// The parts of a tool definition whose changes are told apart.
const (
	PartDescription  = "description"
	PartInputSchema  = "input_schema"
	PartOutputSchema = "output_schema"
	PartAnnotations  = "annotations"
	PartTitle        = "title"
)

// members maps each part to the tool member it digests.
var members = []struct{ part, member string }{
	{PartDescription, "description"},
	{PartTitle, "title"},
	{PartInputSchema, "inputSchema"},
	{PartOutputSchema, "outputSchema"},
	{PartAnnotations, "annotations"},
}

// Definition is one tool's definition as digests: Digest of the whole (name and every part),
// Parts of each part present.
type Definition struct {
	Name        string
	Digest      string
	Parts       map[string]string
	Description string // for guardrails; never logged
}

// Define digests a tools/list item: its name, description, title, inputSchema, outputSchema
// and annotations, each as canonical JSON (object members sorted, numbers as written,
// insignificant whitespace dropped), so a re-serialised but equal definition has the same
// digest.
func Define(item json.RawMessage) (Definition, error) {
	var tool map[string]json.RawMessage
	if err := json.Unmarshal(item, &tool); err != nil {
		return Definition{}, fmt.Errorf("pinning: a tool is not an object: %w", err)
	}
	var d Definition
	if err := json.Unmarshal(tool["name"], &d.Name); err != nil || d.Name == "" {
		return Definition{}, errors.New("pinning: a tool without a name")
	}
	_ = json.Unmarshal(tool["description"], &d.Description)
	d.Parts = make(map[string]string, len(members))
	whole := map[string]any{"name": d.Name}
	for _, m := range members {
		raw, ok := tool[m.member]
		if !ok || bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
			continue
		}
		canon, v, err := canonical(raw)
		if err != nil {
			return Definition{}, fmt.Errorf("pinning: tool %q: %s: %w", d.Name, m.member, err)
		}
		d.Parts[m.part] = digest(canon)
		whole[m.member] = v
	}
	canon, err := json.Marshal(whole)
	if err != nil {
		return Definition{}, fmt.Errorf("pinning: tool %q: %w", d.Name, err)
	}
	d.Digest = digest(canon)
	return d, nil
}

// canonical re-encodes raw with object members sorted and numbers kept as written.
func canonical(raw json.RawMessage) ([]byte, any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, nil, err
	}
	out, err := json.Marshal(v)
	return out, v, err
}

func digest(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// Changed names the parts whose digests differ between was and now, sorted.
func Changed(was, now map[string]string) []string {
	var out []string
	for _, m := range members {
		if was[m.part] != now[m.part] {
			out = append(out, m.part)
		}
	}
	slices.Sort(out)
	return out
}
