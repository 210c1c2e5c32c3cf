// Package auth computes the credentials mcpgw sends to an upstream MCP
// server: the auth header rules of LiteLLM's MCP client, the redirect rule
// that decides when those credentials may follow a redirect, and OAuth2
// client_credentials tokens minted by the gateway.
//
// Pieces:
//
//   - StripAuthScheme and the per-auth_type formatting Policy applies to
//     one credential (bearer family, token, basic, api_key, authorization).
//   - Policy: one server's header layering (credential, forwarded
//     extra_headers, static_headers), built once and applied per request.
//   - CredentialsSurvive, CheckRedirect: httpx's
//     Authorization-on-redirect rule, applied to every credential header.
//   - ClientCredentials: the token cache, with Watch for long-lived streams.
//   - Addressed: routes a caller's x-mcp-{server}-{header} headers to the
//     one server each names.
//   - GrantToken, Refused: one authorization-code or refresh-token request for a
//     user's own token (the token vault, internal/oauthvault, keeps and refreshes
//     those), with the same answer parsing, redirect and redaction rules.
//
// Design decisions:
//
//   - Every credential value is trimmed of surrounding whitespace before it
//     is formatted. That is what makes "Bearer " (a scheme with nothing
//     after it) come out as "Bearer Bearer", visibly wrong instead of
//     missing, and keeps trailing whitespace (illegal in h11, outside the
//     field value per RFC 9110) off the wire. A value that trims to empty
//     yields no header at all.
//
//   - StripAuthScheme always left-trims, then removes the scheme only when
//     at least one space or tab and some text follow it (RFC 7235 requires
//     whitespace after the scheme, so "Bearertoken" is a credential). The
//     scheme is matched with ASCII-only case folding: schemes are ASCII
//     tokens and Unicode folding could equate e.g. a Kelvin sign with "k".
//     One LiteLLM version returned a non-schemed value without left-trimming;
//     the fuzz property (the result is a suffix of the left-trimmed input)
//     and the per-auth_type formatting both hold with always-trim, which is
//     simpler.
//
//   - basic: a value that is strict standard base64 decoding to something
//     with ':' is already encoded and is kept, schemed or bare. A raw
//     user:pass always contains ':', which base64 cannot, so the two shapes
//     never collide; re-encoding a colon-less value could only produce an
//     invalid RFC 7617 credential.
//
//   - Policy layering is credential < injected < static, later overriding
//     earlier (LiteLLM's v1 order, where static headers ride in
//     extra_headers, applied last). With auth_header_name the credential
//     owns its slot: colliding injected headers (any casing) are dropped per
//     request and colliding static headers at construction; no
//     Authorization/X-API-Key is generated, and a static Authorization
//     survives. auth_header_name with auth_type none is a configuration
//     error: there is no credential to put in the slot.
//
//   - Header names are canonicalised (http.CanonicalHeaderKey) so
//     http.Header.Get works everywhere; header names are case-insensitive
//     on the wire. Collision checks use ASCII case folding on the raw key so
//     non-canonical keys in an injected map are caught too.
//
//   - Static header names and values are validated at construction (RFC 9110
//     token names, no control characters) and errors never echo a value,
//     since values may be credentials.
//
//   - Redirects: CredentialsSurvive mirrors httpx (same scheme, host and
//     effective port; or http→https on the same host with ports 80→443).
//     CheckRedirect refuses, rather than scrubs, any other redirect, so the
//     destination is never contacted and a request is never silently sent
//     without its credential. It compares the target with the original URL
//     and with the hop that redirected (httpx compares with the latter), so
//     an upgrade followed by a downgrade is refused too. It stops after 10
//     redirects, net/http's default.
//
//   - Token renewal margin: max(20% of the lifetime, 60 s): long tokens
//     renew at 80% of their life, shorter ones 60 s before expiry
//     ("whichever is earlier"), so a renewal that fails leaves a minute of
//     retries whenever the lifetime allows. No token is renewed before
//     min(10 s, half its life), so short ones are not re-minted on every
//     call: 3600 s renews at 2880 s, 300 s at 240 s, 120 s at 60 s, 70 s
//     and 60 s at 10 s, 10 s at 5 s. (The former cap at half the lifetime
//     renewed a 70 s token only at 35 s, 35 s before expiry.) Expiry is
//     counted from when the request was sent, not when the answer arrived.
//     A token without expires_in is kept until invalidated.
//
//   - Problem.Fatal says whether a problem means the credential is lost for
//     whoever depends on it: a narrowed grant, a refusal (HTTP 400, 401,
//     403), or a failure that left no unexpired token. Problem.Gen and
//     Grant let a long-lived user tell a loss after it started from the
//     state it started with.
//
//   - One mint at a time without x/sync/singleflight: the first caller leads
//     the request on its own goroutine and later callers wait on a channel
//     with their own contexts. If the leader's context ends, the attempt
//     counts as aborted, not failed, and a waiter whose context is alive
//     retries as the new leader; so no detached goroutine is ever started.
//
//   - A failed renewal while the cached token is still unexpired returns the
//     cached token (the failure goes to Watch). For 5 s after a failure Token
//     answers from that failure instead of hitting the endpoint again, so an
//     outage does not turn every request into a token request. Invalidate
//     lifts that pause: a 401 must be able to refresh once.
//
//   - Invalidate(token) only acts when token is still the cached one, so
//     concurrent 401s on the same stale token cause one mint.
//
//   - Token errors carry the HTTP status and the RFC 6749 `error` code only
//     (when it is a plausible code and does not contain the secret); never the
//     body or error_description. Transport errors are scrubbed of the secret
//     as a last resort.
//
//   - Token requests never follow redirects (the secret is in the body): the
//     HTTP client is copied and its CheckRedirect replaced.
//
//   - Watch runs on its caller's goroutine, wakes on renewal time, on any
//     state change and on ctx, and starts no goroutines of its own. Problems
//     from mints triggered by Token are reported too; a mint completed before
//     Watch started is reported once at start.
//
//   - Time comes from an injectable Clock (Now, NewTimer) so tests drive
//     renewal deterministically.
//
//   - Addressed headers: the server part is matched against the known
//     server names and aliases (case-insensitively, longest first), not cut
//     at the first '-' as LiteLLM does, so a name with '-' or '_' works and
//     a header can never fall through to a shorter name's server: when the
//     longest fitting name's header part is unusable, the header is dropped.
//     Headers the transport owns (framing, Host, Mcp-Session-Id, ...) are
//     never settable; the gateway's own x-mcp-servers, x-mcp-access-groups
//     and x-mcp-auth are never addressed.
//
// Rejected alternatives:
//
//   - golang.org/x/oauth2/clientcredentials: its error values embed the
//     token endpoint's response body, it renews only 10 s before expiry, has
//     no proactive renewal, no invalidate-one-token and no scope check.
//   - golang.org/x/sync/singleflight: the leader's context would cancel the
//     shared request for everyone, or the request would need a detached
//     goroutine; the hand-rolled flight above is a dozen lines.
//   - Scrubbing credential headers on cross-origin redirects and following
//     them (httpx's behaviour): the destination of such a redirect must never
//     be contacted, so CheckRedirect refuses.
//   - A per-token cache of formatted header values in Policy: one string
//     concatenation per request is cheaper than the atomic bookkeeping.
//   - client_secret_basic token endpoint authentication: not in the
//     contract; client_secret_post (the form fields) is what LiteLLM sends.
package auth
