package front

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mcpgw/mcpgw/internal/store"
)

// Bounds on one management request's fields.
const (
	maxKeyBody       = 1 << 20  // request body bytes
	maxIDLen         = 256      // key_alias, user_id, team_id, organization_id, list entries
	maxListLen       = 1000     // entries in one permission list, keys in one delete
	maxMetadataBytes = 64 << 10 // metadata as JSON
	maxDuration      = 100 * 365 * 24 * time.Hour
)

// badRequest is a request the caller must fix: its message names the field (param).
type badRequest struct {
	param, msg string
}

func (e *badRequest) Error() string { return e.msg }

func bad(param, format string, args ...any) error {
	return &badRequest{param: param, msg: fmt.Sprintf(format, args...)}
}

// generateFields are /key/generate's body fields, LiteLLM's names.
var generateFields = []string{"key_alias", "duration", "user_id", "team_id", "organization_id", "metadata",
	"guardrails", "object_permission", "rpm_limit", "max_parallel_requests", "mcp_rpm_limit", "max_budget", "budget_duration"}

var permissionFields = []string{"mcp_servers", "mcp_access_groups", "mcp_tool_permissions", "mcp_toolsets", "blocked_tools"}

// decodeObject reads one JSON object from body whose keys must be spelled exactly as in
// allowed (encoding/json alone would also take "KEY_ALIAS"), with nothing after it.
func decodeObject(param string, body []byte, allowed []string) (map[string]json.RawMessage, error) {
	body = bytes.TrimSpace(body)
	where := "request body"
	if param != "" {
		where = param
	}
	if len(body) == 0 || body[0] != '{' {
		return nil, bad(param, "%s: want a JSON object", where)
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	var m map[string]json.RawMessage
	if err := dec.Decode(&m); err != nil {
		return nil, bad(param, "%s: malformed JSON", where)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, bad(param, "%s: unexpected data after the JSON object", where)
	}
	for k := range m {
		if !slices.Contains(allowed, k) {
			return nil, bad(k, "unknown field %q in %s (known: %s)", truncate(k), where, strings.Join(allowed, ", "))
		}
	}
	return m, nil
}

func truncate(s string) string {
	if len(s) > 64 {
		return s[:64] + "..."
	}
	return s
}

func isNull(v json.RawMessage) bool { return v == nil || string(v) == "null" }

// optID decodes an optional bounded string field.
func optID(m map[string]json.RawMessage, name string) (string, error) {
	v := m[name]
	if isNull(v) {
		return "", nil
	}
	var s string
	if v[0] != '"' || json.Unmarshal(v, &s) != nil {
		return "", bad(name, "%s: want a string", name)
	}
	if len(s) > maxIDLen {
		return "", bad(name, "%s: longer than %d bytes", name, maxIDLen)
	}
	return s, nil
}

// optCount decodes an optional non-negative integer field.
func optCount(m map[string]json.RawMessage, name string) (*int64, error) {
	v := m[name]
	if isNull(v) {
		return nil, nil
	}
	n, err := strconv.ParseInt(string(v), 10, 64)
	if err != nil || n < 0 {
		return nil, bad(name, "%s: want a non-negative integer", name)
	}
	return &n, nil
}

// optStrings decodes an optional list of bounded strings; empty strings are kept out.
func optStrings(param string, v json.RawMessage) ([]string, error) {
	if isNull(v) {
		return nil, nil
	}
	var list []string
	if v[0] != '[' || json.Unmarshal(v, &list) != nil {
		return nil, bad(param, "%s: want a list of strings", param)
	}
	if len(list) > maxListLen {
		return nil, bad(param, "%s: more than %d entries", param, maxListLen)
	}
	out := list[:0]
	for _, s := range list {
		if len(s) > maxIDLen {
			return nil, bad(param, "%s: an entry is longer than %d bytes", param, maxIDLen)
		}
		if s != "" {
			out = append(out, s)
		}
	}
	if len(out) == 0 {
		return nil, nil
	}
	return out, nil
}

// decodePermission decodes object_permission with LiteLLM's five fields.
func decodePermission(v json.RawMessage) (store.Permission, error) {
	var p store.Permission
	if isNull(v) {
		return p, nil
	}
	m, err := decodeObject("object_permission", v, permissionFields)
	if err != nil {
		return p, err
	}
	for _, f := range [...]struct {
		name string
		dst  *[]string
	}{{"mcp_servers", &p.MCPServers}, {"mcp_access_groups", &p.MCPAccessGroups},
		{"mcp_toolsets", &p.MCPToolsets}, {"blocked_tools", &p.BlockedTools}} {
		if *f.dst, err = optStrings("object_permission."+f.name, m[f.name]); err != nil {
			return p, err
		}
	}
	// Toolsets need a toolset registry the gateway does not have; a permission it would store
	// but not enforce is refused: a key must never look more restricted than it is.
	if len(p.MCPToolsets) > 0 {
		return p, bad("object_permission.mcp_toolsets", "object_permission.mcp_toolsets is not supported by this gateway (it has no toolset registry), so it is refused rather than stored; use mcp_tool_permissions to allow only named tools")
	}
	const tp = "object_permission.mcp_tool_permissions"
	if v := m["mcp_tool_permissions"]; !isNull(v) {
		var raw map[string]json.RawMessage
		if v[0] != '{' || json.Unmarshal(v, &raw) != nil {
			return p, bad(tp, "%s: want an object {server: [tool, ...]}", tp)
		}
		if len(raw) > maxListLen {
			return p, bad(tp, "%s: more than %d servers", tp, maxListLen)
		}
		for server, tools := range raw {
			list, err := optStrings(tp, tools)
			if err != nil {
				return p, err
			}
			if len(server) > maxIDLen {
				return p, bad(tp, "%s: a server name is longer than %d bytes", tp, maxIDLen)
			}
			if server == "" || list == nil {
				continue // an empty entry restricts nothing
			}
			if p.MCPToolPermissions == nil {
				p.MCPToolPermissions = make(map[string][]string, len(raw))
			}
			p.MCPToolPermissions[server] = list
		}
	}
	return p, nil
}

// parseDuration reads LiteLLM's key durations: a positive integer and a unit, s, m, h, d, w
// or mo (30 days), e.g. "30d", "1h".
func parseDuration(s string) (time.Duration, error) {
	units := []struct {
		suffix string
		d      time.Duration
	}{{"mo", 30 * 24 * time.Hour}, {"s", time.Second}, {"m", time.Minute}, {"h", time.Hour},
		{"d", 24 * time.Hour}, {"w", 7 * 24 * time.Hour}}
	for _, u := range units {
		num, ok := strings.CutSuffix(s, u.suffix)
		if !ok {
			continue
		}
		n, err := strconv.ParseInt(num, 10, 64)
		if err != nil || n <= 0 || num[0] == '+' || time.Duration(n) > maxDuration/u.d {
			break
		}
		return time.Duration(n) * u.d, nil
	}
	return 0, bad("duration", `duration: want a positive number and a unit (s, m, h, d, w or mo), e.g. "30d", at most 100 years`)
}

// decodeGenerate decodes a /key/generate body into the key to store; now dates its expiry.
func decodeGenerate(body []byte, now time.Time) (store.NewKey, error) {
	m, err := decodeObject("", body, generateFields)
	if err != nil {
		return store.NewKey{}, err
	}
	return decodeKeyFields(m, now)
}

// decodeKeyFields decodes the fields /key/generate and /key/update share.
func decodeKeyFields(m map[string]json.RawMessage, now time.Time) (store.NewKey, error) {
	var nk store.NewKey
	var err error
	for _, f := range [...]struct {
		name string
		dst  *string
	}{{"key_alias", &nk.Alias}, {"user_id", &nk.UserID}, {"team_id", &nk.TeamID}, {"organization_id", &nk.OrganizationID}} {
		if *f.dst, err = optID(m, f.name); err != nil {
			return nk, err
		}
	}
	dur, err := optID(m, "duration")
	if err != nil {
		return nk, err
	}
	if dur != "" {
		d, err := parseDuration(dur)
		if err != nil {
			return nk, err
		}
		exp := now.Add(d)
		nk.Expires = &exp
	}
	if v := m["metadata"]; !isNull(v) {
		if v[0] != '{' || !json.Valid(v) {
			return nk, bad("metadata", "metadata: want a JSON object")
		}
		if len(v) > maxMetadataBytes {
			return nk, bad("metadata", "metadata: larger than %d bytes", maxMetadataBytes)
		}
		var compact bytes.Buffer
		_ = json.Compact(&compact, v)
		nk.Metadata = compact.Bytes()
	}
	if nk.Metadata, _, _, err = decodeGuardrails(m, nk.Metadata); err != nil {
		return nk, err
	}
	if nk.Permission, err = decodePermission(m["object_permission"]); err != nil {
		return nk, err
	}
	if nk.RPMLimit, err = optCount(m, "rpm_limit"); err != nil {
		return nk, err
	}
	if nk.MaxParallelRequests, err = optCount(m, "max_parallel_requests"); err != nil {
		return nk, err
	}
	if nk.MaxBudget, err = optBudget(m, "max_budget"); err != nil {
		return nk, err
	}
	if nk.BudgetDuration, err = optBudgetDuration(m, "budget_duration"); err != nil {
		return nk, err
	}
	nk.MCPRPMLimit, err = decodeLimits(m["mcp_rpm_limit"])
	return nk, err
}

// optBudget decodes an optional max_budget: a finite number ≥ 0.
func optBudget(m map[string]json.RawMessage, name string) (*float64, error) {
	v := m[name]
	if isNull(v) {
		return nil, nil
	}
	n, err := strconv.ParseFloat(string(v), 64)
	if err != nil || n < 0 || math.IsInf(n, 0) || v[0] == '"' {
		return nil, bad(name, "%s: want a number ≥ 0", name)
	}
	return &n, nil
}

// optBudgetDuration decodes an optional budget_duration: one of LiteLLM's durations
// ("30s", "30m", "30h", "30d", "2w", "1mo"); null or absent is none.
func optBudgetDuration(m map[string]json.RawMessage, name string) (string, error) {
	s, err := optID(m, name)
	if err != nil {
		return "", err
	}
	if _, err := store.ParseDuration(s); err != nil {
		return "", bad(name, "%s: %v", name, err)
	}
	return strings.TrimSpace(s), nil
}

// decodeLimits decodes mcp_rpm_limit {server: n}.
func decodeLimits(v json.RawMessage) (map[string]int64, error) {
	if isNull(v) {
		return nil, nil
	}
	var raw map[string]json.RawMessage
	if v[0] != '{' || json.Unmarshal(v, &raw) != nil || len(raw) > maxListLen {
		return nil, bad("mcp_rpm_limit", "mcp_rpm_limit: want an object {server: non-negative integer}")
	}
	out := make(map[string]int64, len(raw))
	for server := range raw {
		n, err := optCount(raw, server)
		if err != nil || n == nil || server == "" || len(server) > maxIDLen {
			return nil, bad("mcp_rpm_limit", "mcp_rpm_limit: want an object {server: non-negative integer}")
		}
		out[server] = *n
	}
	if len(out) == 0 {
		return nil, nil
	}
	return out, nil
}

// decodeUpdate decodes a /key/update body: "key" (required) and any /key/generate field. A
// field present changes the key (null clears it; "duration" counts from now, null means no
// expiry); a field absent is kept.
func decodeUpdate(body []byte, now time.Time) (string, func(*store.Key), error) {
	m, err := decodeObject("", body, append([]string{"key"}, generateFields...))
	if err != nil {
		return "", nil, err
	}
	ref, err := optID(m, "key")
	if err == nil && ref == "" {
		err = bad("key", "key: required")
	}
	if err != nil {
		return "", nil, err
	}
	token, err := tokenOf("key", ref)
	if err != nil {
		return "", nil, err
	}
	delete(m, "key")
	nk, err := decodeKeyFields(m, now)
	if err != nil {
		return "", nil, err
	}
	return token, keyChange(m, nk), nil
}

// keyChange returns the change a decoded /key/update or /key/regenerate body makes: every
// field present in m is set from nk (null clears it); the others are kept.
func keyChange(m map[string]json.RawMessage, nk store.NewKey) func(*store.Key) {
	return func(k *store.Key) {
		for name := range m {
			switch name {
			case "key_alias":
				k.Alias = nk.Alias
			case "duration":
				k.Expires = nk.Expires
			case "user_id":
				k.UserID = nk.UserID
			case "team_id":
				k.TeamID = nk.TeamID
			case "organization_id":
				k.OrganizationID = nk.OrganizationID
			case "metadata":
				k.Metadata = nk.Metadata
			case "guardrails":
				k.Metadata = updatedGuardrails(m, nk.Metadata, k.Metadata)
			case "object_permission":
				k.Permission = nk.Permission
			case "rpm_limit":
				k.RPMLimit = nk.RPMLimit
			case "max_parallel_requests":
				k.MaxParallelRequests = nk.MaxParallelRequests
			case "mcp_rpm_limit":
				k.MCPRPMLimit = nk.MCPRPMLimit
			case "max_budget":
				k.MaxBudget = nk.MaxBudget
			case "budget_duration":
				k.Budget.Duration = nk.BudgetDuration
			}
		}
	}
}

// listParams are /key/list's query parameters.
var listParams = []string{"page", "size", "user_id", "team_id", "organization_id", "key_alias", "return_full_object"}

// maxPageSize bounds /key/list's size.
const maxPageSize = 100

// decodeList decodes /key/list's query: page (from 1, default 1), size (1 to 100, default 10),
// the filters and return_full_object (true: key objects; default: tokens).
func decodeList(q url.Values) (store.ListQuery, int, bool, error) {
	var lq store.ListQuery
	offset, limit, page, err := decodePage(q, listParams, 10)
	if err != nil {
		return lq, 0, false, err
	}
	lq.Offset, lq.Limit = offset, limit
	lq.UserID, lq.TeamID, lq.OrganizationID, lq.Alias = q.Get("user_id"), q.Get("team_id"), q.Get("organization_id"), q.Get("key_alias")
	full := false
	switch q.Get("return_full_object") {
	case "", "false":
	case "true":
		full = true
	default:
		return lq, 0, false, bad("return_full_object", "return_full_object: want true or false")
	}
	return lq, page, full, nil
}

// tokenOf turns a key reference (the "sk-" secret or its token, the hex SHA-256) into the token.
func tokenOf(param, ref string) (string, error) {
	switch {
	case strings.HasPrefix(ref, store.KeyPrefix):
		return store.Hash(ref), nil
	case len(ref) == 64:
		if b, err := hex.DecodeString(ref); err == nil && len(b) == 32 && strings.ToLower(ref) == ref {
			return ref, nil
		}
	}
	return "", bad(param, "%s: want a key (sk-...) or its token (64 lower-case hex digits)", param)
}

// decodeKeyRef decodes {"key": "..."} (/key/block, /key/unblock) into the key's token.
func decodeKeyRef(body []byte) (string, error) {
	m, err := decodeObject("", body, []string{"key"})
	if err != nil {
		return "", err
	}
	ref, err := optID(m, "key")
	if err == nil && ref == "" {
		err = bad("key", "key: required")
	}
	if err != nil {
		return "", err
	}
	return tokenOf("key", ref)
}

// decodeDelete decodes {"keys": [...]} (/key/delete) into tokens, without duplicates.
func decodeDelete(body []byte) ([]string, error) {
	m, err := decodeObject("", body, []string{"keys"})
	if err != nil {
		return nil, err
	}
	refs, err := optStrings("keys", m["keys"])
	if err != nil {
		return nil, err
	}
	if len(refs) == 0 {
		return nil, bad("keys", "keys: want a non-empty list of keys or tokens")
	}
	tokens := make([]string, 0, len(refs))
	for _, ref := range refs {
		t, err := tokenOf("keys", ref)
		if err != nil {
			return nil, err
		}
		if !slices.Contains(tokens, t) {
			tokens = append(tokens, t)
		}
	}
	return tokens, nil
}
