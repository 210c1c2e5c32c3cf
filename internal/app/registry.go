package app

import (
	"reflect"
	"slices"

	"github.com/mcpgw/mcpgw/internal/catalog"
	"github.com/mcpgw/mcpgw/internal/config"
	"github.com/mcpgw/mcpgw/internal/gateway"
	"github.com/mcpgw/mcpgw/internal/mcp"
	"github.com/mcpgw/mcpgw/internal/policy"
	"github.com/mcpgw/mcpgw/internal/upstream"
	"github.com/mcpgw/mcpgw/internal/upstream/auth"
)

// registry holds each configured server once, in file order, and hands each
// layer its view of it. It is a value built from one config: applying a new
// config builds a new registry.
type registry struct {
	servers []config.Server
	byName  map[string]int
	routes  map[string]string // route key → server name; see config.Routes
	aliases map[string]string // litellm_settings.mcp_aliases: alias → server name
	groups  map[string][]string
}

// newRegistry holds servers (names are unique, as config.Load guarantees) and the
// mcp_aliases naming them (targets resolve, as config.Load guarantees).
func newRegistry(servers []config.Server, aliases map[string]string) *registry {
	r := &registry{servers: slices.Clone(servers), byName: make(map[string]int, len(servers)), routes: config.Routes(servers),
		aliases: make(map[string]string, len(aliases)), groups: make(map[string][]string)}
	for i, s := range r.servers {
		r.byName[s.Name] = i
		for _, g := range s.AccessGroups {
			if g != "" && !slices.Contains(r.groups[g], s.Name) {
				r.groups[g] = append(r.groups[g], s.Name)
			}
		}
	}
	for alias, target := range aliases {
		if name, ok := r.routes[target]; ok {
			r.aliases[alias] = name
		}
	}
	return r
}

// expand returns the servers a narrowing entry (a scoped URL's or x-mcp-servers' item) names:
// the one server it is the name, id or alias of, else the one an mcp_aliases entry maps it
// to, else every server of the access group it names (group is then true); ok is false when
// it names nothing.
func (r *registry) expand(entry string) (servers []string, group, ok bool) {
	if name, ok := r.routes[entry]; ok {
		return []string{name}, false, true
	}
	if name, ok := r.aliases[entry]; ok {
		return []string{name}, false, true
	}
	if names, ok := r.groups[entry]; ok {
		return slices.Clone(names), true, true
	}
	return nil, false, false
}

// server returns the server named name.
func (r *registry) server(name string) (config.Server, bool) {
	i, ok := r.byName[name]
	if !ok {
		return config.Server{}, false
	}
	return r.servers[i], true
}

// resolve returns the name of the server a route key (a /{server}/mcp
// segment, a REST server_id) selects: a name wins over any server_id, a
// server_id over any alias, and among equals the earlier server in the file.
func (r *registry) resolve(key string) (string, bool) {
	name, ok := r.routes[key]
	return name, ok
}

// policyServers is the policy layer's view: who may see each server and which tools.
func (r *registry) policyServers() []policy.Server {
	out := make([]policy.Server, 0, len(r.servers))
	for _, s := range r.servers {
		out = append(out, policy.Server{
			Name: s.Name, ID: s.ServerID, Alias: s.Alias, AccessGroups: s.AccessGroups, AllowAllKeys: s.AllowAllKeys,
			AllowedTools: s.AllowedTools, DisallowedTools: s.DisallowedTools,
		})
	}
	return out
}

// catalogServers is the catalog's view: each server's name, client and
// whether callers' Mcp-Param-* headers are checked for it.
func (r *registry) catalogServers(clients map[string]*upstream.Client) []*catalog.Server {
	out := make([]*catalog.Server, 0, len(r.servers))
	for _, s := range r.servers {
		out = append(out, &catalog.Server{Name: s.Name, Client: clients[s.Name],
			// Only streamable HTTP carries Mcp-Param-* headers.
			SkipParamHeaders: s.Transport != "" && string(s.Transport) != upstream.TransportHTTP})
	}
	return out
}

// gatewayServers is the core's view: routing names, client, what callers may
// forward to it and what it may ask them.
func (r *registry) gatewayServers(clients map[string]*upstream.Client) []*gateway.Server {
	out := make([]*gateway.Server, 0, len(r.servers))
	for _, s := range r.servers {
		out = append(out, &gateway.Server{
			Name: s.Name, ID: s.ServerID, Alias: s.Alias, Client: clients[s.Name],
			ExtraHeaders: s.ExtraHeaders, Delegate: s.AuthType == config.AuthType(auth.AuthOAuthDelegate),
			AllowElicitation: s.AllowElicitation, AllowSampling: s.AllowSampling,
			CallerToken:  s.AuthType == config.AuthType(auth.AuthOAuth2) && s.OAuth2Flow == config.OAuth2AuthorizationCode,
			TargetDigest: gateway.TargetDigest(s.ServerID, s.URL, string(s.Transport), s.ProtocolVersion, s.Command, s.Args),
		})
	}
	return out
}

// upstreamConfig is the upstream layer's view of one server: its client
// configuration, without the hooks and shared resources wire adds.
func upstreamConfig(s config.Server, env Env, info mcp.Implementation) upstream.Config {
	uc := upstream.Config{
		Name: s.Name, Transport: string(s.Transport), URL: s.URL,
		Command: s.Command, Args: s.Args, Env: environ(s.Env),
		ProtocolVersion: s.ProtocolVersion,
		Auth: auth.PolicyConfig{
			AuthType: string(s.AuthType), AuthValue: s.AuthValue.Reveal(),
			HeaderName: s.AuthHeaderName, StaticHeaders: s.StaticHeaders,
		},
		// One legacy session per credential set: it advertises what the
		// server is allowed to ask, whichever caller opens it.
		Offer:          upstream.Offer{Elicitation: s.AllowElicitation, Sampling: s.AllowSampling, Roots: true},
		RequestTimeout: env.ClientTimeout, ListTimeout: env.ListingTimeout, MaxPages: env.MaxPages,
		ClientInfo: info,
	}
	if s.Timeout > 0 {
		uc.RequestTimeout = s.Timeout
	}
	if s.AuthType == config.AuthType(auth.AuthOAuth2) && s.OAuth2Flow == config.OAuth2ClientCredentials {
		uc.OAuth2 = &auth.ClientCredentialsConfig{
			TokenURL: s.TokenURL, ClientID: s.ClientID, ClientSecret: s.ClientSecret.Reveal(), Scopes: s.Scopes,
		}
	}
	return uc
}

// sameConnection reports whether two servers have the same connection
// identity, so a client built for a may serve b and keep its sessions.
//
// The identity is everything the server's client is built from
// (upstreamConfig): name (it labels the client's notifications), transport,
// URL, spec_path, command, args, env, protocol_version, the upstream credential
// settings (auth_type, auth_value, auth_header_name, static_headers, the
// OAuth2 client-credentials settings), allow_elicitation and allow_sampling
// (a legacy session advertises them when it opens), and the request timeout.
// Everything else (description, server_id, alias, access groups,
// allowed/disallowed tools, extra_headers, rpm, max_concurrent_requests) is
// read per request, by the layers above the client or by its middleware
// (rpms), and never needs a new one.
func sameConnection(a, b config.Server, env Env, info mcp.Implementation) bool {
	return a.SpecPath == b.SpecPath && reflect.DeepEqual(upstreamConfig(a, env, info), upstreamConfig(b, env, info))
}
