// Package upstream talks to one configured MCP server, whatever transport
// (streamable HTTP, legacy HTTP+SSE, stdio) and protocol era (legacy
// 2024-11-05 … 2025-11-25 with its initialize handshake, or the stateless
// 2026-07-28) it speaks. The rest of the gateway sees one Client with the
// same operations for every upstream.
//
// Layers, bottom up:
//
//   - transport (transport.go): moves JSON-RPC bytes for one session.
//     httpTransport (httptransport.go, with its GET stream in
//     standalone.go) posts each message and reads a JSON or SSE answer
//     scoped to that request; mux (mux.go) correlates requests and
//     responses on one shared stream and is used by stdioTransport
//     (stdio.go, a child process) and sseTransport (ssetransport.go, legacy
//     HTTP+SSE). Besides call, send and close, the interface carries what a
//     session needs from any transport: the negotiated revision (the
//     MCP-Protocol-Version header), follow (open the stream of what belongs
//     to no request), abandoned (end the session over a fresh connection)
//     and whether the stream is shared. Transports without such a thing do
//     nothing for it.
//   - dialer: opens a session's transport. One per transport kind, picked
//     by New from Config.Transport: httpDialer (httpdial.go) opens
//     streamable HTTP or, for a session that speaks it, HTTP+SSE;
//     stdioDialer (stdio.go) starts a child and holds the restart backoff.
//     localDialer (local.go) answers in process through Config.Local (an
//     OpenAPI document served as tools: internal/openapimcp).
//     A new transport is one file with its transport and its dialer, plus
//     its case in newDialer and in Config's validation.
//   - session: one conversation: a transport plus what was negotiated on it
//     (legacy handshake, session id, protocol-version header) or, for modern
//     upstreams, the per-request _meta. session.go holds its life (setup
//     once, close once), handshake.go the era probe and handshakes,
//     request.go the requests. It reaches its transport only through the
//     interface. Sessions are pooled in the Client (pool.go),
//     keyed by the caller's credential headers (every map entry, whatever
//     the case of its key), the capabilities the caller's interaction
//     callbacks justify and, when the interactions name one, their Owner,
//     so a session is never shared between different credentials (nor
//     between owners) and is initialised once, not per call (keys.go).
//   - env (env.go) and sessionEnv: what the layers below the Client share,
//     handed to them when they are made: the log and its rate limiters, the
//     byte budget, the server-request limits, the request timeout, the
//     notification callbacks; for sessions also the dialer, the era
//     verdict (era.go), the credentials and the id source. No layer below
//     holds the Client, so none can reach its pool or its configuration.
//   - Client (client.go): era discovery (auto mode probes server/discover
//     first and falls back to initialize, then to HTTP+SSE, as the spec's
//     dual-era client rules say; the verdict is remembered and dropped when
//     the upstream answers in a way that contradicts it), paging walks
//     (lists.go: a walk returns the whole list, never a partial one, and
//     ListResult.Cuts says where the upstream's pages ended, after tools
//     dropped for invalid x-mcp-header annotations, so the catalog can end
//     its own pages there; each page's request carries the last walk's
//     page, and an SSE answer whose result repeats it byte for byte is
//     compared in the SSE reader's scratch and answered with the last
//     walk's bytes, not copied), the middleware chain around Call
//     (middleware.go).
//
// Design decisions:
//
//   - auto speaks the modern era to an upstream that offers it, with one
//     exception: on a stdio upstream, an operation of a legacy caller
//     (Options.LegacyCaller, set by the gateway for callers of 2025-11-25
//     and earlier) runs on a session of its own that starts with the legacy
//     handshake (pool key prefixed "legacy|"; a child that refuses the
//     handshake is replaced by one spoken to in the era the verdict finds).
//     The go-sdk's legacy era costs its child about a third less CPU per
//     call (its per-request _meta handling: measured with a bare stdio
//     client too, so not what the gateway sends), and a legacy caller loses
//     nothing there: it cannot take input_required, its elicitation is
//     relayed to its session either way, and a session of one owner is its
//     own child in both eras. Modern callers and everything without a
//     caller (catalog listings, health checks, Info, Discover) keep the
//     modern era, the one that carries input_required (a legacy upstream's
//     server→client request cannot be suspended across a modern caller's
//     requests). Cost: with callers of both eras a stdio server runs one
//     more child per credential set (each a pooled session, so bounded by
//     MaxSessions, started only when such a caller calls, ended after
//     SessionIdle). Rejected: serving both eras on one child, because the
//     go-sdk (v1.8.0) keeps the era per connection (the first initialize or
//     _meta-carrying request sets it; whether a handler returns
//     input_required or sends elicitation/create follows that, not the
//     request), so a modern call on a legacy-initialised child would get a
//     server→client request, not input_required; and choosing the legacy
//     era for every caller, which breaks elicitation for modern callers.
//     Pinning protocol_version: 2025-11-25 on a stdio server still buys the
//     cheaper path for modern callers too, at that price. On a shared
//     stream a modern request builds no Mcp-Name/Mcp-Param headers
//     (nowhere to carry them), and each capability set's _meta is built
//     once per session.
//   - A stdio message is written by its caller, with one non-blocking write
//     under a one-slot semaphore (stdio.go); only what a full pipe does not
//     take goes to the writer goroutine, which finishes the message before
//     releasing the semaphore, so framing survives a caller that gives up
//     and a caller never waits past its context. Rejected: handing every
//     message to the writer goroutine and waiting for its answer (two
//     handoffs between goroutines per call): with ten calls in flight it
//     cost the client about 8 % more CPU per call (BenchmarkStdioToolsCallC10,
//     interleaved, 10 of 11 pairs). A lock held across a blocking write was
//     rejected because a child that stops reading would hold every caller
//     past its deadline. The semaphore's holder frames the message in one
//     buffer per child and writes it through a callback bound once, so a
//     message the pipe takes at once allocates nothing
//     (TestStdioWriterAllocs); the reader decodes a whole line from its
//     64 KiB bufio buffer with one copy, and gathers a longer line in a
//     second buffer, dropped once decoded. The writer keeps its buffer up
//     to reuseMax (64 KiB) and drops a larger one once written, so a child
//     that once sent or got a large message does not pin that memory.
//   - Lower layers get their dependencies as a value (env, sessionEnv,
//     the dialer) instead of a pointer to the Client. With the pointer,
//     every layer could reach every field (the pool, the verdict, the
//     stdio backoff, the HTTP clients), the session asserted the concrete
//     HTTP transport to set its version, open its GET stream and end it
//     over a fresh connection, and a transport's state lived in the
//     Client. Optional capability interfaces (asserting a transport for
//     interface{ follow(...) }) were rejected as the same type switch in
//     another form: the methods are on the interface, and a transport that
//     has nothing to do for one does nothing.
//   - WithHeader (propagate.go) puts headers on a call's context that every
//     HTTP request sent for it adds, after the session's own headers and
//     never replacing them: a middleware propagating trace context uses it.
//     A context value, not a Call parameter, because the HTTP request is
//     built several layers down; stdio upstreams ignore it.
//   - Config.Middleware wraps Client.Call, the first entry outermost,
//     applied once in New; without middleware Call takes its direct path
//     (no extra call, no allocation). The chain sees one request per Call,
//     outside the client's own retries (on a new session after the
//     upstream ended one, after a stale Mcp-Param header, after another era
//     probe), so a limit or a metric counts what callers asked for, not
//     attempts; wrapping each attempt was rejected for that reason. Every
//     page of a list walk goes through Call and so through the chain (an
//     ephemeral walk's pages carry the session they share), the tools/list
//     a stale Mcp-Param header makes the client fetch again included; the
//     conversation's own requests (probe, the server/discover that starts
//     a modern conversation, initialize, notifications/cancelled), Info and
//     the answers to server→client requests do not; Discover's own
//     server/discover does.
//   - Info is what the conversation said when it began; Discover asks
//     again (probe.go): a 2026-07-28 upstream gets a server/discover of its
//     own, a legacy one a fresh handshake on an ephemeral session (its
//     initialize result is the answer, and the session is ended before
//     Discover returns; on stdio, where that would start another child,
//     the running child's handshake is the answer). Neither changes what Info reports: a pooled legacy
//     session keeps what its own handshake promised. A failed probe is
//     returned, never replaced by the earlier answer. Failures are logged after the chain, so an error a
//     middleware answers with is logged and classified like any other.
//   - Results stay json.RawMessage; the client never decodes a tool result.
//     The go-sdk client was rejected for the forwarding path: its typed
//     results drop unknown fields and fail on unknown content types, its raw
//     transport merges all POST streams into one reader (losing per-request
//     correlation) and hides HTTP status (401, 404 session expiry).
//   - The client assigns its own JSON-RPC ids; callers' ids never reach the
//     upstream, so two callers cannot collide.
//   - Server→client requests are answered through per-operation Interactions.
//     On streamable HTTP they arrive on the request's own stream, so they are
//     attributed exactly. On shared streams (stdio, HTTP+SSE) nothing in the
//     protocol says which request they belong to: they go to the single
//     pending request whose caller can answer them and are refused when that
//     is ambiguous, because showing one caller's elicitation to another caller
//     would be a leak. roots/list from outside a request's own stream (a
//     shared stream, or a streamable HTTP GET stream) goes only to a caller
//     whose session is its own (Interactions.Owner): servers send it on their
//     own timers and cache the answer for the session, so on a session
//     shared by several callers one caller's roots would become all of
//     theirs, and a modern caller's unrelated call would be cancelled for a
//     question it was never asked; it is refused there (canServeStray).
//     Progress tokens are rewritten per request on shared
//     streams for the same reason, and restored before delivery.
//   - ping is answered by the client itself; a request with no handler gets a
//     JSON-RPC error, never silence.
//   - Ping (health.go) is the health check's request: ping, or
//     server/discover for a 2026-07-28 upstream (which has no ping), on the
//     shared session of callers without credentials, outside the middleware
//     chain (a check is not a caller's request, so it never counts against
//     rpm or the in-flight bound). On stdio it only asks a running, set-up
//     shared session and answers ErrNotStarted when there is none: a check
//     must never start a child process.
//   - A session is set up at most once and never reused after it is
//     released (setup failed, the upstream ended it, Close). Concurrent
//     callers wait for one setup, each only within its own context; when
//     that setup fails, the waiters start a new session under their own
//     contexts rather than inherit the failure. Only whoever removes a
//     session from the pool releases it. Close also ends sessions still being
//     set up (their handshake is abandoned) and ephemeral ones in use.
//   - An ephemeral operation (Options.Ephemeral) is one conversation on a
//     session of its own: one handshake for a whole list walk or Info, and
//     one DELETE at the end. Its cleanup (closing the session, the DELETE
//     over a fresh connection) shares one deadline, counted from the moment
//     the operation was abandoned.
//   - Sessions are pooled per credential and capability set, so distinct
//     forwarded header values (extra_headers, a rotated delegated token)
//     each get one. The pool is bounded: at most Config.MaxSessions
//     (default 256) sessions; a session nobody uses for Config.SessionIdle
//     (default 5 min) is ended (DELETE); a full pool evicts its least
//     recently used idle session. A session in use (a call in flight, a
//     setup, a Follow) is never evicted: when every session is in use, a
//     call that needs a new one is refused at once with a PoolFullError (503,
//     retryable) rather than break a call in flight or open sessions beyond
//     the cap. Evicted sessions are ended in the background, at most 16 at
//     once, else by the caller that evicted them.
//   - Per-caller state never rides a shared session. An upstream keeps
//     state per session that belongs to one caller: roots it asked for and
//     cached (server-everything asks once per session and answers every
//     later get-roots-list from its cache), the logging/setLevel level,
//     resource subscriptions. An operation whose Interactions name an Owner
//     (the gateway sets one for a legacy downstream session that declared
//     roots, elicitation or sampling, or set a log level) therefore
//     runs on a pooled session of that owner's own, keyed by owner,
//     credentials and capability set, and reused for the owner's later
//     calls. Owners' sessions are capped among themselves by
//     Config.MaxOwnedSessions (default 128; 16 on stdio, where each is a
//     child process), within MaxSessions: a new one evicts the least
//     recently used idle owner's session, never a shared one, and is
//     refused with a PoolFullError when all are in use. An owner's session
//     outlives its downstream session by at most SessionIdle. Operations without an Owner (catalog lists, modern
//     callers, whose roots and levels travel per request, legacy callers that
//     keep no state upstream) share sessions by credentials as before. A
//     session names itself to Config.OnNotification by OwnerKey: its
//     credentials, and its owner for an owner's session, so what an owner's
//     session sends outside any request (log lines, list changes,
//     elicitation/complete) can be routed to that owner alone. Answering roots from the gateway instead was
//     rejected: the upstream decides when to ask and caches the answer, so
//     the only way to keep one caller's answer from another is not to share
//     the session; and a shared session that does not offer roots hides
//     the tools that need them (server-everything registers get-roots-list
//     only for clients that declare roots).
//   - A legacy streamable HTTP session's GET stream (server→client requests
//     and notifications outside any request) is open only while something
//     holds it: a follower (Client.FollowContext: a downstream listen or
//     legacy session following the upstream session) or a call that can
//     receive something on it (an interaction handler or Log). The first
//     holder opens it and waits until the upstream answered the GET (at
//     most min(request timeout, 5 s)); any number of holders share it; it
//     closes streamLinger (1 s) after the last one let go, so back-to-back
//     calls do not reopen it each time, and a follower's leaving closes it
//     within 3 s. No session opens it at the handshake: the upstream
//     counts an open GET stream as a listener, legacy lists are never
//     cached (no ttlMs) so the catalog needs no list_changed, and
//     notifications with nobody following reach no one. One caller's own
//     session (Interactions.Owner) is the exception: a call's hold there is
//     kept until the session ends, because its downstream session hears
//     what it sends outside requests (log lines, list changes) through the
//     hub without following it. An upstream that answers the GET with 405
//     or without a stream (a 2xx that is not an event stream) offers none:
//     it is not asked again on that session, and a follow of it is
//     established without a channel (it holds the session; what the
//     upstream sends on its POST answers still reaches followers), since
//     refusing it would refuse every legacy caller's stream for a server
//     that is working as the protocol allows. A GET that fails (a
//     connection error, 401, 503, 500, …; a 401 on a minted token is
//     refreshed and retried once) is no such answer: the follow waiting
//     for it is refused (FollowContext returns ErrFollowEnded carrying the
//     failure, so a listen is never acknowledged deaf), and the next
//     follow tries the GET again.
//   - A legacy HTTP+SSE session is its connection, which the upstream
//     counts as a listener for as long as it is open. A session that was
//     followed is therefore ended (not kept idle in the pool) when its last
//     follower has left and no call is in flight on it, never under a
//     call; the next call opens a new session. Sessions nobody followed
//     are pooled as before (idle eviction after SessionIdle). Known cost:
//     an upstream that sends a request of its own shortly after a session
//     starts (server-everything asks roots/list 350 ms after initialized)
//     reaches whichever single call can answer it on the shared stream; a
//     modern caller's call cannot, so it is cancelled and fails. Ending
//     followed sessions makes such new sessions, and so that race, more
//     frequent than idle eviction alone.
//   - A follow ends (its context, cause ErrFollowEnded) when the session it
//     holds is released (the upstream ended it, Close) or the channel that
//     carried its notifications ended by the upstream's doing (the GET
//     stream closed, the HTTP+SSE connection dropped, the stdio child
//     died, or the GET that was to open it failed after FollowContext
//     stopped waiting for its answer): what the upstream sends outside
//     requests no longer reaches it, so whoever serves a listen from it
//     ends that listen rather than keep a silent one. Re-following opens
//     the channel again.
//   - A minted (OAuth2 client_credentials) credential is renewed
//     proactively while anything follows the upstream (one watcher per
//     Client, started by the first follower and stopped with the last), at
//     the renewal time auth computes (a 70 s token at 10 s; see package
//     auth), with the same form. A follow that depends on it (no
//     Options.Token) ends with cause ErrCredentialLost when, after it
//     started, a renewal is refused (HTTP 400, 401, 403), fails until no
//     unexpired token is left (detected at the next retry: 1 s doubling to
//     30 s, each bounded by the mint timeout), or grants fewer scopes than
//     requested when the follow started with all of them. A follow started
//     on an already narrowed grant is not ended by the same narrowing again,
//     so a token endpoint that never grants a scope does not end every
//     listen at every renewal. Transient failures (5xx, timeouts) while the
//     token is valid end nothing. Calls keep using whatever token there is.
//   - Server→client requests are bounded: at most
//     Config.MaxServerRequestsPerCall (default 8) are served at once for one
//     call, and Config.MaxServerRequests (default 256) for the whole client;
//     the excess is refused at once with a JSON-RPC error, never given a
//     goroutine. On shared streams, answers that belong to no call go
//     through one replier goroutine with a queue of 64; beyond that they
//     are dropped (the upstream's request times out on its side).
//   - Buffered upstream bytes are bounded by a ByteBudget (default 64 MiB,
//     Config.AnswerBudget; the wiring gives every client the same one for a
//     process-wide bound), on top of the per-message cap
//     (Config.MaxMessageBytes, default 32 MiB): JSON bodies, SSE events
//     (response streams, GET streams, HTTP+SSE) and stdio lines are read
//     through it, at most 32 KiB ahead of it. An answer's bytes are held
//     until the downstream request that asked for it has written its own
//     answer (internal/later; else until its call returns); other messages'
//     until they are handed on. So the budget bounds answers for their whole
//     stay, and the gateway's memory for answers in flight stays within a
//     small multiple of it (one downstream copy, and the garbage
//     collector's headroom): 20 concurrent 30 MB answers peak at about
//     330 MB RSS, against 1.66 GB unbounded. An answer that cannot get
//     budget within its request deadline fails with a BudgetError (503,
//     retryable) for that caller only; when every holder waits for more
//     (answers read in pieces could deadlock), the youngest answer gives up
//     at once instead. A 256 MiB budget was rejected: with its copies and
//     the collector's headroom it let the process reach about 1 GB. Rarely
//     does an MCP answer exceed a few hundred KiB; 64 MiB keeps thousands in
//     flight and two of the largest allowed.
//   - Log lines per upstream message are rate limited per client: at most
//     60 warnings a minute (malformed messages, failure causes) and,
//     separately, 60 debug lines a minute (unmatched responses, refused
//     server requests), on every transport, and 120 stderr lines a minute
//     (each cut at 1 KiB); the next line let through reports how many were
//     suppressed.
//   - Callers see a failure's class and a generic text ("cannot reach
//     upstream"); operators get its cause (command not found, connection
//     refused, DNS, TLS, the HTTP status, …), built from error types and
//     never from an upstream body, a credential or an argument. Each
//     distinct cause is logged at WARN once (at most 16 remembered per
//     client, forgotten when the upstream next answers), under the
//     per-message limit above; every failure's debug line names it too.
//   - Every goroutine the client starts, and every callback it runs
//     (interaction handlers, notification callbacks), recovers a panic: it
//     is logged at ERROR with its stack but not its value (which may hold
//     arguments or tokens), the affected request or stream fails, and the
//     process keeps serving.
//   - A stdio child gets only HOME, LOGNAME, PATH, SHELL, TERM and USER
//     from the gateway's environment, plus its configured env: the
//     gateway's secrets never reach the servers it runs.
//   - Every wait has our own budget: the request timeout for each request
//     (initialize included; a request whose context ends before it, as a
//     list walk's page under the shorter listing timeout, makes no timer of
//     its own), the listing timeout for a walk and for the
//     era probe and server/discover. A budget that passes while the caller's
//     own context is live is a TimeoutError with one warning naming the
//     upstream by scheme, host and first path segment only (userinfo, query
//     and the rest of the path may carry credentials; every log line and
//     error names an upstream this way, or not at all); the caller's own
//     deadline is never reported as ours.
//   - Errors are typed (RPCError, StatusError, ProtocolError,
//     ConnectionError, TimeoutError) and never carry an upstream body: an
//     error answer's body is read only when it is a JSON-RPC error object.
//   - A legacy HTTP session the upstream no longer knows (it ended it, or
//     restarted) is answered 404, or 400 with an error naming the session
//     (server-everything: "No valid session ID provided"). The upstream
//     refused that request unread, so the session is dropped and the call
//     retried once on a new one; any other 400 is the call's own error.
//   - Redirects are followed only within the origin of the request, so
//     credentials cannot be carried to another host.
//   - The default HTTP client (NewHTTPClient, h1transport.go) sends
//     plain-HTTP requests to an upstream with no proxy over its own
//     HTTP/1.1 connections, written and read in the calling goroutine; https,
//     proxied upstreams and anything else go through net/http's transport
//     unchanged (so TLS, HTTP/2 and proxies keep net/http's behaviour).
//     net/http's transport runs a reader and a writer goroutine per
//     connection and hands each request and response between them: under
//     load that cost the gateway as much CPU as all its own work on a call.
//     The wire format stays net/http's ((*http.Request).Write,
//     http.ReadResponse: Content-Length, chunked, bodies ended by the
//     connection, interim 1xx answers); the header and a body that fits
//     the 8 KiB buffer leave in one write. Only the common message is
//     handled outside them (h1request.go, h1response.go): a request of the
//     client's own methods with plain fields is written without a transfer
//     writer, and a 2xx answer framed by one Content-Length or chunked
//     encoding, whose whole head is already buffered, is parsed from one
//     string; together with requests sent straight to this transport (not
//     through http.Client, which copies every request's headers for
//     redirects; a redirect answer is handed to an http.Client that follows
//     it) that took ~30 of the ~250 allocations of a tools/call. Anything
//     else, and anything those two have a doubt about, goes to net/http's
//     code unread; tests compare the two byte for byte and field for field,
//     and FuzzReadResponse holds every head the parser takes to net/http's
//     reading of it. A connection goes back to the
//     pool only when its answer was read to its end, nothing more is
//     buffered on it and neither side asked to close; a body closed early,
//     an error or a cancelled context (watched for the whole exchange,
//     streams included) closes it. Bounds: 64 idle connections per host,
//     256 in all, each closed after 90 s idle (a timer sweeps them while
//     any are idle); every idle connection is checked with a non-blocking
//     peek before reuse, so one the upstream closed is not written to
//     (skipping it for connections idle under 1 ms saved under 1 % of a
//     call and would fail calls to upstreams that close after each answer
//     without Connection: close). A request
//     that fails on a reused connection before any answer arrived is sent
//     again on a new one only when it was not written whole, or is a
//     GET/HEAD/OPTIONS/TRACE with a body that can be had again; a POST that
//     reached the upstream is never sent twice. Writing the HTTP/1.1 client
//     whole (its own parser for every answer) was rejected: the parser is
//     where framing bugs live; the fast path takes only the answers it can
//     check against net/http's.
//   - A minted (OAuth2) credential refused with 401 is refreshed once and the
//     request retried once, on every transport: for legacy HTTP+SSE both the
//     stream's GET and each POST, for streamable HTTP each POST and the
//     GET stream.
//   - A stdio child that dies fails its pending requests as unreachable and is
//     restarted on the next use, with exponential backoff (250 ms doubling to
//     30 s) so a crashing server is not respawned in a loop. Only exits the
//     gateway did not ask for count; any successful request clears the
//     backoff.
//   - stdio writes go through one writer goroutine, so a message is always
//     written whole while each caller waits only within its context; no lock
//     is held across a write, and closing stdin unblocks the writer. A
//     request the child never fully read is not followed by
//     notifications/cancelled. Stopping a child is bounded by the caller's
//     context at every step, and its output is read for at most a second
//     after it exits, so a descendant holding the pipes cannot keep it alive.
package upstream
