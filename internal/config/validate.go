package config

import (
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strings"
	"unicode"

	"go.yaml.in/yaml/v3"
)

// checkServer validates one server on its own and normalises its headers.
func (l *loader) checkServer(ps *parsedServer) {
	s, at := &ps.Server, &ps.at
	prefix := "mcp_servers." + s.Name
	l.checkName(s.Name, at.key)
	if at.serverID != nil && s.ServerID != s.Name {
		if bad := pathUnsafe(s.ServerID); bad != "" {
			l.errorf(at.serverID, "%s.server_id %q %s; ids appear in URL paths and query strings", prefix, s.ServerID, bad)
		}
	}

	switch s.Transport {
	case TransportHTTP, TransportSSE:
		switch {
		case s.URL == "":
			l.errorf(at.key, "server %q uses the %s transport but has no url", s.Name, s.Transport)
		case !isHTTPURL(s.URL):
			l.errorf(at.url, "%s.url must be an absolute http:// or https:// URL", prefix)
		}
		if at.command != nil || len(s.Args) > 0 || len(s.Env) > 0 {
			l.warnf(orNode(at.command, at.key), "%s: command, args and env are used only with transport stdio (ignored)", prefix)
		}
	case TransportStdio:
		if strings.TrimSpace(s.Command) == "" {
			l.errorf(orNode(at.command, at.key), "server %q uses the stdio transport but has no command", s.Name)
		}
		if s.URL != "" {
			l.warnf(at.url, "%s.url is not used with transport stdio (ignored)", prefix)
		}
		if s.AuthType != "" && s.AuthType != AuthNone {
			l.warnf(at.authType, "%s.auth_type is not used with transport stdio (ignored)", prefix)
		}
	default:
		l.errorf(at.transport, "%s.transport: unknown transport %q (want http, sse or stdio)", prefix, s.Transport)
	}

	if s.ProtocolVersion != ProtocolAuto && !isKnownRevision(s.ProtocolVersion) {
		l.errorf(at.protocol, "%s.protocol_version: unknown protocol version %q (want auto or one of %s)",
			prefix, s.ProtocolVersion, strings.Join(KnownRevisions(), ", "))
	}

	l.checkAuth(ps, prefix)
	l.checkHeaders(ps, prefix)
	l.checkSpecPath(ps, prefix)

	if len(s.AllowedTools) > 0 && len(s.DisallowedTools) > 0 {
		l.warnf(at.key, "%s sets both allowed_tools and disallowed_tools; a tool in both is refused (disallowed_tools wins, unlike LiteLLM)", prefix)
	}
}

// checkName rejects server names that cannot be told apart inside prefixed tool names or
// cannot appear in a URL path.
func (l *loader) checkName(name string, at *yaml.Node) {
	sep := l.opts.ToolPrefixSeparator
	if name == "" {
		l.errorf(at, "mcp_servers: a server name must not be empty")
		return
	}
	if strings.Contains(name, sep) {
		repl := "_"
		if strings.Contains(sep, "_") {
			repl = ""
		}
		suggestion := strings.ReplaceAll(name, sep, repl)
		l.errorf(at, "server name %q contains the tool prefix separator %q: tool names are served as <server>%s<tool>, "+
			"so the gateway could not tell where the server name ends; rename the server (for example %q) "+
			"or change MCP_TOOL_PREFIX_SEPARATOR", name, sep, sep, suggestion)
	}
	if bad := pathUnsafe(name); bad != "" {
		l.errorf(at, "server name %q %s; names are served in URL paths (/{server}/mcp)", name, bad)
	}
}

// pathUnsafe describes why s cannot be one URL path segment, or returns "".
func pathUnsafe(s string) string {
	for _, r := range s {
		switch {
		case r == '/' || r == '?' || r == '#' || r == '%' || r == '\\':
			return fmt.Sprintf("contains %q", r)
		case unicode.IsSpace(r) || unicode.IsControl(r):
			return "contains white space or control characters"
		}
	}
	return ""
}

