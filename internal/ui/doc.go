// Package ui is the gateway's admin UI at /ui: server-rendered pages (html/template) with a
// small script and stylesheet, all embedded in the binary (no build step, no third-party asset).
// Pages: servers (every server with its source, transport, revision, health, tool count,
// upstream sessions and listens open, tool pins and last error, and the listens running in all;
// add, test and delete stored ones; pin a server's tool definitions and
// approve quarantined tools, shown with the parts of their definition that changed, never the
// texts), catalog (the tools, prompts, resources and resource templates the signed-in identity
// sees through /mcp, with each server's outcome per list; a form from each tool's input schema
// calls it, showing its progress as it arrives; a prompt is got with a form of its arguments,
// a resource read, a template's variables filled and read), keys and teams (list, create with the secret
// shown once, block, delete; a permissions editor with a live preview of the tools the key
// will see, then the tools the new key really sees, asked of the gateway with that key), and
// activity (a live log of requests and per-server charts drawn as inline SVG).
//
// Design decisions:
//
//   - One way in: the UI drives the gateway's own management and MCP routes. /ui/api/<route>
//     serves <route> in-process with the session's key as the credential, so every rule of
//     those routes (roles, masking of credentials, validation) applies unchanged and the UI has
//     no second implementation of any of them. Only routes under v1/mcp/, mcp-rest/, key/,
//     team/, organization/, user/, spend/ and health/readiness are reachable; the browser's
//     headers other than Content-Type and Accept are not passed on.
//   - Sign-in takes the master key or a proxy_admin key (the same check as the gateway's
//     admin routes); a wrong key and a key of another role get the same refusal. Sessions are
//     server-side (Sessions): a random 256-bit id in a cookie (HttpOnly, SameSite=Strict,
//     Path=/ui, Secure over TLS or behind a proxy sending X-Forwarded-Proto: https), the key
//     in memory only. Every request re-authenticates the session's key, so a key blocked,
//     deleted or demoted loses the UI on its next request (an open activity stream within
//     10 s). Bounds: DefaultMaxSessions (1000; beyond it the least recently used session
//     ends), DefaultIdle (30 min unused) and DefaultLifetime (12 h after sign-in).
//     Rejected: a sealed cookie carrying the key (a copy of the credential in every browser
//     request and in every cookie jar).
//   - Sign-in through an OpenID provider (SSO, Config.SSO): the authorization-code flow with
//     PKCE (S256), a random state and nonce; the provider is discovered from its issuer at
//     the first sign-in (a provider down at start-up delays nothing; a failed discovery is
//     not remembered). The ID token is verified with go-oidc (signature by the discovered
//     key set, issuer, audience = the client id, expiry) and its nonce compared. Who is
//     admitted is Config.Claims: the identity package's ClaimRule, the rule JWT callers are
//     decided by, so there is one admin rule; only proxy_admin gets a session, any other
//     identity a page saying so. An SSO session keeps the verified claims (never a token),
//     re-applies the rule on every request, and ends at the ID token's expiry at the latest
//     (no refresh, no extension). The UI's API calls act as it in-process through
//     identity.WithSession, since it holds no gateway credential.
//   - A pending sign-in is bound to its browser by a cookie (SameSite=Lax, Path=/ui/sso: the
//     provider's redirect back is a cross-site navigation, which a Strict cookie would not
//     accompany); its state is taken on the first callback that presents it, whatever the
//     outcome, so it is good once. Bounds: DefaultMaxPending (1000; beyond it the oldest is
//     forgotten) and DefaultPendingTTL (10 min); one request to the provider is bounded by
//     DefaultSSOTimeout (10 s). The callback answers a page that moves on by itself (meta
//     refresh) rather than a redirect: a redirect would still be the provider's cross-site
//     navigation, and the Strict session cookie would not be sent with it. Starting a
//     sign-in is a link, not a form: the login page's form-action 'self' would refuse a
//     form's redirect to the provider; a start another site triggers (Sec-Fetch-Site
//     cross-site) is refused. The provider's answers are never shown or logged.
//   - State-changing requests (any method but GET and HEAD, sign-in and sign-out included)
//     need the same origin: Sec-Fetch-Site same-origin when sent, and an Origin naming this
//     scheme and host (a request with neither is refused), and the session's CSRF token in
//     X-CSRF-Token or the form field csrf (the sign-in form: a token matching its own
//     short-lived cookie). Refusals are 403.
//   - Answers carry a Content-Security-Policy that allows only the UI's own scripts, styles
//     and requests (no inline script, no framing), nosniff, a referrer only to this origin (no-referrer would make a form post's Origin "null") and no-store. The
//     script puts every value into the page as text, never as HTML. No page renders a secret:
//     server credentials come masked from the registry routes, and a key's secret appears
//     once, in /key/generate's answer.
//   - The catalog speaks MCP: POST /ui/mcp takes {method, params, progress, input_schema} from
//     the page (same origin and CSRF token, like any change) and has the gateway's own /mcp
//     serve it in-process with the session's key, as a 2026-07-28 request (stateless: one
//     request, one answer, no session to open or end): the UI builds its _meta (protocol
//     version, capabilities, and a progressToken when progress is asked) and its MCP headers
//     (Mcp-Method, Mcp-Name, a tool's Mcp-Param-*), so the page needs no era rules. Only the
//     four lists, tools/call, prompts/get and resources/read are sent: nothing long-lived (a
//     listen) and nothing that would make the UI a general MCP client; the body is bounded by
//     maxMCPBody (1 MiB). The gateway's answer goes to the browser as it is written: JSON, or an
//     SSE stream once the gateway sends progress before the result. The page reads that stream
//     incrementally (fetch and the body's reader), so progress shows as it arrives while the CSP
//     stays as strict as before (connect-src 'self'; no EventSource, which cannot POST, and no
//     server-side re-encoding of the stream). Rejected: re-reading the stream in the UI's Go
//     code (a second SSE encoder and a goroutine per call for nothing the browser cannot do).
//     Aggregate tool and prompt names are split into server and name on the page with the
//     gateway's separator (Config.Separator, given to the page as data-sep); resource URIs are
//     not prefixed, so resources are listed as the aggregate shows them, each server's count in
//     its outcome. Results are put in the page as text; images, audio and blobs as their type
//     and size only.
//   - The upstream sessions and listens open come from Config.Upstream, a read-only func the
//     composition root gives (the values its metrics export, and the listens per server:
//     those holding an upstream listener on it, from gateway.Listens.RunningByServer), served
//     with /ui/stats; the UI does not scrape /metrics (it may be off, or on another listener).
//   - Live is the activity sink (an observe.Sink): a ring of the DefaultRing (200) latest
//     downstream requests (method, target, server, caller name, transport, status, error
//     class, duration; never arguments or results), at most DefaultSubscribers (16) event
//     streams (more are refused with 503 and Retry-After), each with a queue of 64 entries
//     that drops entries for a stream too slow to take them, and per-server aggregates of
//     upstream calls (count, errors by fault class, p50/p99 from fixed latency buckets) for
//     at most 256 servers. The sink never blocks the request reporting to it. Close (at
//     shutdown) ends every stream.
package ui
