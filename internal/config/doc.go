// Package config loads mcpgw's configuration: a LiteLLM-shaped YAML file with the top-level keys
// model_list, mcp_servers, general_settings, litellm_settings and environment_variables.
//
// Load (or Parse) returns the Config, every Problem found (warnings and errors, each with the
// 1-based line it concerns, sorted by line) and an error when the file is unusable.
//
// Design decisions:
//
//   - The file is walked as a yaml.Node tree rather than unmarshalled into structs, so that every
//     problem carries a line number, unknown keys can be reported, and all problems are collected
//     in one pass instead of stopping at the first.
//   - Unknown keys anywhere are warnings and are otherwise ignored: LiteLLM configs carry many keys
//     for its LLM proxy, and users should be able to point mcpgw at the file they already have.
//     Known LiteLLM mcp_servers keys that mcpgw does not implement get a warning that says so.
//     An unknown key within 2 edits (insertion, deletion, substitution or swap of neighbours,
//     ignoring case, and at most a third of the candidate's length) of a key the loader reads at
//     that level (top level, general_settings, litellm_settings, a model_list entry or its
//     litellm_params, a server entry) is named in the warning: `did you mean "master_key"?`.
//   - Load checks the file alone; it does not judge the master key's strength (that rule and its
//     escape hatch, LITELLM_DANGEROUSLY_PERMIT_WEAK_OR_UNSET_MASTER_KEY, belong to
//     internal/identity) nor look for stdio commands on disk. `mcpgw check` adds both, using
//     MasterKeyLine and CommandLine to point at the line.
//   - A string value of exactly the form os.environ/NAME is replaced by NAME's value, looked up in
//     the file's environment_variables first and then through Options.LookupEnv. The package never
//     reads the process environment itself, which keeps it pure and testable. An unset variable is
//     an error naming the variable. Values under ignored keys are not resolved. The values of
//     environment_variables may themselves refer only to the outside environment.
//   - Credentials (auth_value, client_secret, master_key, database_url, api_key) have the type
//     Secret, which prints, logs and marshals as "[redacted]"; Reveal is the one way to the value.
//     No Problem message ever contains a value from the file other than names, enum words and
//     protocol revisions.
//   - A server name that contains the tool prefix separator is an error, because tool and prompt
//     names are served as <server><separator><tool> and the gateway could not tell where such a
//     server name ends. The separator is an Option (normally MCP_TOOL_PREFIX_SEPARATOR, default "-").
//     Names and server_ids must also fit in one URL path segment (/{server}/mcp).
//   - Scalars are read by their text whatever YAML type they resolve to, so `auth_value: 12345` and
//     an unquoted `protocol_version: 2025-11-25` mean what the user wrote. transport, auth_type and
//     oauth2_flow are matched case-insensitively; protocol revisions exactly.
//   - YAML anchors, aliases and merge keys (<<) are supported, as in LiteLLM's loader; explicit keys
//     win over merged ones, and the total expansion is bounded so a small file cannot make loading
//     slow. Duplicate keys in one mapping are errors (two servers with one name among them).
//   - Duplicate model_name entries are allowed (LiteLLM load-balances across them).
//   - The set of protocol revisions comes from internal/mcp (KnownRevisions), the one place
//     that lists what the gateway speaks; a local copy would drift. mcp_advertised_versions
//     defaults to all of them (2024-11-05 … 2026-07-28): an older client asking for its own
//     revision must get it back, since the spec lets it disconnect otherwise. A list narrows
//     what is served downstream (initialize answers the newest listed legacy revision when the
//     requested one is not listed; a list without 2026-07-28 refuses modern requests).
//   - Route keys: a server is reached by its name, its server_id or its alias (/{server}/mcp, REST
//     server_id). Routes builds the one lookup every route uses: a name wins over any server_id or
//     alias, a server_id over any alias, the earlier server among equals. A server_id or alias that
//     shadows another server's name, id or alias is a warning; a duplicate server_id an error.
//   - The downstream HTTP server's bounds are general_settings keys (HTTPLimits; each must be
//     positive; durations are seconds, fractions allowed). Defaults (DefaultHTTPLimits):
//     http_read_header_timeout 10, http_read_timeout 30 (a request body, from when its handler
//     starts), http_write_timeout 300 (responses that are not streams; a server whose timeout
//     is not shorter gets a warning), http_idle_timeout 60 (keep-alive), http_max_header_bytes
//     65536, max_request_body_bytes 4194304, max_connections 4096, max_inflight_requests 256
//     (long-lived streams excepted: they are bounded by max_connections).
//   - allowed_hosts lists extra Host names served behind a reverse proxy (gw.example.com, or
//     *.corp.example for any subdomain); allowed_origins lists extra browser origins
//     (https://app.example.com). Neither accepts "*": the DNS-rebinding guard stays on.
//   - max_listeners_per_caller (default 64, positive) bounds the upstream listeners one caller
//     holds at once across its subscriptions; the gateway refuses a listen that would pass it.
//   - mcp_health_check_interval (seconds, default 60, 0 off) and mcp_health_check_timeout
//     (seconds, default 10, positive) time the MCP servers' health checks;
//     mcp_preview_allow_stdio and mcp_preview_allow_private_networks (both false) open the
//     server previews to stdio commands and to loopback and private addresses (HealthSettings).
//   - ParseServerRequest (request.go) reads one server from a JSON body shaped as LiteLLM's
//     NewMCPServerRequest by turning it into an mcp_servers entry and loading that, so a
//     posted server obeys exactly the file's rules; credentials' entries count as the server's
//     own keys, mcp_access_groups as access_groups, nulls as absent.
//   - A Config is a value: nothing in it is shared with the loader, and a reload is a new Load
//     whose result the caller swaps in atomically.
package config
