package app

import (
	"github.com/mcpgw/mcpgw/internal/front"
	"github.com/mcpgw/mcpgw/internal/secretbox"
	"github.com/mcpgw/mcpgw/internal/store"
)

// applySpec writes a request's fields into row: every field when creating, only those the
// request sets when updating (credentials field by field; env and static_headers as a whole,
// a value of MaskedSecret keeping the one stored under that name). Credential values are
// sealed (see sealValue).
func applySpec(box *secretbox.Box, row *store.MCPServer, spec front.MCPServerSpec, update bool) error {
	set := func(f string) bool { return !update || spec.Present[f] }
	for _, f := range []struct {
		name string
		dst  *string
		v    string
	}{{"alias", &row.Alias, spec.Alias}, {"description", &row.Description, spec.Description},
		{"url", &row.URL, spec.URL}, {"transport", &row.Transport, spec.Transport}, {"command", &row.Command, spec.Command},
		{"auth_type", &row.AuthType, spec.AuthType}, {"auth_header_name", &row.AuthHeaderName, spec.AuthHeaderName},
		{"oauth2_flow", &row.OAuth2Flow, spec.OAuth2Flow}, {"token_url", &row.TokenURL, spec.TokenURL},
		{"authorization_url", &row.AuthorizationURL, spec.AuthorizationURL}} {
		if set(f.name) {
			*f.dst = f.v
		}
	}
	for _, f := range []struct {
		name string
		dst  *[]string
		v    []string
	}{{"args", &row.Args, spec.Args}, {"mcp_access_groups", &row.AccessGroups, spec.MCPAccessGroups},
		{"allowed_tools", &row.AllowedTools, spec.AllowedTools}, {"disallowed_tools", &row.DisallowedTools, spec.DisallowedTools},
		{"extra_headers", &row.ExtraHeaders, spec.ExtraHeaders}} {
		if set(f.name) {
			*f.dst = f.v
		}
	}
	if set("mcp_info") {
		row.MCPInfo = spec.MCPInfo
	}
	if set("timeout") {
		row.Timeout = timeoutOf(spec.Timeout)
	}
	if set("max_concurrent_requests") {
		row.MaxConcurrentRequests = spec.MaxConcurrentRequests
	}
	if set("allow_all_keys") {
		row.AllowAllKeys = spec.AllowAllKeys
	}
	if set("rpm") {
		row.RPM = spec.RPM
	}
	applySettings(&row.Settings, spec.Settings, set)
	var err error
	if set("env") {
		if row.Env, err = sealMap(box, row.ServerID, "env", spec.Env, row.Env); err != nil {
			return err
		}
	}
	if set("static_headers") {
		if row.StaticHeaders, err = sealMap(box, row.ServerID, "static_headers", spec.StaticHeaders, row.StaticHeaders); err != nil {
			return err
		}
	}
	if set("credentials") {
		return applyCredentials(box, row, spec.Credentials, update)
	}
	return nil
}

// applyCredentials writes a request's credentials into row, sealing its secrets.
func applyCredentials(box *secretbox.Box, row *store.MCPServer, c front.CredentialsSpec, update bool) error {
	set := func(f string) bool { return !update || c.Present[f] }
	old := row.Credentials
	if set("client_id") {
		row.Credentials.ClientID = c.ClientID
	}
	if set("scopes") {
		row.Credentials.Scopes = c.Scopes
	}
	var err error
	if set("auth_value") {
		if row.Credentials.AuthValue, err = sealValue(box, row.ServerID, "credentials.auth_value", c.AuthValue, old.AuthValue); err != nil {
			return err
		}
	}
	if set("client_secret") {
		if row.Credentials.ClientSecret, err = sealValue(box, row.ServerID, "credentials.client_secret", c.ClientSecret, old.ClientSecret); err != nil {
			return err
		}
	}
	return nil
}
