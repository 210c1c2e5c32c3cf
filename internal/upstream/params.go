package upstream

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/mcpgw/mcpgw/internal/mcp"
)

// prepared is a request's params as sent upstream.
type prepared struct {
	params      json.RawMessage
	callerToken json.RawMessage // progress token the caller asked for, if any
	upToken     json.RawMessage // progress token as sent upstream
}

// prepareParams returns params ready for the upstream. meta is the modern
// request _meta object (nil for legacy upstreams). When rewriteToken is set, a
// caller progress token is replaced by it so that tokens of different callers
// cannot collide on a shared stream. The caller's params are never modified.
func prepareParams(params json.RawMessage, meta json.RawMessage, rewriteToken json.RawMessage) (prepared, error) {
	trimmed := bytes.TrimSpace(params)
	if len(trimmed) == 0 || bytes.Equal(trimmed, []byte("null")) {
		trimmed = []byte("{}")
	}
	if trimmed[0] != '{' {
		return prepared{}, fmt.Errorf("params must be a JSON object")
	}
	if !bytes.Contains(trimmed, []byte(`"_meta"`)) {
		return prepared{params: spliceMeta(trimmed, meta)}, nil
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(trimmed, &top); err != nil {
		return prepared{}, fmt.Errorf("params: %w", err)
	}
	rawMeta, ok := top["_meta"]
	if !ok {
		return prepared{params: spliceMeta(trimmed, meta)}, nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(rawMeta, &m); err != nil || m == nil {
		return prepared{}, fmt.Errorf("params._meta must be an object")
	}
	// The client owns the protocol keys: it sets them for modern upstreams
	// and strips them for legacy ones.
	for _, k := range [...]string{mcp.MetaProtocolVersion, mcp.MetaClientCapabilities, mcp.MetaClientInfo} {
		delete(m, k)
	}
	if meta != nil {
		var own map[string]json.RawMessage
		if err := json.Unmarshal(meta, &own); err != nil {
			return prepared{}, err
		}
		for k, v := range own {
			m[k] = v
		}
	}
	p := prepared{}
	if tok, ok := m[mcp.MetaProgressToken]; ok {
		p.callerToken, p.upToken = tok, tok
		if rewriteToken != nil {
			m[mcp.MetaProgressToken] = rewriteToken
			p.upToken = rewriteToken
		}
	}
	if len(m) == 0 {
		delete(top, "_meta")
	} else {
		b, err := json.Marshal(m)
		if err != nil {
			return prepared{}, err
		}
		top["_meta"] = b
	}
	out, err := json.Marshal(top)
	if err != nil {
		return prepared{}, err
	}
	p.params = out
	return p, nil
}

// spliceMeta inserts "_meta":meta as the first member of obj, which has no
// _meta member of its own. A nil meta returns obj unchanged.
func spliceMeta(obj, meta json.RawMessage) json.RawMessage {
	if meta == nil {
		return obj
	}
	out := make([]byte, 0, len(obj)+len(meta)+10)
	out = append(out, `{"_meta":`...)
	out = append(out, meta...)
	rest := bytes.TrimSpace(obj[1:])
	if len(rest) > 0 && rest[0] != '}' {
		out = append(out, ',')
	}
	return append(out, rest...)
}
