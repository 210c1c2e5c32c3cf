// Package app is the composition root: it turns a loaded config into a
// running gateway (New), serves it (Handler, Server), applies a new config
// to it while it runs (Apply) and stops it (Drain, Close). cmd/mcpgw, the
// benchmarks and the end-to-end tests all build the gateway through it;
// nothing else constructs the graph.
//
// # What it owns
//
// Built once per App and shared by every config it runs: the environment
// settings (Env), the token sealer (one key for the process, so session ids,
// cursors and continuations sealed before an Apply still open after it), the
// answer byte budget shared by all upstream clients, the notification hub,
// the record of ended legacy sessions (so a deleted session stays deleted
// across Apply), the Redis client when one is configured (redis.go: settings
// from the config's cache_params / router_settings or REDIS_URL, REDIS_HOST…;
// reported by readiness, never failing it), the one gate every limit goes
// through (limit_shared.go: limits.Redis shared by the replicas on that Redis,
// falling back to limits.Local while it is unreachable or failing closed as
// redis_failure_mode says; limits.Local alone without Redis; kept across
// Apply) and each server's current rpm and max_concurrent_requests (read by
// its client's middleware on every call and by the gateway's Limit on every
// discovery, which counts once per server, so a change needs no new client).
// A tools/call is admitted once against its key's and team's limits and its
// server's together (limit_callers.go has the rules: the key's own limit over
// its team's, a team's shared by its keys; the gateway admits each
// tools/call through it, Config.AdmitCall, whose context tells the client
// middleware the server's limits are taken), the health endpoints and the admission layer (host guard,
// in-flight bound, body read deadline; general_settings' HTTP limits
// therefore take effect at start only). Built per config, as one generation: the server registry, the
// upstream clients, the caller authenticator, the sampler, policy, catalog,
// gateway and the HTTP front, with the mux over them.
//
// # Build order
//
// New reads the environment, creates the data dir, builds the sealer, opens
// the key store (Postgres when general_settings.database_url, else
// DATABASE_URL, is set: one that does not open fails the start rather than
// silently keeping keys in SQLite; otherwise <data-dir>/mcpgw.db; none
// without either; migrated at open), builds the byte budget and the hub,
// then wire builds a generation: the authenticator (given the store's
// lookup), the key routes,
// the upstream clients (each publishes its out-of-band notifications to the
// hub), the sampler, policy, catalog and gateway (which subscribe to the hub
// once built), the front, and the mux. The hub comes first so that no layer
// needs a reference to one built after it: clients publish to it, the
// catalog's list cache and the gateway's listens subscribe to it. Hub is a
// seam (package notify) so replicas can share it.
//
// # State replicas share
//
// With Redis configured (redis.go), shared_state.go builds the hub, the
// ended-session record and the legacy answer relay over it (package
// sharedstate, keys and channels under "mcpgw:", a random name per App), so
// a load balancer without stickiness serves legacy sessions and list changes
// as one replica would; each falls back to this replica alone while Redis is
// down. Without Redis they are notify.Memory, front.MemoryTombstones and no
// relay. A hub given with WithHub is used as it is. Close ends their
// subscriptions before it closes the Redis client.
//
// # The server registry
//
// The registry (registry.go) holds each configured server once, keyed by
// name, with the route lookup config.Routes defines (a name wins over any
// server_id, a server_id over any alias, earlier servers over later ones),
// and projects it into each layer's view: policy.Server, catalog.Server,
// gateway.Server and upstream.Config. It lives here rather than in a package
// of its own because those projections are wiring: a separate package would
// import every layer it feeds and become a second composition root.
//
// # Apply
//
// Apply builds a new generation and swaps it in atomically; a request runs
// entirely on the generation current when it arrived. A server keeps its
// upstream client (and so its upstream sessions, child process and pooled
// connections) when its connection identity is unchanged: everything its
// client is built from (sameConnection lists it). Metadata the layers above
// read per request (description, server_id, alias, access groups, tool
// filters, extra_headers, rpm, max_concurrent_requests) never needs a new client. After the swap the
// new gateway takes the listens over (gateway.TakeOver, over the one
// gateway.Listens every generation shares): a subscriptions/listen whose
// followed servers all kept their clients, and whose caller sees the same
// servers, goes on with its upstream listeners open and is told a list
// change only when what it sees changed (a tool filter); one following a
// removed or changed server ends, and its caller listens again. Legacy
// sessions follow the same rule: every front shares one front.Legacy (the
// live sessions, their GET streams, /mcp/sse connections, follows and
// resource subscriptions), and the old front hands it over
// (front.MCP.HandOver): a session whose caller sees the same servers, each
// with the same client, keeps its stream, follows (moved by TakeOver, so a
// filter change it can see is told as list_changed on its stream), log
// level and subscriptions, and its next requests run on the new generation;
// any other session ends and is buried (404 on its next request, so its
// client initializes again; the spec's answer for a session that is gone),
// an /mcp/sse connection once it has answered the requests it is running.
// Then the old generation's running requests finish (an /mcp/sse request
// answered after its POST returned is held in the count of the generation
// that received it, front.MCPConfig.Hold), its hub subscription ends, and
// the clients of removed or changed servers are closed. A stream (an
// acknowledged listen, a legacy GET stream, an /mcp/sse stream) is not a
// request in flight: it detaches from its generation's count
// (front.MCPConfig.Detach) once open, so retiring never waits for a kept
// stream. Drain ends the listens of every generation (gateway.Listens.End)
// and every legacy session. Because the front is built over one gateway,
// each generation has its own front; a legacy session this replica does not
// hold (served elsewhere, or ended at shutdown) reopens from its sealed id,
// sealed with the App's one sealer.
//
// Rejected: keeping a legacy session whose server's connection changed, with
// its follow set up again on the new client. Its upstream sessions,
// subscriptions and the state the caller set there (roots, a log level) are
// gone with the old client, and the caller would not know; ending it makes
// the client start over, as a listen's caller listens again.
//
// # Reloading
//
// A Reloader (reload.go) re-reads the App's config file and Applies it; serve
// drives it from SIGHUP (Trigger) and from a watch of the file's directory
// (Watch, reload_watch.go, fsnotify). It lives here, not in a package of its
// own, because its one idea is "load as serve does, then Apply", and both
// halves are this package's. Design decisions:
//
//   - The directory is watched, not the file: editors rename a new file over
//     the old one and Kubernetes swaps the ..data symlink, and a watch on the
//     file itself would follow the replaced inode and go silent. Events
//     naming the file or ..data schedule a reload; others are ignored.
//   - Reloads are serialized by one goroutine fed through a one-slot channel:
//     triggers during a debounce or a reload fold into one more reload. The
//     debounce (DefaultReloadDebounce, 200 ms of quiet, at most ten of them)
//     absorbs an editor's several events per save.
//   - The SHA-256 of the bytes is taken before the file is parsed, so a
//     change racing the read is never mistaken for content already seen.
//     The content running is never re-applied (Apply would build a
//     generation for nothing); content whose last attempt failed is retried only on a
//     signal, not on a watch event. An empty file is refused: it is almost
//     always a save caught between truncation and write.
//   - Each Apply waits at most DefaultReloadApplyTimeout (30 s) for the old
//     generation's requests before closing stale clients.
//   - The generation counter is the App's (1 at start, +1 at each Apply's
//     swap, whether a file reload or a change of the stored servers caused
//     it); the last reload error (its first problem with its line, or the
//     error without the file's path) is the Reloader's. Readiness shows them
//     as "config" once a Reloader exists or servers are kept in the store, so
//     an App with neither answers as before. A failed reload never fails
//     readiness: the running config is whole.
//   - Both goroutines (reloads, watch events) recover panics and end at
//     Close, which waits for a reload that is running. When the watch cannot
//     start, the caller logs it and signals keep working.
//
// # Stored servers
//
// With general_settings.store_model_in_db, servers may be kept in the store
// and managed through /v1/mcp/server (servers*.go; the routes are front's,
// serverRegistry is their front.ServerRegistry). Design decisions:
//
//   - The effective config is always the config file's last applied config
//     plus the stored servers, built inside Apply under its lock: Apply(cfg)
//     for a file reload, Apply(nil) for a change of the stored servers (the
//     file's config last applied). Each Apply reads the stored servers again,
//     so two changes racing cannot apply an older read over a newer one; when
//     the read fails, a file reload goes on with the rows read last, and a
//     re-apply fails.
//   - A stored server becomes an mcp_servers entry and goes through
//     config.ParseServer: the file's rules and messages, and os.environ/NAME
//     resolved as in the file (environment_variables, then the environment
//     New was given). One that cannot run (its route taken by a file server,
//     a credential that no longer decrypts, a reference not set) is left out
//     with a warning, never failing the Apply: one bad row must not block
//     every other change. The API refuses such a server before storing it.
//     Every setting of a file's server is stored (the ones LiteLLM's table
//     lacks in store.ServerSettings), its guardrails checked against the
//     file's guardrails, except spec_path: an OpenAPI document is read when a
//     generation's clients are built, where a failure fails the whole Apply,
//     so a stored URL that stopped answering would block every later change
//     and the start; leaving such a server out at build time was rejected as
//     reaching into client building for one kind of server.
//   - The file's servers are read-only through the API (409), as in LiteLLM:
//     the file is the operator's, and a reload would undo an API change.
//   - Credentials (auth_value, client_secret, static header and env values)
//     are sealed before they reach the store (internal/secretbox: AES-256-GCM
//     under a key derived once from LITELLM_SALT_KEY with HKDF-SHA256 and its
//     own label, bound to server and field). Without a salt key a literal
//     credential is refused with 400 rather than stored in clear, while an
//     os.environ/NAME reference, not a secret, is stored as written and shown
//     in answers; every other credential is answered "****", and "****" sent
//     back keeps the stored value.
//   - An API write answers once a generation with it serves: it counts the
//     write (storedWrites), marks a local change pending, kicks the same
//     one-slot channel as other replicas' changes and waits until the
//     generation serving was built from a read that followed the write
//     (storedApplied), or an Apply that covered it failed (500). One
//     goroutine per App runs the Applies, so a burst of writes shares them
//     (each Apply reads the newest rows) instead of starting one each. While
//     it waits, the write stops counting among its generation's requests in
//     flight: the Apply retiring that generation waits for those, and a
//     writer waiting for the next Apply would otherwise hold it to its
//     timeout. Rejected: an Apply goroutine per write (a burst queued on
//     Apply's lock, each waiting out the others' retirement).
//   - Other replicas: the store's OnServersChanged hook (Postgres
//     LISTEN/NOTIFY) kicks the one-slot channel; the goroutine re-reads
//     the rows and Applies unless they equal those last read (an echo, a
//     reconnect with nothing lost) and no local write is pending. It
//     recovers panics (failing the writes the Apply covered) and ends at
//     Close.
//   - A server config posted through the API (stored or previewed) may not
//     reference the gateway's own secrets with os.environ/ (deniedToAPI:
//     LITELLM_*, MCPGW_*, DATABASE_URL, Redis credentials): the config
//     loader refuses such a reference with an error naming it. Secret-
//     looking names in general stay allowed, since an environment reference
//     is how a stored server holds a credential without a salt key.
//
// # Spend and budgets
//
// With a store, New starts the spend log (spend.go): an internal/spend Writer
// over store.RecordSpend and its Sink, given to the observer after the access
// log and before any other sink, so Cost is set before those read it. A store key's
// resolved levels (keyLookup) are kept per key and end user (keyMemo) while the store's
// cache generation is unchanged and within its TTL (on the store's clock) of the oldest row
// they were read from, at most the store's cache size of entries, so a repeated caller costs
// one map lookup; rejected: keeping the identity.Caller itself: every request gets a Caller
// of its own, built from the shared StoredKey. Each
// generation's servers' mcp_server_cost_info becomes the Sink's prices when it
// starts serving (New, Apply). Close writes the queued rows, within
// spendCloseTimeout (5 s), after the upstream clients are closed (no call can
// end later) and before the store closes. max_budget is checked before a
// tools/call is admitted (budgetAdmit wraps callerLimits' admit): the key's
// and its team's spend and max_budget are read through the store's lookup
// cache, which RecordSpend invalidates for the keys and teams it charged (and
// memoised per key as keyLookup's levels are), plus the spend this replica's
// writer has accepted but not yet written (spend.Writer.Owed), so a call's cost
// counts from the moment it ends, not from its commit; a
// refused call names the server it was routed to, so its spend row does. A key's
// or team's budget_duration is honoured at admission (store.Budget.SpendAt: a
// due reset reads as spend 0, so a refusal lifts at budget_reset_at exactly, and
// Retry-After says when); the spend log also runs a store.ResetBudgets every
// budgetResetInterval (1 min) for keys and teams without traffic, and, with
// maximum_spend_logs_retention_period, the retention sweeps. Both are
// internal/spend Loops, stopped by Close before the writer's flush.
//
// # Readiness
//
// /health/readiness answers 503 with a reason before Start, from Drain on,
// and while the data dir (WithDataDir) cannot be written; those checks are
// named in the body only when they fail. The store (a ping) is named in the
// body always, as "store"; Close closes it, after the upstream clients.
// Each server's last health status is listed as "mcp_servers" and never
// fails readiness: one upstream down must not take a replica out of
// rotation (LiteLLM's readiness does not fail on an MCP server either).
//
// # Server health
//
// The prober (health.go) is built once per App and follows each generation:
// New and Apply hand it the servers and their clients (set), so a server
// added or changed (a new client) starts unknown and is checked at once, one
// whose client was kept keeps its result, and a removed one is forgotten (a
// check of it still running is ignored when it ends). Design decisions:
//
//   - A check is upstream.Client.Ping on the server's own client: the
//     lightest request of its era, on the session callers without
//     credentials share, outside the client's middleware so it never counts
//     against rpm or max_concurrent_requests. A throwaway client per check
//     was rejected: it would spawn a child per check for stdio servers and
//     handshake anew each time. A stdio server is checked only through its
//     running child; one not started yet is unknown, never started to be
//     checked. An oauth_delegate server is never checked: the gateway has no
//     credential of its own for it. Likewise a 401 or 403 answer is unknown,
//     not unhealthy, for a server the config gives no credential (no
//     auth_type beyond none, no static_headers): its callers bring theirs.
//   - Rounds run every general_settings.mcp_health_check_interval (default
//     60 s; 0: none) from Start to Close, one goroutine, the first one
//     interval after Start (a round at Start would open a session with every
//     upstream just as the first callers do, and an upstream that asks
//     something of a new session, as server-everything asks roots/list,
//     could put the question on a caller's request), and at once after an
//     Apply changed the servers; each check is a
//     goroutine of its own (at most one per server at a time) that waits for
//     one of healthConcurrency (8) slots and is bounded by
//     mcp_health_check_timeout (default 10 s), so a hung server holds one
//     slot for one timeout and delays no other check. Every goroutine
//     recovers panics and ends at Close, which waits for them.
//   - GET /v1/mcp/server/health checks on demand, as LiteLLM does, through
//     the same checks (checkNow): a check already running is waited for, and
//     a verdict younger than healthFresh (2 s) answers instead of a new
//     check, so callers cannot make the gateway ping an upstream faster.
//   - The failure text is the upstream fault class and its safe message
//     (upstream.Classify): never an upstream body, never a credential.
//   - App.healthOf answers the last result for a server (by name,
//     server_id or alias): the /v1/mcp/server routes' status fields.
//
// # Server previews
//
// POST /mcp-rest/test/connection and /mcp-rest/test/tools/list (preview.go)
// parse the posted NewMCPServerRequest with config.ParseServerRequest (the
// YAML rules), build a client for that request alone (no middleware, no hub),
// connect or list on an ephemeral session within
// LITELLM_MCP_TOOL_LISTING_TIMEOUT, and close it. They are an SSRF and, for
// stdio, a code-execution surface, so: proxy admin only; stdio refused
// unless general_settings.mcp_preview_allow_stdio; the URL's host resolved
// and refused when loopback or private (unless
// mcp_preview_allow_private_networks) or link-local (always), and the same
// rule checked again by the client's dialer on every connection after
// resolution (preview_guard.go), so DNS rebinding and redirects cannot get
// past it; no HTTP proxy. Messages are scrubbed of the config's credential
// values besides being built from safe texts.
//
// # Observation
//
// New builds one observe.Observer for the process (newObserver): the access
// log (unless general_settings.mcp_access_log is false or the logger drops
// INFO), then the metrics (internal/metrics; served at /metrics by every
// generation's front, behind the admin key unless
// require_auth_for_metrics_endpoint is false, which each generation reads).
// The front reports downstream requests to it; each upstream client gets
// observeCalls as its innermost middleware, so a call the limits refuse is
// not recorded as sent. Both are set when a client is created, so a client
// kept across Apply keeps reporting. Collectors read the config generation
// and reload status at scrape time. WithoutObservation builds an App that
// observes nothing (the benchmark's baseline).
//
// # Admin UI
//
// Unless DISABLE_ADMIN_UI=true, New builds the UI's process-wide state
// (ui.go): its sessions and its activity sink (one of the observer's
// sinks), kept across generations; each generation registers the UI's
// routes on its mux with its own authenticator, and the UI drives that
// generation's routes in-process. Its live-log streams detach from the
// generation's requests in flight (so they do not hold back Apply) and end
// at Drain.
package app
