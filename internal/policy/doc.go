// Package policy decides what an identity.Caller may see and call: which configured MCP servers
// are visible and which upstream tools on them are allowed. It is pure (no I/O) and immutable;
// a config reload builds a new Policy.
//
// A caller has levels: its own lists (a store key's object_permission, or what a custom_auth
// webhook answered) and, for store keys, Grants for its team, user, end user
// (x-litellm-end-user-id) and organisation. Server visibility (granted), first matching rule
// wins:
//
//  1. the master caller (IsMaster) sees every server;
//  2. "no-mcp-servers" in any level's mcp_servers (or mcp_access_groups) denies every server,
//     overriding access groups and allow_all_keys;
//  3. allow_all_keys servers are visible to everyone else (with
//     mcp_allow_all_keys_respects_mcp_scope, only to callers whose own lists are empty);
//  4. otherwise every level must grant the server. A level with no mcp_servers and no
//     mcp_access_groups grants every server (so a key with empty lists inherits its team's),
//     except the caller's own level under require_key_mcp_access_defined and the end user's
//     under require_end_user_mcp_access_defined, which then grant none; "all-proxy-mcpservers"
//     in mcp_servers grants every server; else a mcp_servers entry grants the server it names
//     (id, name or alias) and every server carrying it as an access group, and a
//     mcp_access_groups entry the servers in that group.
//
// Lists are therefore intersected across levels, and the organisation (like every level) is a
// ceiling. A tool is allowed when its server is visible, the server's allowed/disallowed_tools
// admit it, every level's mcp_tool_permissions entry for the server (if any) lists it, and no
// level's blocked_tools names it (bare, or prefixed by the server's alias, name or id and the
// tool separator).
//
// Then a request scope (server names the front resolved from a scoped URL, x-mcp-servers and
// x-mcp-access-groups, or names, ids, aliases and access groups)
// narrows the result; it never grants, and an unknown scope entry matches nothing.
//
// Design decisions:
//
//   - The keys of ToolPermissions never grant a server; they only restrict tools on servers
//     otherwise visible. LiteLLM lets them grant implicitly (issues #21954, #33397), so a key
//     limited to server a with tool rules for b could reach b. Rejected: copying that behaviour
//     for compatibility; it is a privilege escalation.
//   - Levels intersect, including access groups: a team granting group "ops" and a key listing
//     server alpha leave only alpha if it is in ops. Rejected: letting an access group at one
//     level add servers another level does not grant, which is an implicit grant by another
//     name.
//   - Empty means unset, as in LiteLLM: a level whose Servers and AccessGroups are both nil or
//     empty is unrestricted, and an empty ToolPermissions entry restricts nothing. The explicit
//     deny is the NoServers sentinel. identity normalises webhook [] to nil, so both spellings
//     agree. Rejected: "[] denies all", which would make LiteLLM configs and webhooks that send
//     [] for "not set" lock their callers out.
//   - NoServers is honoured in AccessGroups as well as Servers (a deny sentinel anywhere fails
//     closed); AllServers is honoured only in Servers, where LiteLLM defines it.
//   - allowed_tools / disallowed_tools: a tool in disallowed_tools is never allowed, even when
//     allowed_tools also lists it; a non-empty allowed_tools admits only the tools it lists.
//     LiteLLM instead ignores disallowed_tools when allowed_tools is set; the two differ only
//     for a tool in both lists, and refusing it is the fail-closed reading of an operator who
//     wrote it in both. Names are case-sensitive, bare upstream names.
//   - mcp_tool_permissions is matched by the server's id and by its name (not its alias, which
//     is display-only); when both keys are present both must list the tool. Rejected: letting
//     the more permissive entry win.
//   - ToolAllowed also requires the server to be visible to the caller, so a caller cannot reach
//     a tool by naming a server it cannot see; it does not apply request scope (the gateway
//     routes only to servers returned by Visible for the request).
//   - The master caller bypasses caller-level lists but not a server's allowed/disallowed tools,
//     which describe what the gateway serves at all.
//   - Admin roles from a webhook (user_role proxy_admin) get no special treatment: LiteLLM lets
//     such a role without lists see everything, which rule 4 already gives, and lists they carry
//     apply. Only IsMaster bypasses lists.
//   - Scope entries may name access groups (LiteLLM's /{server|alias|access_group}/mcp and
//     x-mcp-servers accept them); a nil scope is "no scoping" and an empty non-nil scope
//     matches nothing (fail closed on an explicit but empty scope).
//   - Lookup precedence is name, then id, then alias, as in config.Config.Server, so a server
//     named x always wins over another whose id is x.
//   - LiteLLM's sixth level, the agent (x-litellm-agent-id), has no counterpart: mcpgw has no
//     agent registry, so the header is not read. Webhook identities carry no Grants: the
//     webhook answers for every level at once.
//   - A nil Caller sees nothing and may call nothing.
//   - Server is the package's own type rather than config.Server, so the policy does not
//     depend on the loader and can be built from DB rows too.
package policy
