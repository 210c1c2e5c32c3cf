package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// requestOnlyKeys are fields of LiteLLM's server objects that describe a
// stored row or its health, not how to reach the server; a request may carry
// them (an admin UI posts back what it read) and they are dropped unread.
var requestOnlyKeys = map[string]bool{
	"status": true, "last_health_check": true, "health_check_error": true,
	"created_at": true, "updated_at": true, "created_by": true, "updated_by": true,
	"teams": true, "server_name": true,
}

// ParseServerRequest reads one server from a JSON object shaped as LiteLLM's
// NewMCPServerRequest (server_name, alias, url, transport, credentials{…},
// mcp_access_groups, …) and validates it by exactly the rules a YAML
// mcp_servers entry follows, os.environ/NAME references included. The
// server's name is server_name, else alias, else server_id, else
// fallbackName. Fields that are null count as absent; credentials' entries
// (auth_value, client_id, client_secret, scopes, …) count as the server's
// own keys, mcp_access_groups as access_groups and spec_version as
// protocol_version unless those are given. The problems (warnings included)
// are returned in every case; the error is non-nil when the body is not one
// JSON object or a problem is an error. Neither ever holds a secret value.
func ParseServerRequest(body []byte, fallbackName string, opts Options) (Server, []Problem, error) {
	fields, err := decodeObject(body)
	if err != nil {
		return Server{}, nil, err
	}
	name := fallbackName
	for _, k := range []string{"server_id", "alias", "server_name"} {
		var s string
		if json.Unmarshal(fields[k], &s) == nil && strings.TrimSpace(s) != "" {
			name = strings.TrimSpace(s)
		}
	}
	if raw, ok := fields["credentials"]; ok {
		delete(fields, "credentials")
		creds, err := decodeObject(raw)
		if err != nil {
			return Server{}, nil, errors.New("credentials must be a JSON object")
		}
		for k, v := range creds {
			if _, set := fields[k]; !set {
				fields[k] = v
			}
		}
	}
	rename(fields, "mcp_access_groups", "access_groups")
	rename(fields, "spec_version", "protocol_version")
	for k := range requestOnlyKeys {
		delete(fields, k)
	}
	doc, err := json.Marshal(map[string]any{"mcp_servers": map[string]any{name: fields}})
	if err != nil {
		return Server{}, nil, fmt.Errorf("encoding the server: %w", err)
	}
	cfg, problems, err := Parse(doc, opts)
	if err != nil {
		return Server{}, problems, err
	}
	if len(cfg.Servers) != 1 {
		return Server{}, problems, errors.New("the request names no server")
	}
	return cfg.Servers[0], problems, nil
}

// decodeObject decodes one JSON object, nothing after it, dropping null members.
func decodeObject(b []byte) (map[string]json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	var m map[string]json.RawMessage
	if err := dec.Decode(&m); err != nil || m == nil {
		return nil, errors.New("the body must be one JSON object")
	}
	if dec.More() {
		return nil, errors.New("the body must be one JSON object, with nothing after it")
	}
	for k, v := range m {
		if string(bytes.TrimSpace(v)) == "null" {
			delete(m, k)
		}
	}
	return m, nil
}

// rename moves fields[from] to fields[to] unless to is already set.
func rename(fields map[string]json.RawMessage, from, to string) {
	v, ok := fields[from]
	if !ok {
		return
	}
	delete(fields, from)
	if _, set := fields[to]; !set {
		fields[to] = v
	}
}
