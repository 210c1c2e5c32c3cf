package front

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"unicode/utf8"
)

// Bounds of a server registry request.
const (
	maxServerBody    = 1 << 20  // request body bytes
	maxServerString  = 8 << 10  // one string field (a URL, a description, a credential)
	maxServerMapLen  = 256      // entries in env or static_headers
	maxServerInfoLen = 64 << 10 // mcp_info as JSON
)

// MCPServerSpec is a /v1/mcp/server request body: LiteLLM's NewMCPServerRequest (POST) or
// UpdateMCPServerRequest (PUT) fields. Present names the fields the request set; a PUT
// changes only those. A credential value equal to MaskedSecret means "keep the stored one".
type MCPServerSpec struct {
	Present map[string]bool

	ServerID, ServerName, Alias, Description string
	URL, Transport, Command                  string
	Args                                     []string
	Env                                      map[string]string
	AuthType                                 string
	Credentials                              CredentialsSpec
	AuthHeaderName, OAuth2Flow               string
	TokenURL, AuthorizationURL               string
	MCPAccessGroups, AllowedTools            []string
	DisallowedTools, ExtraHeaders            []string
	StaticHeaders                            map[string]string
	MCPInfo                                  json.RawMessage
	Timeout                                  *float64
	MaxConcurrentRequests, RPM               *int64
	AllowAllKeys                             bool
	Settings                                 ServerSettingsSpec
}

// ServerSettingsSpec are the settings a config file's server has and LiteLLM's table does
// not, under their mcp_servers names; they are checked as the config file's are (by
// config.ParseServer, in internal/app).
type ServerSettingsSpec struct {
	SpecPath, ProtocolVersion string
	// ForwardIdentity is as given: a string, or "true"/"false" for a JSON boolean.
	ForwardIdentity                                     string
	AllowElicitation, AllowSampling, PinToolDefinitions bool
	PinnedTools, Guardrails                             []string
}

// CredentialsSpec is a request's credentials object (LiteLLM's MCPCredentials); Present names
// the fields it set.
type CredentialsSpec struct {
	Present                           map[string]bool
	AuthValue, ClientID, ClientSecret string
	Scopes                            []string
}

// serverSpecFields are the fields a request may carry; serverAnswerFields are answer fields a
// client may send back unchanged (the UI does), which are ignored.
var (
	serverSpecFields = []string{"server_id", "server_name", "alias", "description", "url", "transport", "command",
		"args", "env", "auth_type", "credentials", "auth_header_name", "oauth2_flow", "token_url", "authorization_url",
		"mcp_access_groups", "allowed_tools", "disallowed_tools", "extra_headers", "static_headers", "mcp_info",
		"timeout", "max_concurrent_requests", "rpm", "allow_all_keys",
		"spec_path", "protocol_version", "forward_identity", "allow_elicitation", "allow_sampling",
		"pin_tool_definitions", "pinned_tools", "guardrails"}
	serverAnswerFields = []string{"status", "last_health_check", "health_check_error", "created_at", "updated_at",
		"created_by", "updated_by", "read_only"}
	credentialFields = []string{"auth_value", "client_id", "client_secret", "scopes"}
)

// decodeServerSpec reads a request body; update requires server_id. Messages name fields,
// never values.
func decodeServerSpec(r *http.Request, w http.ResponseWriter, update bool) (MCPServerSpec, error) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxServerBody))
	if err != nil {
		return MCPServerSpec{}, &ServerError{Status: http.StatusRequestEntityTooLarge, Msg: "request body unreadable or larger than 1 MiB"}
	}
	m, err := decodeObject("", body, append(append([]string{}, serverSpecFields...), serverAnswerFields...))
	if err != nil {
		return MCPServerSpec{}, asServerError(err)
	}
	spec := MCPServerSpec{Present: map[string]bool{}}
	for _, f := range serverSpecFields {
		if v, ok := m[f]; ok && !isNull(v) {
			spec.Present[f] = true
		}
	}
	strs := map[string]*string{"server_id": &spec.ServerID, "server_name": &spec.ServerName, "alias": &spec.Alias,
		"description": &spec.Description, "url": &spec.URL, "transport": &spec.Transport, "command": &spec.Command,
		"auth_type": &spec.AuthType, "auth_header_name": &spec.AuthHeaderName, "oauth2_flow": &spec.OAuth2Flow,
		"token_url": &spec.TokenURL, "authorization_url": &spec.AuthorizationURL}
	for name, dst := range strs {
		if *dst, err = specString(name, m[name]); err != nil {
			return spec, err
		}
	}
	lists := map[string]*[]string{"args": &spec.Args, "mcp_access_groups": &spec.MCPAccessGroups,
		"allowed_tools": &spec.AllowedTools, "disallowed_tools": &spec.DisallowedTools, "extra_headers": &spec.ExtraHeaders}
	for name, dst := range lists {
		if *dst, err = optStrings(name, m[name]); err != nil {
			return spec, asServerError(err)
		}
	}
	if spec.Env, err = specMap("env", m["env"]); err != nil {
		return spec, err
	}
	if spec.StaticHeaders, err = specMap("static_headers", m["static_headers"]); err != nil {
		return spec, err
	}
	if spec.Credentials, err = decodeCredentials(m["credentials"]); err != nil {
		return spec, err
	}
	if err := decodeServerNumbers(m, &spec); err != nil {
		return spec, err
	}
	if spec.Settings, err = decodeServerSettings(m); err != nil {
		return spec, err
	}
	if update && spec.ServerID == "" {
		return spec, &ServerError{Status: http.StatusBadRequest, Param: "server_id", Msg: "server_id is required"}
	}
	return spec, nil
}

