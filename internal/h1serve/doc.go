// Package h1serve serves an http.Handler over HTTP/1.1 on net.Listeners:
// the gateway's downstream server (`mcpgw serve`), in place of net/http's,
// whose per-connection and per-request machinery cost more than half of
// the gateway's CPU on short tools/calls. MCPGW_HTTP_SERVER=stdlib makes
// serve use net/http's server instead (cmd/mcpgw/serve.go).
//
// FromStd and Pick build the server from an *http.Server: its Handler,
// ReadHeaderTimeout, WriteTimeout, IdleTimeout, MaxHeaderBytes and
// ErrorLog are honoured; any other field set is an error, not a setting
// silently dropped.
//
// What it does, per connection (conn.go): one goroutine reads a request
// head (reader.go), parses it into an *http.Request (parse.go), runs the
// handler with a response (response.go) as its http.ResponseWriter, then
// finishes the response and reads the next request (keep-alive and
// pipelining), until the client or a rule closes the connection. The
// handler sees what net/http would give it: Method, URL, RequestURI,
// Proto*, a canonicalised Header without Host and Transfer-Encoding, Host,
// RemoteAddr, ContentLength, TransferEncoding, Close, a Body framed by
// Content-Length or chunked, and a context cancelled when the handler
// returns or the client leaves. The differential test (diff_test.go)
// holds it to that, request by request, against net/http's server.
//
// Responses: a body the handler wrote in full without flushing, within the
// 8 KB write buffer, is sent with a Content-Length; otherwise (larger, or
// flushed) chunked, or for HTTP/1.0 delimited by the connection's close. A
// handler's own Content-Length is kept and enforced (http.ErrContentLength;
// a shorter body closes the connection). HEAD, 1xx, 204 and 304 carry no
// body; "Expect: 100-continue" is answered on the body's first read; a
// Content-Type is sniffed when unset and a Date added, as net/http does.
// Header values have CR and LF turned to spaces; invalid field names are
// dropped. The response supports http.ResponseController's Flush,
// SetReadDeadline and SetWriteDeadline; after the handler returned, a
// goroutine it left gets errors from all of them and from Write, and
// touches nothing the connection's next request uses. The writing
// methods and the response's end take one mutex per response, so calls
// racing with the handler or with each other (a Flush from a ticker while
// the handler writes, which net/http leaves undefined) cannot put a
// pooled buffer back twice and make two responses share it: the leak of
// one caller's bytes to another is ruled out here, not left to handlers
// (an uncontended lock per write; TestWritersRacingKeepResponsesApart).
// Not supported, because nothing in
// the gateway uses them: Hijack, trailers (request trailers are read and
// dropped; response trailers are not sent), EnableFullDuplex, HTTP/2, TLS.
//
// Hardening (at least net/http's; stricter where marked): a request line
// of three fields and HTTP/1.0 or 1.1 (HTTP/2.0 and others: 505; stricter:
// HTTP/1.2 and such are 400); token methods and header names; no
// whitespace before a colon; header values without control bytes; obs-fold
// (stricter: 400); bare LF line ends accepted in the head as net/http
// does, CRLF required in chunked framing and no other control byte but
// HTAB in its lines (a bare CR in a chunk extension or trailer: refused,
// as net/http does); Host required for HTTP/1.1,
// once, valid; Content-Length digits only, duplicates equal; both
// Content-Length and Transfer-Encoding (stricter: 400), Transfer-Encoding
// other than exactly "chunked", ASCII case folded only (a Kelvin sign
// "\u212a" is not a "k": 501), Transfer-Encoding on HTTP/1.0
// (stricter: 400); chunk sizes of at most 16 hex digits, and net/http's
// bound on framing bytes against data; a head longer than MaxHeaderBytes +
// 4 KB: 431. A refused request gets its status and a short text, then the
// connection closes (after a linger of at most 500 ms so the client
// reads the answer); other connections are not affected. FuzzRequest
// checks that nothing the server hands a handler is read differently by net/http.
//
// Timeouts mean what http.Server's do: ReadHeaderTimeout bounds reading a
// head (from the connection's accept, or the first byte of a keep-alive
// request), IdleTimeout a keep-alive wait, WriteTimeout the response from
// the head's end (handlers lift it with SetWriteDeadline). There is no
// ReadTimeout: the admission layer bounds body reads through
// SetReadDeadline. Shutdown stops accepting, closes idle connections and
// waits for active ones (streams are ended by the app's Drain); Close
// closes everything. A handler's panic is logged (http.ErrAbortHandler
// silently) and closes its connection only.
//
// Bounds, per connection (admit.LimitListener bounds connections):
//   - read buffer 4 KB, held only while request bytes wait in it or a read
//     runs; a head beyond it grows a buffer up to MaxHeaderBytes + 4 KB,
//     for that request only;
//   - write buffer 8 KB, held only while a handler has unflushed bytes;
//   - an unread request body is read past up to 256 KB to keep the
//     connection, else the connection closes, after the same linger as a
//     refused request (at most 500 ms, reading and dropping: a close with
//     unread bytes resets the connection, and the client still uploading
//     would lose the answer, as Go's client did 18 times in 20);
//   - chunked framing lines 4 KB; trailers MaxHeaderBytes + 4 KB.
//
// Design decisions:
//
//   - Idle connections and held streams hold no buffers. On a connection
//     with a file descriptor, a read with an empty buffer goes through
//     syscall.RawConn: the buffer is taken from a sync.Pool inside the
//     read callback and put back when the read would block, so the wait
//     itself holds nothing (net/http holds a 4 KB bufio.Reader and a 4 KB
//     bufio.Writer per connection for its whole life). The write buffer
//     goes back to its pool at every flush, so an SSE stream holds none
//     between events. Rejected: a bufio.Reader per connection released
//     while idle (bufio cannot be handed bytes a raw read already took,
//     and a readiness-only wait costs an extra syscall per request).
//   - Client disconnects are seen by one epoll goroutine per server
//     (watch_linux.go), not by a goroutine per request. net/http starts a
//     background read for every request to notice the client leaving;
//     here a request is only noted in a list when its handler starts (no
//     syscall), the watcher scans the list every 25 ms and registers the
//     descriptors of requests still running after a full interval for
//     EPOLLRDHUP, one-shot (a reset comes as EPOLLHUP/EPOLLERR). So the
//     calls that are the gateway's hot path cost nothing (under load at
//     C=10, calls took 6 to 20 ms: a 5 ms interval registered most of them,
//     two epoll_ctl calls each), and a long
//     call or a held stream costs one epoll registration and no goroutine.
//     A FIN with bytes still unread (a pipelined request) is not a
//     disconnect: the watcher peeks (MSG_PEEK) before cancelling. A
//     descriptor leaves the epoll set under the connection's lock before
//     the connection closes, and events carry a 64-bit key of the
//     registration (a count, never reused), so neither a reused descriptor
//     number nor a wrapped 32-bit id is mistaken for another connection or
//     an earlier request. A registration the kernel refuses (ENOSPC at
//     fs.epoll.max_user_watches, ENOMEM) is logged and that request goes
//     unwatched: its client's leaving is seen at the next write (a held
//     stream's keepalive); falling back to a background read there would
//     race the handler's body read. Rejected: registering every request (two epoll_ctl
//     calls per request), a timer per request (an allocation and a
//     goroutine when it fires), and a goroutine per request (net/http's
//     way: the cost this package removes).
//   - Elsewhere (no Linux, a connection without a descriptor: a wrapper
//     that hides it, or a watcher whose loop failed: an epoll_wait error
//     or a panic, logged) the portable fallback is net/http's: a goroutine
//     blocked in a one-byte read from the moment the body is read to the
//     handler's return; a byte it reads is put back in front of the buffer.
//   - net/http's own parsing helpers (textproto, http.ReadRequest) are not
//     used for requests: they allocate per header line and need a
//     bufio.Reader per connection. A head is parsed from the read buffer
//     in one pass, header keys canonicalised in place, and all its strings
//     cut from one string; the request, its URL (origin-form targets with
//     plain characters skip url.Parse), body and response are one
//     allocation, and the http.Request handed to the handler another (the
//     copy WithContext makes: the parsed one is on serveOne's stack, so a
//     handler that passes on a copy of its own lets this one go). Its
//     context carries an empty request scope (internal/reqscope) from the
//     start, so the gateway's first layer (admit) writes its value there
//     instead of copying the request once more (an allocation per call).
//     The header map is made per request: handlers may keep r.Header past
//     the request, so reusing it is not safe. The response header map is let
//     go once a response is committed while its handler goes on (a
//     stream): Header then returns a fresh map, whose changes have no
//     effect, as with net/http.
//   - A handler may hand the rest of its response to the server
//     (internal/handoff, handoff.go): it writes what opens a stream, gives
//     a continuation and returns; serveOne then returns too, and the
//     connection moves on to a goroutine started for it (serveHeld), which
//     runs the continuation, then serves the connection's next requests;
//     the handler's goroutine ends. Everything of the request is unchanged
//     (its context and disconnect watch, the writing methods, its place
//     among Shutdown's active connections). The
//     response ends when the continuation returned and the after-work
//     wrappers registered (handoff.After) ran, innermost first; a panic in
//     the continuation runs that after-work, then is handled as a
//     handler's. A handler that panics after handing off still has its
//     continuation run, after the connection closed (its context
//     cancelled), so that what the stream holds is released. A held stream
//     then waits on a stack that never held the handler's frames: one the
//     handler grew (16 KB for the gateway's listen) is never shrunk below
//     4 KB by the runtime, while the new goroutine keeps 2 KB as long as
//     the continuation only waits and does its work elsewhere
//     (internal/shallow; TestHandoffHeldStackIs2KB). Before, the
//     continuation ran on the connection's goroutine from serve's frame
//     (4 KB held). Rejected: a stream with no goroutine while it waits
//     (its writer driven by its events): the gateway's listen delivery
//     does blocking work between events (re-authentication, view
//     fetches), so its loop would be rewritten as callbacks; the
//     continuation keeps it as it is. Hijack-like APIs were rejected too: the response would lose
//     its framing, deadlines and disconnect watch.
//   - Own package rather than options on net/http's: net/http exposes no
//     hook for its connection goroutine, buffers or disconnect detection.
package h1serve
