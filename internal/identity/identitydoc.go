package identity

import (
	"bytes"
	"encoding/json"
	"errors"
)

// decodeIdentity maps a webhook's 200 body to a Caller. Keys are matched exactly (encoding/json
// alone would match "USER_ID" too); unknown keys are ignored. Errors name only our field names,
// never body text.
func decodeIdentity(raw []byte) (*Caller, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '{' {
		return nil, errors.New("not a JSON object")
	}
	var top map[string]json.RawMessage
	if json.Unmarshal(raw, &top) != nil {
		return nil, errors.New("not a JSON object")
	}
	c := &Caller{}
	for _, f := range [...]struct {
		name string
		dst  *string
	}{
		{"user_id", &c.UserID}, {"team_id", &c.TeamID}, {"org_id", &c.OrgID},
		{"end_user_id", &c.EndUserID}, {"user_role", &c.Role},
		{"key_alias", &c.KeyAlias}, {"team_alias", &c.TeamAlias},
	} {
		v, err := optString(top[f.name])
		if err != nil {
			return nil, errors.New(f.name + ": want a string or null")
		}
		*f.dst = v
	}
	perm, err := optObject(top["object_permission"])
	if err != nil {
		return nil, errors.New("object_permission: want an object or null")
	}
	if c.Servers, err = optStrings(perm["mcp_servers"]); err != nil {
		return nil, errors.New("object_permission.mcp_servers: want a list of strings or null")
	}
	if c.AccessGroups, err = optStrings(perm["mcp_access_groups"]); err != nil {
		return nil, errors.New("object_permission.mcp_access_groups: want a list of strings or null")
	}
	tools, err := optObject(perm["mcp_tool_permissions"])
	if err != nil {
		return nil, errors.New("object_permission.mcp_tool_permissions: want an object or null")
	}
	for server, v := range tools {
		list, err := optStrings(v)
		if err != nil {
			return nil, errors.New("object_permission.mcp_tool_permissions: want lists of strings or null")
		}
		if len(list) == 0 || server == "" {
			continue // LiteLLM: an empty entry restricts nothing
		}
		if c.ToolPermissions == nil {
			c.ToolPermissions = make(map[string][]string, len(tools))
		}
		c.ToolPermissions[server] = list
	}
	return c, nil
}

func isNull(v json.RawMessage) bool { return v == nil || string(v) == "null" }

func optString(v json.RawMessage) (string, error) {
	if isNull(v) {
		return "", nil
	}
	var s string
	if v[0] != '"' || json.Unmarshal(v, &s) != nil {
		return "", errors.New("not a string")
	}
	return s, nil
}

func optObject(v json.RawMessage) (map[string]json.RawMessage, error) {
	if isNull(v) {
		return nil, nil
	}
	var m map[string]json.RawMessage
	if v[0] != '{' || json.Unmarshal(v, &m) != nil {
		return nil, errors.New("not an object")
	}
	return m, nil
}

// optStrings decodes a list of strings; empty strings are dropped and an empty list is nil,
// because LiteLLM reads an empty permission list as "not set".
func optStrings(v json.RawMessage) ([]string, error) {
	if isNull(v) {
		return nil, nil
	}
	var list []string
	if v[0] != '[' || json.Unmarshal(v, &list) != nil {
		return nil, errors.New("not a list of strings")
	}
	out := list[:0]
	for _, s := range list {
		if s != "" {
			out = append(out, s)
		}
	}
	if len(out) == 0 {
		return nil, nil
	}
	return out, nil
}
