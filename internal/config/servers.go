package config

import (
	"strings"

	"go.yaml.in/yaml/v3"
)

// serverNodes remembers where a server's settings were written, for messages about them.
type serverNodes struct {
	key, serverID, alias, url, transport, command, protocol, authType *yaml.Node
	oauth2Flow, tokenURL, authorizationURL, rpm, timeout              *yaml.Node
	authHeaderName, extraHeaders                                      *yaml.Node
	staticHeaderKeys                                                  map[string]*yaml.Node
}

// parsedServer is a Server plus the nodes its checks report against.
type parsedServer struct {
	Server
	at serverNodes
}

// servers reads mcp_servers, in file order.
func (l *loader) servers(n *yaml.Node) []Server {
	var out []Server
	for _, e := range l.entries(n, "mcp_servers", "server name") {
		ps := l.server(e)
		l.checkServer(&ps)
		out = append(out, ps.Server)
	}
	return out
}

// isLiteLLMOnlyServerKey reports whether k is a LiteLLM mcp_servers key that mcpgw does not implement.
func isLiteLLMOnlyServerKey(k string) bool {
	switch k {
	case "server_name", "allowed_params", "tool_name_to_display_name",
		"tool_name_to_description", "available_on_public_internet",
		"header_variables", "registration_url", "delegate_auth_to_upstream", "token_validation",
		"token_storage_ttl_seconds", "upstream_resource", "upstream_token_header",
		"token_endpoint_auth_method", "client_private_key", "client_private_key_id",
		"client_assertion_signing_alg", "token_exchange_endpoint", "audience",
		"subject_token_type", "token_exchange_profile", "redirect_uris", "is_byok",
		"byok_description", "byok_api_key_help_url", "short_prefix", "aws_access_key_id",
		"aws_secret_access_key", "aws_session_token", "aws_region_name", "aws_service_name",
		"aws_role_name", "aws_session_name":
		return true
	}
	return false
}

// serverFields is the state of reading one mcp_servers entry: the server so far and the
// settings that are resolved only once every key has been read.
type serverFields struct {
	ps                                     parsedServer
	prefix                                 string
	infoVersion                            string
	infoNode, authValueNode, authTokenNode *yaml.Node
}

// server reads one mcp_servers entry.
func (l *loader) server(e entry) parsedServer {
	r := serverFields{ps: parsedServer{Server: Server{Name: e.key, Line: lineOf(e.k)}}, prefix: "mcp_servers." + e.key}
	r.ps.at.key = e.k
	for _, f := range l.entries(e.v, r.prefix, "key") {
		field := r.prefix + "." + f.key
		if l.connectionKey(&r, f.key, f.v, field) || l.authKey(&r, f.key, f.v, field) || l.accessKey(&r.ps, f.key, f.v, field) || l.pinKey(&r.ps.Server, f.key, f.v, field) ||
			l.specPathKey(&r.ps, f.key, f.v, field) {
			continue
		}
		if isLiteLLMOnlyServerKey(f.key) {
			l.warnf(f.k, "key %q in %s is a LiteLLM option mcpgw does not implement (ignored)", f.key, r.prefix)
		} else {
			l.warnf(f.k, "key %q in %s is not used by mcpgw (ignored)%s", f.key, r.prefix, didYouMean(f.key, serverKeys))
		}
	}
	l.finishServer(&r)
	return r.ps
}

// connectionKey reads key if it says where and how to reach the server, and reports whether it did.
func (l *loader) connectionKey(r *serverFields, key string, v *yaml.Node, field string) bool {
	s, at := &r.ps.Server, &r.ps.at
	switch key {
	case "server_id":
		s.ServerID, _ = l.str(v, field)
		at.serverID = v
	case "alias":
		if a, ok := l.str(v, field); ok {
			s.Alias = strings.ReplaceAll(strings.TrimSpace(a), " ", "_")
			at.alias = v
		}
	case "description":
		s.Description, _ = l.str(v, field)
	case "url":
		if u, ok := l.str(v, field); ok {
			s.URL = strings.TrimSpace(u)
			at.url = v
		}
	case "transport":
		if t, ok := l.str(v, field); ok {
			s.Transport = Transport(strings.ToLower(strings.TrimSpace(t)))
			at.transport = v
		}
	case "command":
		if c, ok := l.str(v, field); ok {
			s.Command = c
			s.CommandLine = lineOf(v)
			at.command = v
		}
	case "args":
		s.Args = l.strList(v, field)
	case "env":
		s.Env, _ = l.strMap(v, field)
	case "protocol_version":
		if p, ok := l.str(v, field); ok {
			s.ProtocolVersion = strings.TrimSpace(p)
			at.protocol = v
		}
	case "mcp_info":
		// A free-form mapping; only protocol_version and mcp_server_cost_info matter here.
		for _, ie := range l.entries(v, field, "key") {
			switch ie.key {
			case "protocol_version":
				if p, ok := l.str(ie.v, field+".protocol_version"); ok {
					r.infoVersion, r.infoNode = strings.TrimSpace(p), ie.v
				}
			case "mcp_server_cost_info":
				l.serverCost(ie.v, field+".mcp_server_cost_info", &s.Cost)
			}
		}
	default:
		return false
	}
	return true
}

