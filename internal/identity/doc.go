// Package identity establishes who is calling the gateway: the master key, the custom_auth
// webhook, a key from the key store (Config.Keys), or (only with LITELLM_DANGEROUSLY_PERMIT_WEAK_OR_UNSET_MASTER_KEY=true and neither
// configured) an open gateway. The result is a Caller: bindings (user, team, org, end user, key
// hash) and the object_permission lists that internal/policy interprets. A Caller never holds
// the raw key.
//
// Design decisions:
//
//   - Credential: a non-empty x-litellm-api-key wins (its "Bearer " is optional); otherwise
//     Authorization must use the Bearer scheme (Basic or a bare token is no credential).
//     Credential reports whether the key came from Authorization, because that header must then
//     never be forwarded upstream (LiteLLM issues #30559, #23648). An empty x-litellm-api-key is
//     treated as absent.
//   - The master key is compared as SHA-256 digests with crypto/subtle, so neither content nor
//     length leaks through timing. The digest is computed once in New; the key itself is not
//     kept.
//   - Without custom_auth, the master key yields Caller{IsMaster: true, Role: "proxy_admin", UserID:
//     "default_user_id"}: LiteLLM's names for the proxy admin, so logs and webhooks that already
//     know them keep working.
//   - With custom_auth configured, the webhook decides every request that carries a credential,
//     including one presenting the master key, and the identity it answers governs (a webhook
//     identity is never IsMaster, whatever its user_role). This is LiteLLM's order (the custom
//     auth function runs before any master-key check) and what the contract promises, so
//     webhooks and tests written for LiteLLM keep their meaning. The master key is compared
//     locally only without a webhook. Trade-offs: the webhook now receives the master key in
//     api_key, so operators must trust their webhook (and the path to it: use https) as they
//     trust the gateway itself; and while the webhook is down or refusing, the master key gets
//     the webhook's answer (503, 401 or 403) like every other key, so the admin is locked out
//     too. An operator locked out can make the webhook recognise the master key itself, run it
//     redundantly behind one URL, or restart the gateway without custom_auth, after which the
//     master key is again decided locally. Rejected: the local short-circuit for the master key
//     (its old rule), which kept the key from the webhook but silently gave every request
//     presenting it proxy_admin rights the webhook never granted.
//   - No credential is 401 with WWW-Authenticate: Bearer, decided locally, also with a webhook:
//     the webhook never receives credential headers, so it could not authenticate such a request
//     anyway. A wrong key is 401 with Bearer error="invalid_token" (RFC 6750).
//   - Weak master key (WeakKeyReason): unset; shorter than 16 characters; a well-known example
//     (sk-1234, sk-master, sk-test, changeme, ...); fewer than 6 distinct characters; or only
//     digits after "sk-". The quickstart's "sk-quickstart-please-change" is long and varied, so
//     it passes: it is a placeholder for local use that the quickstart tells operators to
//     replace. New refuses a weak key unless Config.PermitWeak; the error names
//     LITELLM_DANGEROUSLY_PERMIT_WEAK_OR_UNSET_MASTER_KEY and the reason, never the key. The
//     rule applies with custom_auth too: the webhook then sees the master key, and it becomes
//     the local admin credential again as soon as custom_auth is removed.
//     Rejected: an entropy estimate (opaque to operators, and random-looking placeholders pass
//     it anyway).
//   - Open gateway: with PermitWeak, no master key and no webhook, every request is admitted as
//     the proxy admin (IsMaster true), as LiteLLM does without a master_key. New logs a warning.
//     Rejected: refusing everything, which makes the flag useless for local demos.
//   - Webhook request: POST {"api_key", "method", "path", "headers"} as JSON. path is the URL path
//     without the query (queries may carry secrets). headers are the request headers with names
//     lower-cased and repeated values joined by ", ", minus every header that may carry a secret:
//     any name containing auth, token, secret, key, cookie, password, passwd, credential, session
//     or signature (so Authorization, Proxy-Authorization, x-litellm-api-key, Cookie,
//     Mcp-Session-Id, x-mcp-auth, x-mcp-<alias>-authorization, x-api-key all go), and every
//     x-mcp-* header but x-mcp-servers and x-mcp-access-groups (x-mcp-<alias>-<header> is
//     addressed to one upstream, whatever its name: x-mcp-github-x-tenant goes too), except the
//     harmless idempotency-key and x-idempotency-key. A denylist by word was preferred over an
//     allowlist because webhooks routinely key on custom headers (tenant, end-user id) that an
//     allowlist could not anticipate; the words cover every credential header in LiteLLM's docs.
//     The remaining headers are bounded: a request with more than 64 of them or more than
//     16 KiB of names plus values is refused with 431 and the webhook is not asked, so a
//     caller's flood of headers costs the webhook nothing. Rejected: dropping the excess (the
//     largest first), which let a caller choose what the webhook sees by crowding out the
//     headers it keys on (a proxy's X-Forwarded-For, a tenant header).
//   - Webhook answer: 200 is the identity, decoded with exact key matching; unknown keys are
//     ignored; string fields may be null; lists must be lists of strings. 401 and 403 are passed
//     through. Every other status (including other 2xx and 3xx: redirects are never followed, so
//     the key is never re-posted elsewhere), a timeout (Config.Timeout, default 5s), a network
//     error, a body over 1 MiB or an invalid body is 503: never "allow".
//   - Empty permission lists mean "not set", as in LiteLLM (a key with mcp_servers: [] inherits
//     rather than being locked out; the explicit deny is the no-mcp-servers sentinel). The
//     decoder turns [] into nil and drops empty mcp_tool_permissions entries, so nil is the only
//     spelling of "no restriction" a Caller from this package carries.
//   - Every request with a key the webhook admitted calls the webhook again: successes are not
//     cached, so revocation takes effect on the next request. Refusals are remembered briefly so
//     an unknown key repeated in a flood costs one call: a 401 for the key's SHA-256 digest, a
//     403 for a digest of the key's digest, method and path (a webhook may forbid one operation
//     and allow another). Bounded LRU: Config.NegativeCacheTTL (default 5s) and
//     Config.NegativeCacheSize (default 10000 entries, least recently used evicted); a negative
//     value disables it. The cache holds digests only, never a key; the price is that a key
//     minted right after being refused is accepted up to the TTL later.
//   - Concurrent webhook calls are bounded by Config.MaxWebhookCalls (default 64). A request
//     waits for a slot within its webhook timeout and then gets 503, so a flood of unknown keys
//     cannot open unbounded connections to the webhook; "webhook busy" is logged at WARN at most
//     once a second.
//   - Nothing the webhook sends (body, status text) and no key appears in an error or a log line;
//     errors are fixed texts, transport failures are logged by class (timeout, network error
//     (dial)), and the webhook URL is not logged (it may hold a secret in its query).
//   - Store keys: without a webhook, a key that is not the master key is looked up by its hex
//     SHA-256 through Config.Keys (the store and its short-lived cache live behind that
//     function, so this package imports no store). No such key (never issued or deleted), a
//     blocked key and an expired key (Expires not after now) are each 401 with
//     Bearer error="invalid_token" and a message saying which, so an operator can tell them
//     apart; a lookup failure is 503, never "allow". A valid key is a Caller with the key's
//     user, team and organisation and its object_permission lists, normalised as a webhook
//     identity's are (empty entries and lists dropped), so internal/policy applies the same
//     rules to both. The lookup also resolves the key's other levels (team, user,
//     organisation, and the end user named by x-litellm-end-user-id, at most 256 bytes) into
//     Grants that policy intersects with the key's own lists, and the key's user's role; a
//     blocked team or end user refuses the key with 403 (the key itself is valid, its use is
//     not allowed). The end user is part of the caller's Binding, so sealed tokens and
//     listens are bound to it. The master key is compared first and never reaches the store.
//     With a webhook the store is not consulted: the webhook decides every key and every
//     level.
//   - JWT callers (Config.JWT, general_settings.enable_jwt_auth): a credential shaped like a JWT
//     (three dot-separated parts, not "sk-...") is verified as a token, before the master key,
//     the webhook or the store are consulted; a key never has that shape, so keys keep working
//     beside JWTs. Verification uses go-oidc's verifier over this package's key set (jwksKeySet),
//     one per JWKS URL (JWT_PUBLIC_KEY_URL): it caches the keys and fetches the set again when a
//     token names a key it lacks, one fetch in flight per URL, each bounded by
//     DefaultJWKSTimeout (10 s), and at most one fetch per JWTConfig.JWKSRefetchGap (default
//     DefaultJWKSRefetchGap, 30 s) per URL: within the gap a token with an unknown kid is
//     refused without a fetch, so a stranger sending tokens with invented kids costs the
//     provider one request per gap, not one per token. A failed fetch counts as a fetch, so an
//     unreachable provider is not polled in a loop. The price: a rotation at the provider is
//     picked up by the first token signed with the new key once the gap since the last fetch
//     has passed (tokens of the new key are refused for up to 30 s after a fetch that preceded
//     the rotation), and the retired key is dropped with that fetch. There is no scheduled
//     refresh: keys are fetched only on demand. Rejected: go-oidc's RemoteKeySet, which fetches
//     for every unknown kid without a gap and exposes no way to add one. Accepted algorithms are the asymmetric ones (never "none", never
//     HMAC, so a public key cannot double as a shared secret). After the signature and expiry,
//     the issuer must be one of JWTConfig.Issuers when set, and the audience must name one of
//     JWTConfig.Audiences or one of the request's own resource URLs (RFC 8707): always, also
//     without JWT_AUDIENCE, where LiteLLM skips the check; a token minted for another service
//     must not be replayable here. Each failure is 401 with Bearer error="invalid_token" and a
//     fixed message naming the check; the token is never logged or quoted.
//   - A verified token becomes a Caller through the litellm_jwtauth fields (dotted names reach
//     into nested claims): the user (default claim "sub", so every JWT caller is bound to a
//     subject for sealing and listens), team (team_id_jwt_field, else the first of
//     team_ids_jwt_field, else team_id_default), organisation and end user. admin_jwt_scope in
//     "scope" or "scp" makes it the proxy admin. With user_roles_jwt_field and
//     user_allowed_roles, a token with none of the allowed roles is 403. The levels are then
//     resolved through JWTConfig.Levels as a stored key's are (a blocked team or end user is 403,
//     a lookup failure 503), so policy applies one decision to keys and tokens; a JWT caller has
//     no key level (no own lists, no KeyHash), and its Authorization is never forwarded upstream
//     because Credential reports that the credential came from Authorization.
//   - ClaimRule is that claim-to-Caller rule on its own, for identities whose token was
//     verified elsewhere (the admin UI's OIDC sign-in verifies ID tokens for its own client
//     id): one rule decides who is the proxy admin, whichever way the token arrived.
//   - WithSession: a context may carry a SessionCheck, and Authenticate with that context
//     calls it instead of reading a credential. Only in-process code can set a context, so no
//     request from the network carries one; the admin UI uses it to call the management
//     routes as an SSO identity that holds no gateway credential, and the check re-reads the
//     UI session on every authentication, so a session that ended stops its calls too.
//   - Guardrails: a stored key's and its team's metadata.guardrails (MetadataGuardrails: a
//     list of names, or LiteLLM's {name: bool} object) become Caller.Guardrails, which
//     internal/guardrail runs on the caller's tool calls beside the server's; a JWT caller gets
//     its team's. Webhook identities carry none.
//   - The package reads no environment variables: the caller passes PermitWeak, so tests and
//     the config loader stay pure.
package identity