func (l *loader) checkAuth(ps *parsedServer, prefix string) {
	s, at := &ps.Server, &ps.at
	switch s.AuthType {
	case "", AuthNone, AuthBearerToken, AuthToken, AuthBasic, AuthAPIKey, AuthAuthorization, AuthOAuthDelegate:
	case AuthOAuth2:
		switch s.OAuth2Flow {
		case "":
			l.errorf(at.authType, "%s: auth_type oauth2 needs oauth2_flow (client_credentials or authorization_code)", prefix)
		case OAuth2ClientCredentials:
			var missing []string
			if s.ClientID == "" {
				missing = append(missing, "client_id")
			}
			if !s.ClientSecret.IsSet() {
				missing = append(missing, "client_secret")
			}
			if s.TokenURL == "" {
				missing = append(missing, "token_url")
			}
			if len(missing) > 0 {
				l.errorf(at.oauth2Flow, "%s: oauth2_flow client_credentials needs %s", prefix, strings.Join(missing, ", "))
			}
		case OAuth2AuthorizationCode:
		default:
			l.errorf(at.oauth2Flow, "%s.oauth2_flow: unknown flow %q (want client_credentials or authorization_code)", prefix, s.OAuth2Flow)
		}
	default:
		l.errorf(at.authType, "%s.auth_type: unknown or unsupported auth type %q (want one of none, bearer_token, token, basic, "+
			"api_key, authorization, oauth2, oauth_delegate)", prefix, s.AuthType)
	}
	if s.TokenURL != "" && !isHTTPURL(s.TokenURL) {
		l.errorf(at.tokenURL, "%s.token_url must be an absolute http:// or https:// URL", prefix)
	}
	if s.AuthorizationURL != "" && !isHTTPURL(s.AuthorizationURL) {
		l.errorf(at.authorizationURL, "%s.authorization_url must be an absolute http:// or https:// URL", prefix)
	}
}

func (l *loader) checkHeaders(ps *parsedServer, prefix string) {
	s, at := &ps.Server, &ps.at
	if s.AuthHeaderName != "" && !isToken(s.AuthHeaderName) {
		l.errorf(at.authHeaderName, "%s.auth_header_name %q is not a valid HTTP header name", prefix, s.AuthHeaderName)
	}
	if len(s.StaticHeaders) > 0 {
		trimmed := make(map[string]string, len(s.StaticHeaders))
		canon := map[string]string{}
		for _, name := range slices.Sorted(maps.Keys(s.StaticHeaders)) {
			n, v := strings.TrimSpace(name), strings.TrimSpace(s.StaticHeaders[name])
			key := at.staticHeaderKeys[name]
			switch {
			case !isToken(n):
				l.errorf(key, "%s.static_headers: %q is not a valid HTTP header name", prefix, name)
				continue
			case strings.ContainsAny(v, "\r\n\x00"):
				l.errorf(key, "%s.static_headers: the value of %q contains a line break or NUL", prefix, n)
				continue
			}
			if other, dup := canon[strings.ToLower(n)]; dup {
				l.errorf(key, "%s.static_headers sets header %q twice (also as %q); header names ignore case", prefix, n, other)
				continue
			}
			canon[strings.ToLower(n)] = n
			trimmed[n] = v
		}
		s.StaticHeaders = trimmed
	}
	var items []*yaml.Node
	if d := deref(at.extraHeaders); d != nil && len(d.Content) == len(s.ExtraHeaders) {
		items = d.Content
	}
	for i, h := range s.ExtraHeaders {
		h = strings.TrimSpace(h)
		s.ExtraHeaders[i] = h
		if !isToken(h) {
			node := at.extraHeaders
			if items != nil {
				node = items[i]
			}
			l.errorf(node, "%s.extra_headers: %q is not a valid HTTP header name", prefix, h)
		}
	}
}

