// Package seal mints and opens the opaque tokens the gateway hands to callers:
// legacy session ids, pagination cursors and MRTR continuations. Every replica
// that shares LITELLM_SALT_KEY can open every other replica's tokens; nobody
// without the key can read or forge them; and a token minted for one purpose
// is useless for any other.
//
// # Format
//
// A token is
//
//	base64url_nopad( version(1) | nonce(12) | AES-256-GCM( expiry(8) | payload ) | tag(16) )
//
// where:
//
//   - version is 1. It is checked before decryption and is also bound into the
//     AAD, so a token can never be re-read under another version's rules.
//   - expiry is the Unix time in milliseconds, big-endian, inside the
//     ciphertext: nobody can read or extend it, and it is trusted only after
//     authentication. A token whose expiry <= now is expired.
//   - AAD = version byte | purpose.
//   - Callers add any textual prefix they need (for instance "mcp_state_v1.");
//     this package deals only in the base64url body.
//
// # Keys
//
// New derives one 32-byte key per purpose with HKDF-SHA256 (RFC 5869): the
// salt key is the input keying material, the HKDF salt is empty, and
// info = "mcpgw/seal/v1/" + purpose. Domain separation comes from info; a
// fixed HKDF salt would add nothing because the input key is already the
// shared secret. Derivation and cipher setup happen once in New: Seal and
// Open only look a purpose up in a read-only map, so there is no per-call
// key derivation and no lock. The derived key bytes are cleared once the AES
// key schedule is built; the salt key itself is not retained.
//
// A purpose therefore gets both its own key and its own AAD. Either one alone
// would stop cross-purpose reuse. Using both costs nothing at run time, and
// the AAD keeps purpose binding even if keys were ever shared.
//
// # Errors
//
// Every failure caused by the token itself (bad length, bad base64, a
// non-canonical base64 string, embedded CR/LF (which encoding/base64 would
// otherwise skip), wrong version, failed authentication, a
// foreign key, the wrong purpose) is ErrInvalid, so a caller can't be used as
// an oracle that tells an attacker which check failed. ErrExpired is reported
// only for authentic tokens: authentication happens before the expiry check,
// so a tampered token that is also expired is ErrInvalid. Errors in how the
// Sealer is used (an unknown purpose, ttl <= 0, an oversized payload, no
// key) have their own sentinels, because they are programming or
// configuration errors, never attacker input. A nil *Sealer returns ErrNoKey
// from Seal and Open, so a gateway started without LITELLM_SALT_KEY can keep
// a nil Sealer and still report the right error. ErrNoKey's text names
// LITELLM_SALT_KEY.
//
// # Limits
//
// Open rejects tokens longer than MaxTokenBytes (64 KiB) or shorter than an
// empty-payload token before it decodes anything, so an oversized token
// costs one length comparison and no allocation. Seal refuses payloads that
// would produce a token Open would reject (ErrTooLarge), so the gateway never
// mints a token it can't open.
//
// Nonces are 96 random bits from crypto/rand. Under NIST SP 800-38D's
// 2^-32 collision bound, that allows about 2^32 seals per purpose key. That
// is far more than one salt-key lifetime at gateway rates. Rotating the salt
// key resets the count.
//
// # Testing clock
//
// The clock is injected with (*Sealer).WithClock, which returns a copy that
// shares the derived keys. A functional option on New was rejected: tests
// usually want several clocks over the same keys (mint at t0, open at t1),
// and a copy-returning method gives that without deriving the keys again.
// It also keeps New's signature to the salt key and the purposes.
//
// # Allocations
//
// Seal makes two allocations: one buffer holds both the raw token (sealed in
// place) and its base64 form, plus the final string. Open makes one: the
// decoded buffer, which is decrypted in place. The returned payload is a
// subslice of it, owned by the caller and capacity-capped.
//
// # Rejected alternatives
//
//   - cipher.NewGCMWithRandomNonce: it forbids inexact overlap between
//     plaintext and output, so the plaintext would need its own buffer (one
//     more allocation per Seal). It also leaves no natural place for the
//     version byte. With cipher.NewGCM and a crypto/rand nonce, the token is
//     sealed in place, and the nonce has the same safety.
//   - Deriving keys per call, or caching them lazily behind a mutex: this
//     costs time or contention on every call, and lazy caching is
//     package-level or hidden mutable state.
//   - One key for all purposes, with the purpose only in the AAD: this would
//     work, but per-purpose keys also limit how much any one key is used, and
//     their cost is paid once.
//   - LiteLLM's layout (JSON {"expires_at","value"} plaintext, HKDF salt
//     "litellm:mcp:state:v1", info = purpose, AAD = "mcp_state_v1." +
//     purpose): tokens only need to be opened by mcpgw replicas, never by
//     LiteLLM, and a binary expiry avoids JSON work on every Open. The
//     behaviour that matters is kept: random nonces, strict base64url,
//     purpose binding, expiry <= now is expired, a 64 KiB cap and a single
//     "invalid" outcome. Only the bytes differ.
//   - A JSON or CBOR envelope, or separate expiry and MAC fields outside the
//     ciphertext: these leak the expiry, add parsing before authentication,
//     and allow more malformed inputs.
//   - Lenient base64 (padding allowed, non-zero trailing bits): it would give
//     one token several accepted spellings. Strict decoding makes the
//     encoding canonical, so changing any character of a token invalidates
//     it.
//   - Trimming whitespace from the salt key: the key is used exactly as
//     given, so every replica derives the same keys from the same bytes.
package seal
