// Package oauthvault is the per-user token vault for upstream servers whose credential is each
// user's own OAuth token (auth_type oauth2, oauth2_flow authorization_code): it runs the
// authorization-code flow with PKCE against the server's authorization server on behalf of a
// signed-in user, keeps the resulting tokens encrypted per (user, server) in the store,
// refreshes them before expiry and drops the ones the upstream refuses.
//
// Design decisions:
//
//   - The gateway runs the flow itself (LiteLLM's other shape, where the MCP client runs OAuth
//     against the gateway and the gateway proxies /token and /register to the upstream, hands
//     the client the upstream's token; here no upstream token ever leaves the gateway). The
//     user is the caller's key's user_id: a key without one cannot hold tokens.
//   - Authorize links (AuthorizeLink) carry a ticket sealed with the salt-derived key
//     (TicketPurpose) naming the user and server, valid FlowTTL (DefaultFlowTTL, 10 min), so
//     the browser that opens it needs no gateway key. Whoever holds the link within that time
//     can bind an upstream account to that user; the link is handed only to the caller itself.
//     Starting a flow with a gateway key (front's /{server}/authorize) is allowed only for a
//     server the key's permissions let it use; any other is answered as an unknown server.
//   - The OAuth state is sealed (StatePurpose) and names the user, the server, the PKCE
//     verifier (S256; 32 random bytes), the expiry (FlowTTL) and the SHA-256 of a random value
//     kept in an HttpOnly, SameSite=Lax cookie set when the flow starts (path /callback, one
//     per flow, named by a random handle in the state): a callback is accepted only from the
//     browser that started the flow, so a victim cannot be made to finish an attacker's flow.
//     Nothing is kept server-side for a flow in progress.
//   - Tokens at rest: access token, refresh token and renewal/expiry times as one JSON value
//     sealed with secretbox (AES-256-GCM under the salt-derived key) and bound to the row's
//     user and server, so a copied row does not open for another user. Only the expiry is in
//     clear. A row that does not open (another salt key) is ignored, as if absent.
//   - Renewal uses the client-credentials cache's margin (max(20% of the lifetime, 60 s), not
//     before min(10 s, half the lifetime)). Token reads the row on every operation (one
//     primary-key read per such server), so replicas sharing a database see each other's
//     refreshes and deletions at once; there is no in-process token cache to go stale.
//   - One refresh at a time per (user, server) on a replica: a lock per pair, made on demand
//     and removed when no one holds or waits for it; at most Config.MaxLocks (DefaultMaxLocks,
//     1024) pairs at once, beyond which Token answers ErrBusy (the operation treats the server
//     as unauthorised for that call; nothing is dropped). After taking the lock the row is read
//     again, so waiters use the refresh that just happened. Across replicas two refreshes of
//     one pair may race; with a rotating refresh token the loser's grant is refused and the
//     pair must authorize again (documented in docs/security.md).
//   - A refresh refused by the authorization server (HTTP 400/401/403, e.g. invalid_grant) or
//     an upstream 401 to a token that cannot be refreshed drops the token (compare-and-delete
//     on the sealed value, so a token stored meanwhile survives): that user, and only that
//     user, must authorize again. Other refresh failures (transport, 5xx) keep using the
//     current token while it is unexpired. Each token request is bounded by
//     DefaultGrantTimeout (30 s) and runs detached from the caller's cancellation, so a caller
//     going away does not lose a rotated refresh token half-way.
//   - Token requests never follow redirects; errors name the HTTP status and the RFC 6749 error
//     code only; no token, code or client secret is logged or put in an error.
//   - Deleting a user deletes its tokens in the same transaction (store.DeleteUsers); a user
//     may delete its own token for one server (DELETE /{server}/token). Tokens are not revoked
//     at the upstream (RFC 7009 endpoints are not configured anywhere).
package oauthvault
