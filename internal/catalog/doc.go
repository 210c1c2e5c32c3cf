// Package catalog aggregates the tools, prompts, resources and resource templates of many
// upstreams for one caller at a time: <server><sep><name> naming, tool filtering, caching by the
// upstreams' ttlMs/cacheScope, sealed cursors, and per-server outcomes in the result's _meta
// (mcp.MetaServerOutcomes).
//
// It also answers, for the core, whether a caller was shown a tool (Knows) and what x-mcp-header
// annotations that tool has (ParamSpecs): both from the caller's own recent listing, keyed like
// the list cache by binding and credentials; when the caller has none and its list cannot be
// fetched, ParamSpecs falls back to the annotations the tool was last listed with (to anyone),
// so headers are still checked while a server's tools/list fails. Failures are faults (internal/fault): a bad cursor
// is invalid_params, an aggregate every server refused is the first refusal's auth_required or
// forbidden (UpstreamFault maps an upstream classification to its class), a page that cannot be
// sealed is internal.
//
// Design decisions:
//
//   - One server's failure never fails an aggregate: its outcome names the fault class
//     (timeout, unreachable, upstream_error, auth_required, forbidden), and only when every
//     server refused the caller's credentials is the aggregate itself refused.
//   - Breaker per server (not per caller, not per method): consecutive listing or discovery-probe
//     failures that say the server itself is not answering (timeout, unreachable) open it after
//     DefaultBreakerThreshold failures (1) for DefaultBreakerCoolOff (30s),
//     doubling after every failed probe up to DefaultBreakerMaxCoolOff (5m). While open,
//     aggregates and discovery skip the server at once and report status "skipped"
//     (OutcomeSkipped); a fresh cached list is still served. After the cool-off exactly one
//     request probes it (half-open) while the others keep skipping; any answer (even an error
//     or a refusal of the caller's credentials) closes the breaker. Answers that depend on the
//     caller (401/403, JSON-RPC errors, HTTP errors) never open it, so one caller cannot lock
//     others out of a server; a caller going away gives no verdict. The state is one small
//     record per configured server.
//   - Direct calls (tools/call, prompts/get, resources/read through a scoped route or a
//     prefixed name) are not blocked by the breaker: the upstream's own request timeout bounds
//     them. While the breaker is open, the pre-call check that a tool name is listed is skipped
//     (the upstream decides), as when the list cannot be fetched.
//   - Aggregate patience: an aggregate (and discovery) of several servers waits at most
//     Config.Patience (default 5s; negative: the whole listing timeout) for each server that has
//     answered before, then answers with the others and reports the slow server as "timeout".
//     A server that has never answered is waited for up to the listing timeout (a stdio server
//     may be downloading and starting; leaving it out of the first listing would hide its tools
//     from clients that list once), and so is the only server of a query (there is nobody else
//     to answer). A cold server that hangs costs one aggregate the listing timeout, and then
//     its breaker opens. Its fetch runs on in the background, bounded by the
//     upstream's listing timeout, to fill the cache and inform the breaker; at most
//     Config.MaxBackground (default 64) such fetches run at once, beyond that an unfinished fetch
//     is cancelled. When such a background fetch succeeds, the server is known to be slow but
//     alive and later aggregates wait for it (up to the listing timeout) until it fails, so a
//     server that always takes longer than the patience is left out of one aggregate, not all. A panic in a fan-out goroutine is recovered and logged at ERROR (stack only,
//     never the panic value) and reported as that server's failure.
//   - Resource URIs are not prefixed, so two servers may list the same one. The first server in
//     the query's order (config order on the gateway's routes) owns it: the aggregate
//     resources/list shows its entry only, and resources/read (and completion by resource ref)
//     goes to it; the others' entries are dropped from the list and their outcome counts. A
//     server repeating its own URI is left as it is. The operator is warned (WARN, not ERROR:
//     the gateway serves a consistent answer) once per URI per process, naming the server that
//     serves it ("served_by") and the ones ignored. The URI is logged without userinfo, query or
//     fragment, where credentials are carried, clipped to 256 bytes, with "uri_sha256" (a digest
//     of the whole URI) to tell such URIs apart. The URIs already warned about are remembered by
//     digest, at most 4096; when full the record starts over (a URI may be warned about again).
//   - Pages follow the upstreams' pages. An upstream list is fetched whole (every page walked,
//     see internal/upstream), but the walk reports where the upstream's pages ended (Pages.Cuts:
//     item counts, kept through the list cache, the caller's tool filter and duplicate-URI
//     dropping). An aggregate page ends after PageSize (500) items or where a server's page
//     ended, whichever comes first, so a server's pages are never merged into one gateway page
//     and a caller paging through the gateway sees the upstream's boundaries (an upstream paging
//     one tool per page gives one tool per gateway page). The end of a server's list is no cut:
//     servers that send one page share gateway pages as before. Empty upstream pages, and pages
//     the caller sees nothing of, leave no empty gateway page. REST listings ask for the whole
//     aggregate as one page (Query.Whole). Cuts cost nothing when an upstream sends one page;
//     finding a page's end is a binary search over the cuts. A server's cuts are bounded by its
//     walk's page cap (MCP_TOOL_LISTING_MAX_PAGES). A first page that does not reach the end
//     keeps a snapshot (see Snapshots), as a list longer than PageSize always did.
//   - Renaming (<server><sep><name>) replaces the name member of each item as listed: nothing
//     else of the item is decoded or re-encoded, and one server's renamed items share one
//     buffer (a listing of 50 servers was dominated by per-tool copies). An item whose name
//     member appears twice is dropped (parsers disagree on which counts), like one without a
//     name; the names found are reused for the caller's record (Knows). Where each item's
//     name lies is remembered per server and method with the last list presented (its items
//     referenced, not copied: one list per server and method); an item at the same place,
//     byte for byte the same, in the next list is not scanned for its name again (nameSpans).
//     Comparing bytes costs a fraction of a scan and no copy of the name. Caller and
//     credentials do not enter into it: what is remembered is a function of the bytes.
//     Likewise a caller listing the same names again keeps its record's set, and annotations
//     (x-mcp-header) are parsed again only for an item whose bytes changed.
//   - Cursors are sealed (SealPurpose, cursorTTL) and carry the method, the caller's binding
//     (caller and scope), the offset where the next page begins and the walk's snapshot id; a
//     cursor for another method or binding, tampered, expired or sealed with another key is
//     invalid_params and never reaches an upstream.
//   - Discovery reads catalogs (Read): all four lists of one server, in order, from the upstream
//     past the cache (and refreshing it), so a discovery describes what the server serves now.
//   - One walk per list in flight: callers that miss the cache for the same server, method and
//     credentials key while that list is being fetched under the same stamp share one upstream
//     walk (N listens comparing their views after one change cost one tools/list, not N). A
//     walk depends only on what the upstream is sent, which the credentials key names; each
//     caller's tool filter is applied to the shared result. A caller whose stamp is newer (the
//     list changed or was forgotten since the walk began) walks again rather than share an
//     answer from before the change. The walk runs on a worker of its own: a waiter whose context
//     ends stops waiting at once without ending it for the others; the last waiter leaving
//     cancels it, and the upstream client bounds it by the listing timeout in any case. A
//     fan-out's walk runs on the fan-out's goroutine for that server (walkHere), which nobody
//     waits on past its caller's end (Patiently stops waiting then): one goroutine per
//     upstream per listing, not two. Such a goroutine may run on after its caller left, to land
//     a walk others wait for, as the walk's own goroutine would. Only the
//     walk's starter asks the breaker; while a server's breaker is open a caller finding its
//     walk (the probe) in progress is skipped, not made to wait. At most one walk per server,
//     method and credentials is joinable at a time (an older one runs on for its own waiters).
//   - Forget drops one server's lists cached for given credentials (every binding's) after a call
//     through the gateway, which may have changed them, and stales the fetches with those
//     credentials in flight (their Put stores nothing). Forget runs on every tools/call, so the
//     in-process cache makes it one update of the credentials' state, not a sweep: entries kept
//     before it are stale and dropped when met. Invalidate is likewise one counter update (each
//     entry keeps the stamp it was stored under; Get compares). A credentials' state lives while
//     it has entries (a count kept on Put and on every drop) or holds a forget newer than the
//     floor; a forget of credentials without entries leaves such a trace for the fetches that
//     may be in flight with them. States are bounded by 20000 (at most one per entry, the rest
//     traces): when full, every trace is dropped at once and the floor advances, so a fetch
//     then in flight with credentials that have no entries stores nothing (it is served, and
//     the next fetch stores). No entry is dropped for it: a caller varying its credentials on
//     every call cannot flush anyone's lists. A cache that cannot forget by credentials (no
//     Forget method) invalidates the server's lists for everyone instead.
//   - Vetting (Config.Vetter, internal/pinning): every tools/list fresh from an upstream is
//     vetted before it lands for its waiters or is cached, so the listing that sees a changed
//     definition already hides the tool; every listing (cached or not) leaves out the tools
//     the Vetter hides, and Quarantined answers the gateway's call check from the same
//     Vetter, so listing and calling agree. Without a Vetter this is one nil check.
//   - A listing's cost per upstream page is kept off what does not change: the items of an
//     unchanged list are the upstream client's slices from its last walk (its page memo), so
//     the name spans, the pinner and the annotations tell the list unchanged by its items'
//     address; each list's prefixed items are made once (nameSpans) and a listing only filters
//     them. A walk's goroutine grows its stack to what a walk reaches in one step at its start
//     (growStack): grown call by call, deep in the HTTP exchange, its copies were a twentieth of
//     a listing's CPU over 50 upstreams. The fan-outs' calls and the walks run on Workers
//     (Config.Workers; the gateway keeps one for the process, closed after the upstream
//     clients): goroutines kept between calls, so a call finds a stack already grown (growStack
//     then only clears its frame) and no goroutine is made or freed per upstream. The runtime
//     shrinks an idle worker's stack at a garbage collection; its next walk grows it again in
//     one step, a copy of an almost empty stack, once per collection rather than once per
//     upstream page. A call is never queued: with no worker waiting, a new one starts (up to
//     DefaultMaxWorkers kept, 256), and past that bound the call gets a goroutine of its own, so
//     a fan-out still runs every call at once and its caller's end still cancels each one (the
//     fetch's context is the same). A worker recovers a panic and goes on; one whose call ends
//     its goroutine (runtime.Goexit) frees its place. Close waits, within its context, for
//     every call handed over before it, kept worker or not, so App.Close closes the store and
//     Redis under none of them (or says which did not end). What it costs: the idle workers'
//     stacks between listings (at most the bound, shrinking while idle) and a Close; an idle timeout per worker was not added (timers per worker for memory the
//     collector hands back anyway). Measured on BenchmarkToolsList50 (h82-listfan in
//     docs/benchmarks.md): growStack, stack copies and goroutine exit went from about a tenth
//     of the profile to about 2 %; the CPU per page fell 3–5 % at load 11–20 (lower in 13 of
//     18 pairs) and about 1 % at load 7, within the noise: a rough figure.
//   - A fan-out detaches its caller's context once (detachedFrom): every fetch's context, and
//     the context of a walk a fetch leads, is a cancel context under that one, not under two
//     more wrappers made per upstream.
//   - Bounds: the list cache holds at most 10000 entries (expired ones swept, then started
//     over); "what each caller was last shown" at most 10000 records for a minute (then started
//     over); paging snapshots at most 256, for a minute; cursors live 10 minutes.
//
// Seams for state replicas may share (Config.Lists, Config.Snapshots; nil means the in-process
// implementation, and internal/app injects them):
//
//   - ListCache holds each upstream list as fetched (items and page cuts), keyed by server, method, the credentials'
//     key and, for a "private" entry, the caller's binding, until the upstream's ttlMs runs out;
//     a "public" entry serves every binding with the same credentials. It also counts each
//     server/method's invalidations (list_changed) and, when it can forget by credentials, each
//     server/credentials' forgets: a fetch reads both (a Stamp) before it asks the upstream and
//     its Put is dropped when either moved, so a list fetched across a change or a call is never
//     stored. MemoryListCache is bounded as above. A shared implementation must keep entries
//     apart by every key field, never serve an entry at or past its expiry, and make Invalidate,
//     Forget and the stamp check atomic with respect to Put (a Put carrying an old stamp stores
//     nothing). A failing cache is treated as empty: the upstream is asked.
//   - Snapshots keeps a paged aggregate (items, page cuts and outcomes) for a minute under a random id that
//     the sealed cursor carries, bound to the caller's binding: another caller's cursor never
//     reaches it. MemorySnapshots holds 256 (expired dropped, then the oldest). A shared
//     implementation must make ids unguessable, check the binding and the expiry on Get, and may
//     forget a snapshot early: the cursor is then served by a fresh fan-out, as on a replica
//     without it. The contract both must pass is in package catalogtest.
package catalog
