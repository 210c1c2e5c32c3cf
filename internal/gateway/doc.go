// Package gateway is the era-neutral core: an Operation (one downstream request, either
// protocol era) in, an Outcome out. It routes calls by prefixed name or resource URI, aggregates
// lists through internal/catalog, answers server/discover, seals MRTR continuations, bridges
// interactions (elicitation, sampling) and serves subscriptions/listen. It knows nothing of
// HTTP: the front decodes requests into Operations and encodes Outcomes.
//
// The Operation carries what the core needs and nothing it must not see: the method and raw
// params, the caller and the servers in scope, the caller's Surface (legacy, legacy SSE, modern
// or REST) and Revision, the Credentials the front lets through (the caller's headers without
// the gateway's own key, and its bearer token when that is not the key), its Mcp-Param-*
// headers, and for a legacy session the Interactions it can be asked on. The core uses the
// surface only for behaviour (see the era matrix), never to pick an encoding. Credentials
// share the request's header map and hide the gateway's key behind their accessors (Get,
// All): the key cannot be read through them, and no stripped copy is made per request.
// Rejected: the stripped copy it was (a map of 300-400 bytes that a held stream kept for its
// life).
//
// The Outcome contract: exactly one of
//
//   - Complete: Result is the raw result to answer (upstream bytes, patched only where the
//     gateway must: names, _meta);
//   - InputRequired (modern callers only): Result is an input_required result whose
//     requestState is a sealed continuation;
//   - Error: Fault names the fault class and a caller-safe message (see internal/fault for
//     the table that turns it into an HTTP status, a JSON-RPC error or an in-band result per
//     surface).
//
// A tool refused by policy is Complete (LiteLLM's in-band refusal, in every era).
//
// Era matrix (caller × upstream) for the input an upstream asks for mid-call:
//
//	caller \ upstream   modern (input_required)                       legacy (server→client request)
//	modern              passed through: the upstream's requestState   cannot be suspended across requests: the
//	                    sealed in a continuation bound to caller,     request is cancelled and the caller gets
//	                    operation and target, resumed later           an isError result saying so (sampling the
//	                                                                  gateway fulfils itself)
//	legacy              asked on the caller's session                 relayed to the caller's session and the
//	                    (Interactions), then retried upstream with    answer back
//	                    inputResponses and the upstream's state
//
// The upstream's era is what its client negotiated, with one choice made per caller: a stdio
// upstream in auto mode (protocol_version unset) that speaks both eras is spoken to in the legacy
// era for legacy callers' operations (Gateway.options sets upstream.Options.LegacyCaller; a child
// of their own) and in the modern era for modern callers and catalog listings, so a legacy caller
// of such a server is in the right-hand cell and a modern one in the left-hand cell. Both are the
// cells that serve that caller natively; the legacy era costs the go-sdk's child less per call.
// HTTP upstreams and pinned stdio ones have one era for every caller.
//
// Sampling is answered by the gateway's own model whenever one is configured (Config.Sampler),
// in every cell. A request for a capability the caller did not declare is a
// missing_capability fault.
//
// Middleware (Config.Middleware) wraps Do, the one entry for operations: each Middleware sees
// the Operation and the Outcome and may answer itself (a guardrail refusing with a fault). The
// chain is composed once in New; with none, Do calls the router directly.
//
// Design decisions:
//
//   - server/discover and the probes a listen starts with go through the catalog's per-server
//     breakers and patience (see internal/catalog): a server that recently timed out is skipped
//     at once, a slow one costs at most the patience, and the result's _meta carries
//     "litellm.ai/server_outcomes" ({server: {status}}) as aggregate lists do.
//   - A held listen keeps the caller's own tokens current (listen_callertoken.go): every
//     Config.ListenTokenCheck (DefaultListenTokenCheck, 30 s) it asks the vault again for the
//     tokens its upstream listeners were opened with (the ask also refreshes a token that is
//     due). A changed token (refreshed here or on another replica) closes the listeners and
//     opens them again with the new token, without a new acknowledgement; a deleted one
//     (CallerTokens.Token wrapping ErrCallerTokenAbsent) ends the listen. A failure to read
//     the vault keeps the listeners as they are. The check runs beside the wait of
//     ListenFilter's set-up loop, so a listen never outlives its caller's token by more than
//     one interval. Rejected: a notification from the vault, which would miss refreshes and
//     deletions made on other replicas sharing the database.
//   - Callers' own upstream tokens (callertoken.go): for servers whose credential is the
//     caller's own OAuth token (Server.CallerToken), Config.CallerTokens (the token vault) is
//     asked once per operation, listen or introduction for the caller's tokens of the visible
//     such servers; each goes in the server's credential slot for that caller only (sessions
//     are never shared between tokens). A call to such a server without a token is answered
//     -32042 (URL elicitation required) with data.authorizeUrl and a URL-mode elicitation
//     naming the authorize link (built from the public base URL the front put in the context,
//     WithPublicBase); the fault encoding shows a modern caller the URL in a tool error. A
//     caller that declared URL-mode elicitation is asked instead: a legacy session by
//     elicitation/create (mode url) mid-call, after whose acceptance the call polls the vault
//     (every 0.5 s, at most authorizeWait, 2 min) and proceeds once the token is there; a
//     modern caller by an input_required result (input request "mcpgw/authorize") whose sealed
//     continuation is marked Authorize, so its retry runs the call again from the start. An
//     upstream 401 to the token asks the vault to refresh it once and the call is sent again
//     with the new token (a 401 means the call was not run); when it cannot be refreshed the
//     vault drops it and the caller is asked to authorize. When the vault holds no token for
//     the caller and the operation's scope is that one server, the bearer the caller itself
//     presented (Credentials.Bearer: never the gateway key) is used instead: a token its MCP
//     client obtained through the client-run OAuth flow. The vault's token wins; an upstream
//     401 to the caller's own token is answered as is (its client refreshes it).
//   - server/discover is live (discover.go): nothing of an earlier answer is reused, since a
//     cached optimistic answer would promise notifications a server can no longer send. Each
//     discovery first admits each server (one that takes the caller's own OAuth token,
//     Server.CallerToken, when the caller holds none, is "auth_required"; one whose request
//     limit, Config.Limit, refuses one more discovery is "limit_exceeded"; neither is
//     contacted); then reads every admitted server's catalogs (tools, prompts, resources,
//     resource templates, in that order, from the upstream: the catalogs the answer describes),
//     each server's reads under one listing timeout; then, once all reads ended, probes every
//     server at once (upstream.Client.Discover: a server/discover request, or a fresh legacy
//     handshake) under the listing timeout. So a discovery takes at most twice the listing
//     timeout (plus the patience of an aggregate). A server that fails any step leaves tools
//     offered but promises no list changes and no subscribe; a probe's failure does not count
//     against the server's breaker (its reads just answered). The legacy initialize answer
//     (Introduce) and listens still use what each pooled conversation said when it began.
//   - An upstream listen (modern) or follow (legacy) is opened for a server only when it offers
//     something of what the listen wants (offers): a list change it announces, a URI it lets be
//     subscribed to, or, for a legacy session, its log lines or URL-mode elicitation
//     completions. A server that announces nothing is never sent subscriptions/listen; a legacy
//     caller's resources/subscribe that no server can honour fails at once.
//   - A tools/call is admitted by Config.AdmitCall (the caller's own limits: its key's and
//     team's, and those of its server the composition root adds) once it is routed and
//     allowed, just before it is sent, so a call refused for any other reason is never
//     counted; the call is sent with the context AdmitCall returns (so the upstream client's
//     middleware can tell what was admitted); the place it takes is given back when the call
//     returns, however it ends (deferred: completion, failure, cancellation, panic). A
//     resumed call is not admitted again: its first leg was.
//   - After a tools/call (and a resumed one) the caller's cached lists of that server are
//     forgotten (catalog.Forget, for the credentials of a scoped and of an aggregate request): a
//     call may change the server's catalog, and a server without list-changed notifications, or
//     one nobody follows, would not say so.
//   - A SubscriptionFilter from outside is validated by ParseFilter before anything is
//     acknowledged: at most MaxResourceSubscriptions (64) resourceSubscriptions, each an
//     absolute URI of at most 4096 bytes (an empty entry would match every URI). A bad filter is
//     -32602 with HTTP 400 and a message naming the entry.
//   - subscriptions/listen keeps its promises (listen_setup.go, listen_delivery.go). Set-up is
//     all or nothing: every upstream listener the listen needs (a subscriptions/listen on each
//     modern upstream whose capabilities cover part of the filter; a followed session on each
//     legacy one, set up with its stream open, and its resources/subscribe) is opened and
//     established (a modern upstream has sent its own acknowledgement) within the listing
//     timeout before the caller's acknowledgement is sent. Listens sharing a legacy upstream
//     session (same credentials) share its subscription to a URI: the first sends
//     resources/subscribe, bounded by the listing timeout and not by its own listen (others may
//     wait for it), and the others wait for that answer; a refusal fails every one of them, and
//     the last to leave unsubscribes (so does a subscribe that timed out: the upstream may have
//     made it). A listen that cannot be set up
//     closes what it opened and is refused, unacknowledged. A listen asking for nothing opens
//     nothing and stays open until the caller leaves. Upstream listeners count against the
//     caller's capacity (Config.MaxListenersPerCaller, default 64, per replica), keyed by its
//     user id, else its binding: reserved whole before anything opens, released when the
//     listen ends. A listen whose upstream ends its listen ends too, after what the upstreams
//     sent before is delivered (it no longer covers that upstream; the caller may listen
//     again), unless it is persistent (Filter.Persist: a legacy caller's session, which cannot
//     listen again itself): its listeners are then set up again after relistenDelay (1 s)
//     and its views checked against the last ones delivered, so a visible change made
//     meanwhile is delivered and an invisible one is not; one that cannot be set up again ends.
//   - Events are delivered in the caller's view. A list change is delivered only when a digest
//     of what the caller sees of that list (catalog.Digest: the server's list filtered and
//     renamed for the caller) differs from the last one it was given: a change to a tool the
//     caller may not see stays hidden. The baseline is taken before set-up and checked again
//     right after the acknowledgement, so a change made while the listeners were opening (which
//     no upstream reports on the new listen) is delivered, not lost. An upstream's change whose
//     list cannot be fetched is delivered (the caller may re-list). Events are only queued on
//     the upstream's goroutine (list changes coalesced per server, other events at most 64);
//     the listen's own goroutine (the caller of ListenFilter, so no goroutine of its own)
//     fetches views and emits, after the acknowledgement, each wake's work on a goroutine
//     started for it and waited for (internal/shallow: the held goroutine only waits, so its
//     stack stays at 2 KB; one at a time, in order). The caller's own duties for its
//     stream run there too (Listener: Tend, woken by its Wake channel; Done ends
//     the listen). Wake is also the delivery's own channel, and an upstream ending its listen
//     is a flag read on a wake, so a held listen waits on three channels (its context, Done,
//     Wake): each channel a goroutine waits on costs it a sudog, so the front wakes it from
//     its duties' timer and its queue on Wake rather than on channels of their own. A held
//     stream needs one goroutine for all of it: a front loop of its own
//     per stream (re-checks, keepalives, writes) was rejected for its stack, paid per held
//     stream. Tend and the Listener's Done are served only while the listen waits for events,
//     not during a set-up (bounded by the listing timeout): a re-check or keepalive due then
//     waits for it. ListenFilter describes the listen in a function that returns before the
//     listen is held (beginListen), so its frames are not on the held stack. ListenFilter is
//     OpenListen (set-up and acknowledgement) then OpenedListen.Hold (delivery until the end),
//     so that a caller can open a listen in its handler and hold it elsewhere: the front hands
//     Hold to its server (internal/handoff), which runs it once the handler chain unwound.
//     Hold's goroutine only waits: each wake's work (the views, Emit, Tend, setting up again)
//     runs through internal/shallow on a goroutine of its own, so a held goroutine that never
//     grew keeps the runtime's 2 KB minimum stack (one that grew is never shrunk below 4 KB).
//     After an
//     upstream announces a list change it waits listChangeSettle (100 ms) before comparing, so
//     one change announced by several upstreams (servers sharing a backend) is told once, and
//     when a change is told the caller's views of that kind on its other followed servers are
//     refreshed first, so an announcement arriving later for the same change finds nothing new.
//     That refresh costs one fetch per followed server per change told (shared among listens by
//     the catalog), which is why it is done when a change is told, never per announcement.
//     Many listens comparing one server's view after one change share the catalog's upstream
//     walk (see internal/catalog). A modern upstream's list change makes the cached lists
//     stale once, where the shared upstream listen hears it (below); a legacy session's change
//     comes through the hub, whose subscriber makes them stale once for every listen
//     (internal/app), so the listens it reaches do not again.
//   - One upstream listen serves many listens (listen_shared.go). A modern upstream's
//     subscriptions/listen is shared by every listen that needs one on the same upstream
//     client, with the same credentials there (upstream.CredentialKey of the options: the
//     forwarded and addressed headers, a signed identity header, the caller's own or
//     delegated token) and the same filter sent: callers whose upstream-visible credentials
//     differ never share one. What each caller sees is still decided per listen, on delivery
//     (its filter, its view of each list, its authority re-checked by the front). The shared
//     listen is refcounted: opened by the first listen to need it, on a context of its own
//     (no listen's request, trace or cancellation), closed when the last one leaves (which
//     waits for it to end), and ended for all of them when the upstream ends it or its
//     credential is lost; the next listen then opens a new one. A listen joining one already
//     acknowledged is established at once: its baseline views, checked again after its own
//     acknowledgement, cover what it did not hear (list changes need no replay). Events are
//     handed to each listen's delivery, which only queues (bounded, as before), so a slow
//     caller never holds the others. Listener capacity (MaxListenersPerCaller) still counts
//     per listen: it bounds what a caller may ask for, not what the upstream holds.
//     Rejected: one upstream listen per upstream and credential asking for the union of the
//     filters (widening it means a new upstream listen and a gap or a duplicate at the
//     switch); listens with different filters on one upstream are rare.
//   - Listens outlive a config (listen_generations.go). A Gateway is built per config, but the
//     listens, the hub of legacy follows and each caller's listener count live in a Listens that
//     every Gateway over successive configs shares (Config.Listens). TakeOver, called on the
//     newest, moves each running listen whose followed servers (those visible at its start) it
//     serves with the same upstream.Client, and whose caller it lets see exactly the same
//     servers, to itself: the listen's upstream listeners (on those same clients) stay open, its
//     delivery reads views through the new policy and catalog, and every followed view is
//     checked against the last one delivered, so a tool filter that changes what the caller
//     sees is told as a list change and one that does not is not. Every other listen is ended
//     (its caller listens again, on the new config): a changed connection is a new target whose
//     listeners, sessions and subscriptions are not the ones the listen holds. A listen that
//     starts on an older gateway after a TakeOver moves (or ends) as it registers. Only the
//     newest gateway delivers what the hub hears (Notify), so a shared follower hears it once.
//     Rejected: keeping the old Gateway serving its listens until they end (two configs alive
//     indefinitely, a tool filter change never reaching them, and two hub subscribers
//     delivering each notification twice); and setting each kept listen up again on the new
//     gateway (a second upstream listen per caller, and an event in the gap lost or told twice).
//     Listens.End ends every listen at shutdown and refuses new ones. Keeps answers the same
//     question for a legacy session the front holds across configs (its caller and scope, the
//     servers it sees under the old gateway): the front keeps the session, its stream and its
//     follows (which TakeOver moves) exactly when a listen of that caller would be kept.
//   - No goroutine the gateway starts may take the process down: each recovers a panic, logs it
//     at ERROR with its stack (never the panic value, which may quote arguments or tokens) and
//     ends only the work it belongs to; listen events, which arrive on upstream goroutines, are
//     guarded the same way and a panic ends that listen.
//   - The input rounds the gateway drives itself for one request are bounded (10).
//   - Cacheable results: the core returns upstream results as they are; a modern caller's
//     cache hints (ttlMs, cacheScope) and resultType are the front's to add. Aggregated lists
//     and server/discover carry ttlMs 0 and cacheScope "private" (they are filtered per caller).
//   - A single-server endpoint (/{server}/mcp) looks like its server: a legacy initialize
//     advertises only the features the server offers (tools, prompts, resources, completions,
//     logging), each with the gateway's own list-changed and subscribe promises, which it
//     keeps by refreshing; server/discover aggregates that one server's capabilities; both
//     carry the server's instructions as they are (at most MaxInstructionsBytes, 32 KiB, per
//     server). The aggregate /mcp advertises every feature at initialize (the servers behind
//     it change) and combines the instructions of the servers the caller may see, in config
//     order, each under a "## <server>" heading. Instructions come from the same probe as
//     discovery (breakers and patience apply), so a server that does not answer in time
//     contributes none. serverInfo always names the gateway: the caller's session, names,
//     errors and limits are the gateway's, and a client keying workarounds on serverInfo must
//     not apply a server's to the gateway.
//   - Quarantined tools: a tools/call of a tool the catalog's Vetter hides (a pinned
//     definition that changed, a description a guardrail blocked) is refused with an
//     invalid_params error naming the quarantine, after the name check and before the
//     upstream is contacted.
//   - Guardrails (Config.Guard, internal/guardrail): around a tools/call, pre-call checks may
//     refuse it or rewrite its arguments, during-call checks run alongside the upstream call
//     and may refuse its result, post-call checks may refuse or rewrite the result. nil is
//     one nil check. A resumed call (a continuation) is refused when its tool was quarantined
//     since, and its result goes through the post-call checks; its arguments are not
//     checked again.
//   - Unknown names: a tools/call for a name no server the caller may use here serves (no such
//     prefix, a server the caller cannot see, or a tool its server did not list) never reaches
//     an upstream: it is an unknown_tool fault (unknown_prompt for prompts), which a legacy
//     caller reads as LiteLLM's isError "Tool '<name>' not found" and a modern or REST caller
//     as -32602 with HTTP 400. A hidden tool reads exactly like an unknown one.
//   - Mcp-Param-* headers: a modern caller's tools/call must carry the headers its tool's
//     x-mcp-header annotations ask for, agreeing with the arguments; the annotations come from
//     the catalog (the caller's own recent listing, keyed like the list cache, else the tool's
//     last listed annotations), the check from
//     internal/mcp, and a mismatch is a header_mismatch fault that never reaches the upstream.
//   - Upstream failures are classified once (upstream.Classify, then catalog.UpstreamFault)
//     into the fault table's upstream classes; the upstream's own JSON-RPC error is an
//     upstream_rpc fault carried verbatim, and a fault a client middleware answered with (the
//     server's request limit: limit_exceeded) reaches the caller as it is. REST lists never answer method_not_found for a
//     feature a scoped server lacks (MCP routes do, as the server itself would).
//   - A legacy caller that keeps state upstream (it declared roots, elicitation or sampling at
//     initialize, or sent logging/setLevel, which then goes to its own session) has its calls run
//     on an upstream session of its own (Interactions.Owner, the caller's downstream
//     session): server→client requests (roots, elicitation, sampling) are answered by the caller
//     whose call is in flight, and what an upstream keeps per session (roots it cached, the
//     logging/setLevel level) never reaches another caller, even one presenting the same key.
//     Other legacy callers share the session of their credentials (no child process per caller
//     on stdio). See internal/upstream for the bound on owners' sessions.
//   - Notifications an upstream session sends outside any request (list changes, log lines,
//     elicitation/complete, resource updates) go only to the listens following it
//     (upstream.OwnerKey, Notify): an owner's session's to that owner alone; the shared
//     session's to the followers with those credentials that have no session of their own on
//     that server (Filter.Owner), so none hears a list change twice; resource updates from the
//     shared session, where legacy resources/subscribe subscribes, to every follower whose
//     filter names the URI. Log lines go to followers whose Filter.Log is set, at or above the
//     level it returns: a legacy caller's session sets it from its logging/setLevel (every
//     level until it sets one).
//     A 2026-07-28 listen never carries log lines (the spec sends them only on the stream of
//     the request that opted in with _meta logLevel). Nothing is queued here: each line is
//     handed to the follower's stream, whose own bound applies.
//   - Elicitation modes: every legacy upstream session that may elicit offers both form and
//     URL mode (it is shared by callers with the same credentials, and servers register
//     URL-mode tools only for clients that declare it). A request in a mode the caller of the
//     call in flight did not declare ({} alone means form only) is answered to the upstream
//     with -32602, and never reaches the caller; a 2026-07-28 upstream's input request in
//     such a mode answers the caller -32021 naming the capability ({"elicitation":{"url":{}}}).
//     A URL-mode request reaching a 2025-era caller without an elicitationId gets a random one
//     (as LiteLLM does); notifications/elicitation/complete from a legacy upstream session
//     follows the legacy sessions that declared URL mode (Filter.ElicitationComplete). A
//     legacy upstream's -32042 (URL elicitation required) is an upstream_rpc fault; the fault
//     table turns it into the URLs to open for a 2026-07-28 caller, which must never see that
//     code.
//
// Observation: forward (and a resumed continuation) names the one server
// that serves an operation on the request record its context carries
// (observe.Served); the front and internal/app record the rest.
package gateway