// authKey reads key if it is about the credentials sent upstream, and reports whether it did.
func (l *loader) authKey(r *serverFields, key string, v *yaml.Node, field string) bool {
	s, at := &r.ps.Server, &r.ps.at
	switch key {
	case "auth_type":
		if t, ok := l.str(v, field); ok {
			s.AuthType = AuthType(strings.ToLower(strings.TrimSpace(t)))
			at.authType = v
		}
	case "auth_value":
		if a, ok := l.str(v, field); ok {
			s.AuthValue, r.authValueNode = Secret(a), v
		}
	case "authentication_token":
		if a, ok := l.str(v, field); ok {
			r.authTokenNode = v
			if r.authValueNode == nil {
				s.AuthValue = Secret(a)
			}
		}
	case "auth_header_name":
		if h, ok := l.str(v, field); ok {
			s.AuthHeaderName = strings.TrimSpace(h)
			at.authHeaderName = v
		}
	case "oauth2_flow":
		if f, ok := l.str(v, field); ok {
			s.OAuth2Flow = strings.ToLower(strings.TrimSpace(f))
			at.oauth2Flow = v
		}
	case "client_id":
		s.ClientID, _ = l.str(v, field)
	case "client_secret":
		cs, _ := l.str(v, field)
		s.ClientSecret = Secret(cs)
	case "token_url":
		if u, ok := l.str(v, field); ok {
			s.TokenURL = strings.TrimSpace(u)
			at.tokenURL = v
		}
	case "authorization_url":
		if u, ok := l.str(v, field); ok {
			s.AuthorizationURL = strings.TrimSpace(u)
			at.authorizationURL = v
		}
	case "scopes":
		s.Scopes = l.scopes(v, field)
	default:
		return false
	}
	return true
}

// accessKey reads key if it is about headers, tools, access or limits, and reports whether it did.
func (l *loader) accessKey(ps *parsedServer, key string, v *yaml.Node, field string) bool {
	s, at := &ps.Server, &ps.at
	switch key {
	case "static_headers":
		s.StaticHeaders, at.staticHeaderKeys = l.strMap(v, field)
	case "extra_headers":
		s.ExtraHeaders = l.strList(v, field)
		at.extraHeaders = v
	case "allowed_tools":
		s.AllowedTools = l.strList(v, field)
	case "disallowed_tools":
		s.DisallowedTools = l.strList(v, field)
	case "allow_elicitation":
		s.AllowElicitation, _ = l.boolean(v, field)
	case "allow_sampling":
		s.AllowSampling, _ = l.boolean(v, field)
	case "allow_all_keys":
		s.AllowAllKeys, _ = l.boolean(v, field)
	case "forward_identity":
		s.ForwardIdentity = l.forwardIdentity(v, field)
	case "access_groups":
		s.AccessGroups = l.strList(v, field)
	case "rpm":
		s.RPM, _ = l.nonNegInt(v, field)
		at.rpm = v
	case "max_concurrent_requests":
		s.MaxConcurrentRequests, _ = l.nonNegInt(v, field)
	case "timeout":
		s.Timeout, _ = l.seconds(v, field)
		at.timeout = v
	default:
		return false
	}
	return true
}

// finishServer resolves the settings that depend on more than one key and fills in defaults.
func (l *loader) finishServer(r *serverFields) {
	s, at := &r.ps.Server, &r.ps.at
	if r.authValueNode != nil && r.authTokenNode != nil {
		l.warnf(r.authTokenNode, "%s: authentication_token is an alias of auth_value; auth_value is used", r.prefix)
	}
	switch {
	case s.ProtocolVersion == "" && r.infoVersion != "":
		s.ProtocolVersion, at.protocol = r.infoVersion, r.infoNode
	case s.ProtocolVersion != "" && r.infoVersion != "" && r.infoVersion != s.ProtocolVersion:
		l.warnf(r.infoNode, "%s: protocol_version overrides mcp_info.protocol_version", r.prefix)
	}
	if s.ProtocolVersion == "" {
		s.ProtocolVersion = ProtocolAuto
	}
	if s.ServerID == "" {
		s.ServerID = s.Name
	}
	if s.Transport == "" {
		s.Transport = TransportHTTP
	}
}

// scopes reads a list of scopes or one space-separated string.
func (l *loader) scopes(n *yaml.Node, field string) []string {
	if isNull(n) {
		return nil
	}
	if deref(n).Kind == yaml.SequenceNode {
		var out []string
		for _, s := range l.strList(n, field) {
			out = append(out, strings.Fields(s)...)
		}
		return out
	}
	s, ok := l.str(n, field)
	if !ok {
		return nil
	}
	return strings.Fields(s)
}
