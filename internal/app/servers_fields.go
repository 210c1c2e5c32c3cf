package app

import (
	"encoding/json"
	"errors"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/mcpgw/mcpgw/internal/config"
	"github.com/mcpgw/mcpgw/internal/front"
	"github.com/mcpgw/mcpgw/internal/secretbox"
	"github.com/mcpgw/mcpgw/internal/store"
)

// envRef starts a value that names an environment variable instead of holding a secret: it is
// stored and shown as written, never sealed.
const envRef = "os.environ/"

// errNoSaltKey refuses a literal credential when nothing could encrypt it.
var errNoSaltKey = &front.ServerError{Status: http.StatusBadRequest, Msg: "cannot store a credential " +
	"(credentials.auth_value, credentials.client_secret, a static_headers or env value): LITELLM_SALT_KEY is not set, " +
	"so it could not be encrypted; set LITELLM_SALT_KEY on every replica, or give an os.environ/NAME reference instead"}

// sealContext binds a sealed value to its server and field.
func sealContext(serverID, field string) string { return serverID + "\x00" + field }

// sealValue is what to store for credential v of field: "" stays "", an os.environ/
// reference as written, MaskedSecret the value stored before (old), anything else sealed.
func sealValue(box *secretbox.Box, serverID, field, v, old string) (string, error) {
	switch {
	case v == "", strings.HasPrefix(v, envRef):
		return v, nil
	case v == front.MaskedSecret:
		if old == "" {
			return "", &front.ServerError{Status: http.StatusBadRequest, Param: field,
				Msg: field + `: "` + front.MaskedSecret + `" stands for the stored value, and none is stored`}
		}
		return old, nil
	case box == nil:
		return "", errNoSaltKey
	}
	return box.Seal(sealContext(serverID, field), v), nil
}

// openValue is the plain value of a stored credential.
func openValue(box *secretbox.Box, serverID, field, stored string) (string, error) {
	if !secretbox.IsSealed(stored) {
		return stored, nil
	}
	if box == nil {
		return "", errors.New(field + " is encrypted and LITELLM_SALT_KEY is not set")
	}
	v, err := box.Open(sealContext(serverID, field), stored)
	if err != nil {
		return "", errors.New(field + " does not decrypt: LITELLM_SALT_KEY differs from the one it was stored with")
	}
	return v, nil
}

// maskValue is how an answer shows a stored credential: a reference as written, else masked.
func maskValue(stored string) string {
	if stored == "" || strings.HasPrefix(stored, envRef) {
		return stored
	}
	return front.MaskedSecret
}

// sealMap seals each value of m (field names the map) against the values stored before.
func sealMap(box *secretbox.Box, serverID, field string, m, old map[string]string) (map[string]string, error) {
	if m == nil {
		return nil, nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		sv, err := sealValue(box, serverID, field+"."+k, v, old[k])
		if err != nil {
			return nil, err
		}
		out[k] = sv
	}
	return out, nil
}

// openMap opens each value of a stored map.
func openMap(box *secretbox.Box, serverID, field string, m map[string]string) (map[string]string, error) {
	if m == nil {
		return nil, nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		pv, err := openValue(box, serverID, field+"."+k, v)
		if err != nil {
			return nil, err
		}
		out[k] = pv
	}
	return out, nil
}

// rowFields is a stored server as its mcp_servers entry in a file would be written, its
// credentials opened (for config.ParseServer).
func rowFields(box *secretbox.Box, row store.MCPServer) (map[string]any, error) {
	f := map[string]any{"server_id": row.ServerID}
	for k, v := range map[string]string{"alias": row.Alias, "description": row.Description, "url": row.URL,
		"transport": row.Transport, "command": row.Command, "auth_type": row.AuthType,
		"auth_header_name": row.AuthHeaderName, "oauth2_flow": row.OAuth2Flow, "token_url": row.TokenURL,
		"authorization_url": row.AuthorizationURL, "client_id": row.Credentials.ClientID} {
		if v != "" {
			f[k] = v
		}
	}
	for k, v := range map[string][]string{"args": row.Args, "access_groups": row.AccessGroups,
		"allowed_tools": row.AllowedTools, "disallowed_tools": row.DisallowedTools,
		"extra_headers": row.ExtraHeaders, "scopes": row.Credentials.Scopes} {
		if len(v) > 0 {
			f[k] = v
		}
	}
	for k, v := range map[string]string{"auth_value": row.Credentials.AuthValue, "client_secret": row.Credentials.ClientSecret} {
		pv, err := openValue(box, row.ServerID, "credentials."+k, v)
		if err != nil {
			return nil, err
		}
		if pv != "" {
			f[k] = pv
		}
	}
	for k, m := range map[string]map[string]string{"env": row.Env, "static_headers": row.StaticHeaders} {
		pm, err := openMap(box, row.ServerID, k, m)
		if err != nil {
			return nil, err
		}
		if len(pm) > 0 {
			f[k] = pm
		}
	}
	if info := row.MCPInfo; len(info) > 0 && string(info) != "{}" {
		f["mcp_info"] = json.RawMessage(info)
	}
	if row.Timeout != nil {
		f["timeout"] = row.Timeout.Seconds()
	}
	if row.MaxConcurrentRequests != nil {
		f["max_concurrent_requests"] = *row.MaxConcurrentRequests
	}
	if row.RPM != nil {
		f["rpm"] = *row.RPM
	}
	if row.AllowAllKeys {
		f["allow_all_keys"] = true
	}
	settingsFields(f, row.Settings)
	return f, nil
}

