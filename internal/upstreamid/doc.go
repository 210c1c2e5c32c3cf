// Package upstreamid signs the caller's identity for upstream MCP servers
// that ask for it (mcp_servers.<name>.forward_identity: jwt), so an upstream
// can trust who is calling without ever seeing a gateway key, and publishes
// the public keys that verify it (/.well-known/jwks.json).
//
// The token is an RS256 JWT: sub is the caller's user id, else "key:" and
// its key hash, else "anonymous"; act is an object with the caller's
// team_id, org_id, end_user_id and key_hash where set (RFC 8693's actor
// claim, used here for the party the subject acts within); aud is the
// server's URL (its name for stdio servers); iss is the gateway's public URL
// (general_settings.mcp_identity_issuer, else PROXY_BASE_URL); exp is iat +
// 300 s; jti is 128 random bits. The JWS header names the signing key (kid).
//
// Design decisions:
//
//   - Keys: every key in the configured PEM (general_settings
//     mcp_identity_signing_key: a file path, or the PEM itself through
//     os.environ/...) is published; the last one signs ("newest signs").
//     Rotation: append the new key and reload; remove the old one once the
//     tokens it signed (300 s) and the upstreams' JWKS caches have expired.
//     kid is the RFC 7638 thumbprint of the public key, so it is stable
//     across replicas and restarts that load the same file.
//   - Without a configured key, the app generates a 2048-bit key per
//     process (logged as a warning): fine for one replica, unsuitable for
//     several (each replica signs with its own key and publishes only its
//     own, so a verifier that fetched another replica's JWKS refuses it) and
//     for restarts (outstanding tokens die with the process).
//   - Minting per request would cost an RSA signature each time, so tokens
//     are cached per (caller, audience) and reused until 60 s before they
//     expire. The cache is a bounded LRU: DefaultCacheSize (10000) entries,
//     the least recently used evicted first; entries past their reuse time
//     are replaced on lookup. A token thus names the caller of the request
//     that carries it; what identifies a caller in the cache is its binding
//     (identity.Caller.Binding), so two callers never share a token.
//   - Upstream sessions are keyed by the headers sent, so a server with
//     forward_identity gets sessions per caller, renewed when the token is
//     (every 240 s); its lists are cached per caller too. The price is more
//     upstream sessions for such servers; the gain is that no request ever
//     travels on a session another caller's identity opened.
package upstreamid
