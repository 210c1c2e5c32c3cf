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
// Rules (cel.go) are general_settings.mcp_policies: CEL expressions over caller, jwt, server,
// tool (name, title, description, annotations with the specification's hint defaults) and args.
// They only narrow: the gateway asks them after ToolAllowed, at listing (per tool definition)
// and calling (with the call's arguments) alike. Explain (explain.go) traces ToolAllowed's
// checks step by step, for POST /v1/mcp/policy/explain.
//
// Design decisions:
//
//   - effect deny refuses when the expression is true, require when it is false; there is no
//     allow, because a rule must never grant. An evaluation error (a missing key, a wrong type,
//     a non-boolean value, the cost limit) refuses: rules fail closed.
//
//   - At listing args is an unknown (CEL partial evaluation), not an empty map: a rule whose
//     result depends on args gives "needs_args" and does not decide there, so a tool is listed
//     and the rule applies when it is called. An empty map was rejected: `!has(args.path)`
//     would then hide tools a call with a path may use, and `args.path == "x"` would error and
//     hide every tool. A rule that decides without args (a short-circuit) decides at listing.
//
//   - Annotation hints are always present with the MCP specification's defaults (destructive
//     and open-world unless stated), so `tool.annotations.destructiveHint` never errors and a
//     server that says nothing is treated as the specification says.
//
//   - jwt is a JWT caller's verified claims (identity.Caller.Claims) and an empty map for every
//     other caller, so has(jwt.x) is simply false for keys.
//
//   - Bounds: at most MaxRules rules of MaxExprBytes each, parser recursion 64, and a cost limit
//     of RuleCostLimit per evaluation (CEL interrupts comprehensions). Programs are compiled
//     once per config (config validation compiles too, to name the line), never per request.
//
//   - The keys of ToolPermissions never grant a server; they only restrict tools on servers
//     otherwise visible. LiteLLM lets them grant implicitly (issues #21954, #33397), so a key
//     limited to server a with tool rules for b could reach b. Rejected: copying that behaviour
//     for compatibility; it is a privilege escalation.
//
//   - Levels intersect, including access groups: a team granting group "ops" and a key listing
//     server alpha leave only alpha if it is in ops. Rejected: letting an access group at one
//     level add servers another level does not grant, which is an implicit grant by another
//     name.
//
//   - Empty means unset, as in LiteLLM: a level whose Servers and AccessGroups are both nil or
//     empty is unrestricted, and an empty ToolPermissions entry restricts nothing. The explicit
//     deny is the NoServers sentinel. identity normalises webhook [] to nil, so both spellings
//     agree. Rejected: "[] denies all", which would make LiteLLM configs and webhooks that send
//     [] for "not set" lock their callers out.
//
//   - NoServers is honoured in AccessGroups as well as Servers (a deny sentinel anywhere fails
//     closed); AllServers is honoured only in Servers, where LiteLLM defines it.
//
//   - allowed_tools / disallowed_tools: a tool in disallowed_tools is never allowed, even when
//     allowed_tools also lists it; a non-empty allowed_tools admits only the tools it lists.
//     LiteLLM instead ignores disallowed_tools when allowed_tools is set; the two differ only
//     for a tool in both lists, and refusing it is the fail-closed reading of an operator who
//     wrote it in both. Names are case-sensitive, bare upstream names.
//
//   - mcp_tool_permissions is matched by the server's id and by its name (not its alias, which
//     is display-only); when both keys are present both must list the tool. Rejected: letting
//     the more permissive entry win.
//
//   - ToolAllowed also requires the server to be visible to the caller, so a caller cannot reach
//     a tool by naming a server it cannot see; it does not apply request scope (the gateway
//     routes only to servers returned by Visible for the request).
//
//   - The master caller bypasses caller-level lists but not a server's allowed/disallowed tools,
//     which describe what the gateway serves at all.
//
//   - Admin roles from a webhook (user_role proxy_admin) get no special treatment: LiteLLM lets
//     such a role without lists see everything, which rule 4 already gives, and lists they carry
//     apply. Only IsMaster bypasses lists.
//
//   - Scope entries may name access groups (LiteLLM's /{server|alias|access_group}/mcp and
//     x-mcp-servers accept them); a nil scope is "no scoping" and an empty non-nil scope
//     matches nothing (fail closed on an explicit but empty scope).
//
//   - Lookup precedence is name, then id, then alias, as in config.Config.Server, so a server
//     named x always wins over another whose id is x.
//
//   - LiteLLM's sixth level, the agent (x-litellm-agent-id), has no counterpart: mcpgw has no
//     agent registry, so the header is not read. Webhook identities carry no Grants: the
//     webhook answers for every level at once.
//
//   - A nil Caller sees nothing and may call nothing.
//
//   - Server is the package's own type rather than config.Server, so the policy does not
//     depend on the loader and can be built from DB rows too.
package policy