// storedView is a stored server as the API answers it, its credentials masked.
func storedView(row store.MCPServer) front.MCPServerView {
	v := front.MCPServerView{ServerID: row.ServerID, ServerName: row.ServerName, Alias: opt(row.Alias),
		Description: opt(row.Description), URL: opt(row.URL), Transport: transportOf(row.Transport),
		Command: opt(row.Command), Args: row.Args, AuthType: opt(row.AuthType),
		AuthHeaderName: opt(row.AuthHeaderName), OAuth2Flow: opt(row.OAuth2Flow), TokenURL: opt(row.TokenURL),
		AuthorizationURL: opt(row.AuthorizationURL), MCPAccessGroups: row.AccessGroups, AllowedTools: row.AllowedTools,
		DisallowedTools: row.DisallowedTools, ExtraHeaders: row.ExtraHeaders, MCPInfo: row.MCPInfo,
		MaxConcurrentRequests: row.MaxConcurrentRequests, RPM: row.RPM, AllowAllKeys: row.AllowAllKeys,
		CreatedBy: opt(row.CreatedBy), UpdatedBy: opt(row.UpdatedBy)}
	settingsView(&v, row.Settings)
	v.Env, v.StaticHeaders = maskMap(row.Env, maskValue), maskMap(row.StaticHeaders, maskValue)
	c := row.Credentials
	if c.AuthValue != "" || c.ClientID != "" || c.ClientSecret != "" || len(c.Scopes) > 0 {
		v.Credentials = &front.MCPCredentialsView{AuthValue: opt(maskValue(c.AuthValue)), ClientID: opt(c.ClientID),
			ClientSecret: opt(maskValue(c.ClientSecret)), Scopes: c.Scopes}
	}
	if row.Timeout != nil {
		secs := row.Timeout.Seconds()
		v.Timeout = &secs
	}
	created, updated := row.CreatedAt, row.UpdatedAt
	v.CreatedAt, v.UpdatedAt = &created, &updated
	return v
}

// fileView is a config file's server as the API answers it: read-only, every credential
// masked (its references are resolved already, so none is shown).
func fileView(s config.Server) front.MCPServerView {
	masked := func(string) string { return front.MaskedSecret }
	v := front.MCPServerView{ServerID: s.ServerID, ServerName: s.Name, Alias: opt(s.Alias),
		Description: opt(s.Description), URL: opt(s.URL), Transport: transportOf(string(s.Transport)),
		Command: opt(s.Command), Args: s.Args, AuthType: opt(string(s.AuthType)),
		AuthHeaderName: opt(s.AuthHeaderName), OAuth2Flow: opt(s.OAuth2Flow), TokenURL: opt(s.TokenURL),
		AuthorizationURL: opt(s.AuthorizationURL), MCPAccessGroups: s.AccessGroups, AllowedTools: s.AllowedTools,
		DisallowedTools: s.DisallowedTools, ExtraHeaders: s.ExtraHeaders, AllowAllKeys: s.AllowAllKeys, ReadOnly: true}
	fileSettingsView(&v, s)
	v.Env, v.StaticHeaders = maskMap(s.Env, masked), maskMap(s.StaticHeaders, masked)
	if s.AuthValue.IsSet() || s.ClientID != "" || s.ClientSecret.IsSet() || len(s.Scopes) > 0 {
		v.Credentials = &front.MCPCredentialsView{ClientID: opt(s.ClientID), Scopes: s.Scopes}
		if s.AuthValue.IsSet() {
			v.Credentials.AuthValue = opt(front.MaskedSecret)
		}
		if s.ClientSecret.IsSet() {
			v.Credentials.ClientSecret = opt(front.MaskedSecret)
		}
	}
	if s.Timeout > 0 {
		secs := s.Timeout.Seconds()
		v.Timeout = &secs
	}
	if s.MaxConcurrentRequests > 0 {
		n := int64(s.MaxConcurrentRequests)
		v.MaxConcurrentRequests = &n
	}
	return v
}

func maskMap(m map[string]string, mask func(string) string) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		out[k] = mask(m[k])
	}
	return out
}

func opt(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// transportOf is a transport as answered: http when unset.
func transportOf(t string) string {
	if t == "" {
		return string(config.TransportHTTP)
	}
	return t
}

// timeoutOf is a request's timeout in seconds as stored (whole milliseconds).
func timeoutOf(secs *float64) *time.Duration {
	if secs == nil || *secs == 0 {
		return nil
	}
	d := time.Duration(*secs * float64(time.Second)).Round(time.Millisecond)
	return &d
}
