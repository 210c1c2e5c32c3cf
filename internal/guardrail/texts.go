package guardrail

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"
)

// leaves are the string values of a JSON document in a fixed order (object members sorted by
// name, array items in order): the texts a guardrail is shown, and the places its rewritten
// texts go back to, one for one.
type leaves struct {
	root  any
	texts []string
}

// stringLeaves decodes raw (numbers kept as written) and collects its strings.
func stringLeaves(raw json.RawMessage) (*leaves, error) {
	l := &leaves{}
	if len(bytes.TrimSpace(raw)) == 0 {
		return l, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&l.root); err != nil {
		return nil, err
	}
	walk(l.root, func(s string) string { l.texts = append(l.texts, s); return s })
	return l, nil
}

// rewrite puts texts in place of the strings collected, in order, and encodes the result.
func (l *leaves) rewrite(texts []string) (json.RawMessage, error) {
	if len(texts) != len(l.texts) {
		return nil, errors.New("the guardrail answered a different number of texts")
	}
	i := 0
	l.root = walk(l.root, func(string) string { i++; return texts[i-1] })
	return json.Marshal(l.root)
}

// walk calls f on every string of v in the fixed order and returns v with f's answers in
// their place.
func walk(v any, f func(string) string) any {
	switch t := v.(type) {
	case string:
		return f(t)
	case []any:
		for i := range t {
			t[i] = walk(t[i], f)
		}
	case map[string]any:
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			t[k] = walk(t[k], f)
		}
	}
	return v
}

// resultTexts are a tools/call result's texts: each text content item's text, then the
// strings of structuredContent. set puts rewritten texts back.
type resultTexts struct {
	result  map[string]json.RawMessage
	content []map[string]json.RawMessage
	textAt  []int // content indexes of text items
	structd *leaves
	texts   []string
}

func parseResult(raw json.RawMessage) (*resultTexts, error) {
	r := &resultTexts{}
	if err := json.Unmarshal(raw, &r.result); err != nil {
		return nil, err
	}
	if c, ok := r.result["content"]; ok {
		if err := json.Unmarshal(c, &r.content); err != nil {
			return nil, err
		}
	}
	for i, item := range r.content {
		var typ, text string
		_ = json.Unmarshal(item["type"], &typ)
		if typ != "text" || json.Unmarshal(item["text"], &text) != nil {
			continue
		}
		r.textAt = append(r.textAt, i)
		r.texts = append(r.texts, text)
	}
	if sc, ok := r.result["structuredContent"]; ok {
		l, err := stringLeaves(sc)
		if err != nil {
			return nil, err
		}
		r.structd = l
		r.texts = append(r.texts, l.texts...)
	}
	return r, nil
}

// set encodes the result with texts in place of its texts.
func (r *resultTexts) set(texts []string) (json.RawMessage, error) {
	if len(texts) != len(r.texts) {
		return nil, errors.New("the guardrail answered a different number of texts")
	}
	for j, i := range r.textAt {
		b, err := json.Marshal(texts[j])
		if err != nil {
			return nil, err
		}
		r.content[i]["text"] = b
	}
	if len(r.textAt) > 0 {
		b, err := json.Marshal(r.content)
		if err != nil {
			return nil, err
		}
		r.result["content"] = b
	}
	if r.structd != nil {
		b, err := r.structd.rewrite(texts[len(r.textAt):])
		if err != nil {
			return nil, err
		}
		r.result["structuredContent"] = b
	}
	return json.Marshal(r.result)
}