// validate runs the checks that span sections.
func (l *loader) validate(cfg *Config, serversKey, samplingNode *yaml.Node) {
	if len(cfg.Servers) == 0 && !cfg.General.StoreModelInDB {
		l.warnf(serversKey, "no mcp_servers are configured")
	}
	l.checkRoutes(cfg.Servers)
	if w, lim := cfg.General.HTTP.WriteTimeout, cfg.General.HTTP; w > 0 {
		for _, s := range cfg.Servers {
			if s.Timeout >= w {
				l.warnAt(s.Line, "server %q has timeout %s, not shorter than general_settings.http_write_timeout %s; "+
					"its slow answers will be cut", s.Name, s.Timeout, lim.WriteTimeout)
			}
		}
	}

	if m := cfg.LiteLLM.DefaultMCPSamplingModel; m != "" {
		found := false
		for _, mod := range cfg.Models {
			if mod.ModelName == m {
				found = true
				if !strings.HasPrefix(mod.Params.Model, "openai/") {
					l.warnAt(mod.Line, "model_list entry %q serves sampling but its litellm_params.model is not "+
						"\"openai/<id>\"; sampling uses an OpenAI-compatible API", m)
				}
				break
			}
		}
		if !found {
			l.errorf(samplingNode, "litellm_settings.default_mcp_sampling_model %q names no model_name in model_list", m)
		}
	}
	l.checkAliases(cfg)
}

// checkAliases refuses an mcp_aliases entry whose target names no server, and warns when an
// alias is itself a server's name, id or alias (the server wins).
func (l *loader) checkAliases(cfg *Config) {
	routes := Routes(cfg.Servers)
	for alias, target := range cfg.LiteLLM.MCPAliases {
		node := l.aliasNodes[alias]
		switch _, ok := routes[target]; {
		case strings.TrimSpace(alias) == "":
			l.errorf(node, "litellm_settings.mcp_aliases has an empty alias")
		case !ok:
			l.errorf(node, "litellm_settings.mcp_aliases.%s names %q, which is no server's name, server_id or alias", alias, target)
		case routes[alias] != "":
			l.warnf(node, "litellm_settings.mcp_aliases.%s is already a server's name, server_id or alias; that server wins", alias)
		}
	}
}

// checkRoutes refuses duplicate server ids and warns when a server_id or alias shadows another
// server's name, id or alias: the route then selects the other server (see Routes).
func (l *loader) checkRoutes(servers []Server) {
	ids := map[string]*Server{}
	for i := range servers {
		s := &servers[i]
		if first, dup := ids[s.ServerID]; dup {
			l.errorAt(s.Line, "server %q has server_id %q, already used by server %q (line %d); server ids must be unique",
				s.Name, s.ServerID, first.Name, first.Line)
			continue
		}
		ids[s.ServerID] = s
	}
	routes := Routes(servers)
	for i := range servers {
		s := &servers[i]
		if other := routes[s.ServerID]; other != s.Name && ids[s.ServerID] == s {
			l.warnAt(s.Line, "server %q has server_id %q, which is the name of server %q; "+
				"/%s/mcp and server_id %q select server %q (a name wins over an id)",
				s.Name, s.ServerID, other, s.ServerID, s.ServerID, other)
		}
		if s.Alias == "" || s.Alias == s.Name || s.Alias == s.ServerID {
			continue
		}
		if other := routes[s.Alias]; other != s.Name {
			l.warnAt(s.Line, "server %q has alias %q, which is also the name, id or alias of server %q; "+
				"a route by that alias is ambiguous and selects server %q", s.Name, s.Alias, other, other)
		}
	}
}

// isHTTPURL reports whether s is an absolute http(s) URL with a host.
func isHTTPURL(s string) bool {
	u, err := url.Parse(s)
	if err != nil {
		return false
	}
	return (u.Scheme == "http" || u.Scheme == "https") && u.Host != ""
}

// isToken reports whether s is a valid HTTP header name (an RFC 9110 token).
func isToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}

func orNode(n, fallback *yaml.Node) *yaml.Node {
	if n != nil {
		return n
	}
	return fallback
}