// decodeServerNumbers reads mcp_info, timeout, max_concurrent_requests, rpm and allow_all_keys.
func decodeServerNumbers(m map[string]json.RawMessage, spec *MCPServerSpec) error {
	if v := m["mcp_info"]; !isNull(v) {
		if v[0] != '{' || !json.Valid(v) || len(v) > maxServerInfoLen {
			return specBad("mcp_info", "mcp_info: want a JSON object of at most 64 KiB")
		}
		spec.MCPInfo = bytes.Clone(v)
	}
	if v := m["timeout"]; !isNull(v) {
		f, err := strconv.ParseFloat(string(v), 64)
		if err != nil || f < 0 {
			return specBad("timeout", "timeout: want a non-negative number of seconds")
		}
		spec.Timeout = &f
	}
	n, err := optCount(m, "max_concurrent_requests")
	if err != nil {
		return asServerError(err)
	}
	spec.MaxConcurrentRequests = n
	if spec.RPM, err = optCount(m, "rpm"); err != nil {
		return asServerError(err)
	}
	if v := m["allow_all_keys"]; !isNull(v) {
		if json.Unmarshal(v, &spec.AllowAllKeys) != nil {
			return specBad("allow_all_keys", "allow_all_keys: want true or false")
		}
	}
	return nil
}

// decodeServerSettings reads the settings LiteLLM's table has no column for. Only their JSON
// types are checked here; their values are checked as a file's are, by config.ParseServer.
func decodeServerSettings(m map[string]json.RawMessage) (ServerSettingsSpec, error) {
	var st ServerSettingsSpec
	var err error
	for name, dst := range map[string]*string{"spec_path": &st.SpecPath, "protocol_version": &st.ProtocolVersion} {
		if *dst, err = specString(name, m[name]); err != nil {
			return st, err
		}
	}
	if v := m["forward_identity"]; !isNull(v) {
		var b bool
		if json.Unmarshal(v, &b) == nil {
			st.ForwardIdentity = strconv.FormatBool(b)
		} else if st.ForwardIdentity, err = specString("forward_identity", v); err != nil {
			return st, specBad("forward_identity", "forward_identity: want \"jwt\", \"none\", true or false")
		}
	}
	for name, dst := range map[string]*bool{"allow_elicitation": &st.AllowElicitation, "allow_sampling": &st.AllowSampling,
		"pin_tool_definitions": &st.PinToolDefinitions} {
		if v := m[name]; !isNull(v) && json.Unmarshal(v, dst) != nil {
			return st, specBad(name, name+": want true or false")
		}
	}
	for name, dst := range map[string]*[]string{"pinned_tools": &st.PinnedTools, "guardrails": &st.Guardrails} {
		if *dst, err = optStrings(name, m[name]); err != nil {
			return st, asServerError(err)
		}
	}
	return st, nil
}

// decodeCredentials reads the credentials object.
func decodeCredentials(v json.RawMessage) (CredentialsSpec, error) {
	c := CredentialsSpec{Present: map[string]bool{}}
	if isNull(v) {
		return c, nil
	}
	m, err := decodeObject("credentials", v, credentialFields)
	if err != nil {
		return c, asServerError(err)
	}
	for name, dst := range map[string]*string{"auth_value": &c.AuthValue, "client_id": &c.ClientID, "client_secret": &c.ClientSecret} {
		if *dst, err = specString("credentials."+name, m[name]); err != nil {
			return c, err
		}
		c.Present[name] = !isNull(m[name])
	}
	if c.Scopes, err = optStrings("credentials.scopes", m["scopes"]); err != nil {
		return c, asServerError(err)
	}
	c.Present["scopes"] = !isNull(m["scopes"])
	return c, nil
}

// specString decodes an optional bounded string.
func specString(name string, v json.RawMessage) (string, error) {
	if isNull(v) {
		return "", nil
	}
	var s string
	if v[0] != '"' || json.Unmarshal(v, &s) != nil {
		return "", specBad(name, name+": want a string")
	}
	if len(s) > maxServerString || !utf8.ValidString(s) {
		return "", specBad(name, name+": want valid UTF-8 of at most 8 KiB")
	}
	return s, nil
}

// specMap decodes an optional object of bounded strings (env, static_headers).
func specMap(name string, v json.RawMessage) (map[string]string, error) {
	if isNull(v) {
		return nil, nil
	}
	var m map[string]string
	if v[0] != '{' || json.Unmarshal(v, &m) != nil {
		return nil, specBad(name, name+": want an object of strings")
	}
	if len(m) > maxServerMapLen {
		return nil, specBad(name, name+": more than 256 entries")
	}
	for k, val := range m {
		if len(k) > maxIDLen || len(val) > maxServerString {
			return nil, specBad(name, name+": an entry is too long")
		}
	}
	return m, nil
}

func specBad(param, msg string) error {
	return &ServerError{Status: http.StatusBadRequest, Param: param, Msg: msg}
}

// asServerError turns the key routes' badRequest into a ServerError.
func asServerError(err error) error {
	if br, ok := err.(*badRequest); ok {
		return &ServerError{Status: http.StatusBadRequest, Param: br.param, Msg: br.msg}
	}
	return err
}
