package upstream

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/mcpgw/mcpgw/internal/jsonrpc"
	"github.com/mcpgw/mcpgw/internal/mcp"
)

// prepared is a request's params as sent upstream.
type prepared struct {
	params      json.RawMessage
	callerToken json.RawMessage // progress token the caller asked for, if any
	upToken     json.RawMessage // progress token as sent upstream
}

// prepareParams returns params ready for the upstream. meta is the modern
// request _meta object (nil for legacy upstreams). When rewriteID is not 0, a
// caller progress token is replaced by sharedToken(rewriteID) so that tokens
// of different callers cannot collide on a shared stream (the token is built
// only for params that carry one). The caller's params are never modified.
func prepareParams(params json.RawMessage, meta json.RawMessage, rewriteID int64) (prepared, error) {
	trimmed := bytes.TrimSpace(params)
	if len(trimmed) == 0 || bytes.Equal(trimmed, []byte("null")) {
		trimmed = []byte("{}")
	}
	if trimmed[0] != '{' {
		return prepared{}, fmt.Errorf("params must be a JSON object")
	}
	if !bytes.Contains(trimmed, []byte(`"_meta"`)) && bytes.IndexByte(trimmed, '\\') < 0 {
		// No _meta member, not even spelled with escapes: splice ours in.
		return prepared{params: spliceMeta(trimmed, meta)}, nil
	}
	if !json.Valid(trimmed) {
		return prepared{}, fmt.Errorf("params are not valid JSON")
	}
	var callerMeta []byte
	metas := 0
	_ = jsonrpc.EachMember(trimmed, func(k string, v []byte) error {
		if k == "_meta" {
			metas++
			callerMeta = v
		}
		return nil
	})
	if metas > 1 {
		// Parsers disagree on which copy wins; the protocol keys and the
		// progress token must not be smuggled past the rewrite.
		return prepared{}, fmt.Errorf("params carry _meta more than once")
	}
	if callerMeta == nil {
		return prepared{params: spliceMeta(trimmed, meta)}, nil
	}
	if callerMeta[0] != '{' {
		return prepared{}, fmt.Errorf("params._meta must be an object")
	}
	// The new _meta: the client's own protocol keys (modern upstreams), then
	// every other key the caller sent, values as sent. The client owns the
	// protocol keys: it sets them for modern upstreams and strips them for
	// legacy ones. Only _meta is rebuilt; the rest of params is spliced.
	out := make([]byte, 0, len(callerMeta)+len(meta)+16)
	out = append(out, '{')
	add := func(k string, v []byte) {
		if len(out) > 1 {
			out = append(out, ',')
		}
		out = jsonrpc.AppendString(out, k)
		out = append(out, ':')
		out = append(out, v...)
	}
	// meta is the client's own (valid) object and callerMeta a member of
	// trimmed, checked above: neither needs another validity pass.
	if meta != nil {
		_ = jsonrpc.EachMember(meta, func(k string, v []byte) error { add(k, v); return nil })
	}
	p := prepared{}
	_ = jsonrpc.EachMember(callerMeta, func(k string, v []byte) error {
		switch k {
		case mcp.MetaProtocolVersion, mcp.MetaClientCapabilities, mcp.MetaClientInfo:
			return nil
		case mcp.MetaProgressToken:
			p.callerToken, p.upToken = v, v
			if rewriteID != 0 {
				v = sharedToken(rewriteID)
				p.upToken = v
			}
		}
		add(k, v)
		return nil
	})
	out = append(out, '}')
	var err error
	if len(out) == 2 {
		p.params, err = withoutMember(trimmed, "_meta")
	} else {
		p.params, err = jsonrpc.SetMember(trimmed, "_meta", out)
	}
	return p, err
}

// sharedToken is the progress token a request with id n carries upstream on
// a shared stream: "mcpgw-N", a JSON string.
func sharedToken(n int64) json.RawMessage {
	return append(strconv.AppendInt(append(make([]byte, 0, 32), `"mcpgw-`...), n, 10), '"')
}

// withoutMember drops a top-level member of a JSON object.
func withoutMember(obj json.RawMessage, key string) (json.RawMessage, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(obj, &m); err != nil {
		return nil, err
	}
	delete(m, key)
	return json.Marshal(m)
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
