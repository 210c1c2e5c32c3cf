package front

import (
	"bytes"
	"encoding/json"
	"slices"

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

// modernKeys are the members of a result that answering a 2026-07-28 caller
// reads and may set, by their index in modernEdits.
const (
	keyResultType = iota
	keyTTL
	keyScope
	keyMeta
	numModernKeys
)

// appendModern appends res as a 2026-07-28 caller gets it: with resultType
// "complete" when it has none and the gateway's serverInfo in its _meta and,
// when hints is set (a cacheable method) and the result is complete, valid
// ttlMs and cacheScope, as the 2026-07-28 schema requires: the upstream's
// own when valid, else defaultTTLMs and defaultCacheScope. One scan finds the
// members (a duplicate is read at its first and replaced at its last, as
// Member and SetMember do) and the result is written once: a listing is
// the largest answer there is, and setting each member in a copy of its own
// copied it three times. A result that is not an object is appended as is.
func (h *MCP) appendModern(dst []byte, res json.RawMessage, hints bool) []byte {
	keys := [numModernKeys]string{"resultType", "ttlMs", "cacheScope", "_meta"}
	var first, last [numModernKeys]jsonrpc.Span
	if jsonrpc.MemberSpans(res, keys[:], first[:], last[:]) != nil {
		return append(dst, res...)
	}
	var set [numModernKeys][]byte // new values; nil: unchanged
	rt, isString := jsonrpc.Unquote(first[keyResultType].Of(res))
	if hints && res[0] == '{' && (!isString || rt == mcp.ResultTypeComplete) {
		if !validTTL(first[keyTTL].Of(res)) {
			set[keyTTL] = []byte(defaultTTLMs)
		}
		if scope, _ := jsonrpc.Unquote(first[keyScope].Of(res)); !mcp.ValidCacheScope(scope) {
			set[keyScope] = []byte(defaultCacheScope)
		}
	}
	if first[keyResultType].Start < 0 {
		set[keyResultType] = []byte(`"complete"`)
	}
	meta := first[keyMeta].Of(res)
	if len(meta) == 0 || meta[0] != '{' {
		meta = []byte(`{}`)
	}
	if m, err := jsonrpc.SetMember(meta, mcp.MetaServerInfo, h.serverInfo); err == nil {
		set[keyMeta] = m
	}
	return spliceMembers(dst, res, keys[:], last[:], set[:])
}

// spliceMembers appends obj, a JSON object, with its member keys[i] set to
// set[i] where that is not nil: in place at last[i] when obj has it, else
// added at the end, in the order ttlMs, cacheScope, resultType, _meta (the
// order the members were once added in one by one).
func spliceMembers(dst, obj []byte, keys []string, last []jsonrpc.Span, set [][]byte) []byte {
	order := [numModernKeys]int{keyTTL, keyScope, keyResultType, keyMeta}
	size, adds := len(obj), false
	for i, v := range set {
		switch {
		case v == nil:
		case last[i].Start >= 0:
			size += len(v) - (last[i].End - last[i].Start)
		default:
			size += len(keys[i]) + len(v) + 4
			adds = true
		}
	}
	start, end := 0, len(obj)
	if adds { // as SetMember adds: after what precedes the closing brace, spaces trimmed
		body := bytes.TrimSpace(obj[:bytes.LastIndexByte(obj, '}')])
		start = len(obj) - len(bytes.TrimLeft(obj, " \t\r\n"))
		end = start + len(body)
	}
	dst = slices.Grow(dst, size)
	// The replacements, by where they are (they do not overlap: each is a
	// different member).
	at := start
	for {
		next := -1
		for i, v := range set {
			if v != nil && last[i].Start >= at && (next < 0 || last[i].Start < last[next].Start) {
				next = i
			}
		}
		if next < 0 {
			break
		}
		dst = append(append(dst, obj[at:last[next].Start]...), set[next]...)
		at = last[next].End
	}
	dst = append(dst, obj[at:end]...)
	if !adds {
		return dst
	}
	members := end-start > 1 // more than the opening brace
	for _, i := range order {
		if set[i] == nil || last[i].Start >= 0 {
			continue
		}
		if members {
			dst = append(dst, ',')
		}
		members = true
		dst = jsonrpc.AppendString(dst, keys[i])
		dst = append(append(dst, ':'), set[i]...)
	}
	return append(dst, '}')
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
