package front

import (
	"encoding/json"

	"github.com/mcpgw/mcpgw/internal/jsonrpc"
	"github.com/mcpgw/mcpgw/internal/mcp"
)

// Caching hints a modern caller gets when the upstream gave none (a
// 2025-era server) or gave invalid ones: immediately stale and reusable
// only by the same caller.
const (
	defaultTTLMs      = "0"
	defaultCacheScope = `"` + mcp.CacheScopePrivate + `"`
)

// withCacheHints makes a complete result of a cacheable method carry valid
// ttlMs and cacheScope, as the 2026-07-28 schema requires: the upstream's
// own when valid, else defaultTTLMs and defaultCacheScope. Results that are
// not complete (input_required) carry none and are returned unchanged.
func withCacheHints(res json.RawMessage) json.RawMessage {
	if len(res) == 0 || res[0] != '{' {
		return res
	}
	// One pass finds the three (the first of a name twice).
	var vals [3][]byte
	if jsonrpc.FirstMembers(res, []string{"resultType", "ttlMs", "cacheScope"}, vals[:]) != nil {
		return res
	}
	if rt, ok := jsonrpc.Unquote(vals[0]); ok && rt != mcp.ResultTypeComplete {
		return res
	}
	if !validTTL(vals[1]) {
		if b, err := jsonrpc.SetMember(res, "ttlMs", []byte(defaultTTLMs)); err == nil {
			res = b
		}
	}
	if scope, _ := jsonrpc.Unquote(vals[2]); !mcp.ValidCacheScope(scope) {
		if b, err := jsonrpc.SetMember(res, "cacheScope", []byte(defaultCacheScope)); err == nil {
			res = b
		}
	}
	return res
}

// validTTL reports a JSON integer >= 0 below 10^15 (a safe integer for
// every client).
func validTTL(raw json.RawMessage) bool {
	if len(raw) == 0 || len(raw) > 15 {
		return false
	}
	for _, c := range raw {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}
