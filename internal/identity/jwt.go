package identity

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
)

// DefaultJWKSTimeout bounds one JWKS fetch when JWTConfig.HTTPClient is nil.
const DefaultJWKSTimeout = 10 * time.Second

// DefaultUserIDClaim names the user when JWTConfig.UserIDField is empty.
const DefaultUserIDClaim = "sub"

// jwtAlgs are the signature algorithms accepted; "none" and the HMAC family never are (a
// public key must not double as a shared secret).
var jwtAlgs = []string{
	oidc.RS256, oidc.RS384, oidc.RS512, oidc.ES256, oidc.ES384, oidc.ES512,
	oidc.PS256, oidc.PS384, oidc.PS512, oidc.EdDSA,
}

// LevelLookup resolves the stored levels (team, user, organisation, end user) of an identity
// that is not a stored key, as KeyLookup does for a key's; the result's key fields are unused.
type LevelLookup func(ctx context.Context, userID, teamID, orgID, endUserID string) (StoredKey, error)

// JWTConfig configures JWT callers (general_settings.enable_jwt_auth, litellm_jwtauth).
type JWTConfig struct {
	// KeyURLs are the JWKS URLs of the trusted identity providers (JWT_PUBLIC_KEY_URL).
	KeyURLs []string
	// Issuers, when set, are the only accepted iss values (JWT_ISSUER).
	Issuers []string
	// Audiences are accepted aud values (JWT_AUDIENCE).
	Audiences []string
	// Resources returns the request's own resource URLs (RFC 8707/9728); a token whose aud
	// names one of them is accepted too. Nil means none.
	Resources func(r *http.Request) []string
	// UserIDField, TeamIDField, TeamIDsField, OrgIDField and EndUserIDField name the claims
	// (dotted names reach into nested objects) read into the caller; UserIDField defaults to
	// DefaultUserIDClaim.
	UserIDField, TeamIDField, TeamIDsField, OrgIDField, EndUserIDField string
	// TeamIDDefault is the team of a token naming none.
	TeamIDDefault string
	// AdminScope in the token's scope (or scp) makes the caller the proxy admin; "" never.
	AdminScope string
	// UserRolesField and UserAllowedRoles: with both set, a token must carry an allowed role.
	UserRolesField   string
	UserAllowedRoles []string
	// Levels resolves the caller's stored levels; nil means none (no store).
	Levels LevelLookup
	// HTTPClient fetches the JWKS; nil means a client with DefaultJWKSTimeout.
	HTTPClient *http.Client
	// JWKSRefetchGap is the least time between two fetches of one JWKS URL prompted by
	// tokens naming a key the cache lacks; zero means DefaultJWKSRefetchGap.
	JWKSRefetchGap time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// jwtAuth verifies JWT callers.
type jwtAuth struct {
	cfg       JWTConfig
	verifiers []*oidc.IDTokenVerifier // one per JWKS URL, each with its own jwksKeySet
}

// newJWTAuth builds the verifiers; each key set caches its keys and fetches the JWKS again
// when a token names a key it does not hold (rotation), one fetch at a time and at most one
// per JWKSRefetchGap.
func newJWTAuth(cfg JWTConfig) (*jwtAuth, error) {
	if len(cfg.KeyURLs) == 0 {
		return nil, errors.New("identity: JWT auth needs at least one JWKS URL (JWT_PUBLIC_KEY_URL)")
	}
	if cfg.UserIDField == "" {
		cfg.UserIDField = DefaultUserIDClaim
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	client := cfg.HTTPClient
	if client == nil {
		client = &http.Client{Timeout: DefaultJWKSTimeout}
	}
	if cfg.JWKSRefetchGap == 0 {
		cfg.JWKSRefetchGap = DefaultJWKSRefetchGap
	}
	j := &jwtAuth{cfg: cfg}
	for _, u := range cfg.KeyURLs {
		ks := newJWKSKeySet(u, client, cfg.JWKSRefetchGap, cfg.Now)
		j.verifiers = append(j.verifiers, oidc.NewVerifier("", ks, &oidc.Config{
			SkipClientIDCheck: true, SkipIssuerCheck: true, SupportedSigningAlgs: jwtAlgs, Now: cfg.Now}))
	}
	return j, nil
}

// looksLikeJWT reports whether a credential has a JWT's shape: three dot-separated parts, the
// first non-empty. Gateway keys (sk-...) never do.
func looksLikeJWT(s string) bool {
	return strings.Count(s, ".") == 2 && !strings.HasPrefix(s, ".") && !strings.HasPrefix(s, "sk-")
}

func tokenRefused(what string) *Error {
	return &Error{Status: 401, Challenge: `Bearer error="invalid_token"`, Message: "invalid token: " + what}
}

// verify checks the token's signature against every configured key set, then its expiry,
// issuer and audience. Errors are fixed texts: the token never appears in one.
func (j *jwtAuth) verify(ctx context.Context, r *http.Request, raw string) (map[string]any, error) {
	var tok *oidc.IDToken
	var lastErr error
	for _, v := range j.verifiers {
		t, err := v.Verify(ctx, raw)
		if err == nil {
			tok = t
			break
		}
		lastErr = err
		var exp *oidc.TokenExpiredError
		if errors.As(err, &exp) {
			return nil, tokenRefused("expired")
		}
	}
	if tok == nil {
		if lastErr != nil && strings.Contains(lastErr.Error(), "malformed") {
			return nil, tokenRefused("malformed or unsigned")
		}
		return nil, tokenRefused("signature not verified by a trusted key")
	}
	if len(j.cfg.Issuers) > 0 && !slices.Contains(j.cfg.Issuers, tok.Issuer) {
		return nil, tokenRefused("issuer not trusted")
	}
	if !j.audienceOK(r, tok.Audience) {
		return nil, tokenRefused("audience is not this gateway")
	}
	var claims map[string]any
	if err := tok.Claims(&claims); err != nil {
		return nil, tokenRefused("malformed claims")
	}
	return claims, nil
}

// audienceOK reports whether aud names a configured audience or one of the request's own
// resource URLs (compared without a trailing slash).
func (j *jwtAuth) audienceOK(r *http.Request, aud []string) bool {
	ok := append([]string(nil), j.cfg.Audiences...)
	if j.cfg.Resources != nil {
		ok = append(ok, j.cfg.Resources(r)...)
	}
	for _, a := range aud {
		for _, want := range ok {
			if a == want || strings.TrimRight(a, "/") == strings.TrimRight(want, "/") {
				return true
			}
		}
	}
	return false
}

// authenticate turns a verified token into a Caller through the same levels as a stored key.
func (j *jwtAuth) authenticate(ctx context.Context, r *http.Request, raw string) (*Caller, error) {
	claims, err := j.verify(ctx, r, raw)
	if err != nil {
		return nil, err
	}
	return (&ClaimRule{cfg: j.cfg}).Caller(ctx, claims)
}

// ClaimRule maps verified token claims to a Caller: the litellm_jwtauth fields, the admin
// scope, the allowed roles and the stored levels. It is the rule every JWT caller is decided
// by, exported for identities whose token was verified elsewhere (the admin UI's OIDC
// sign-in), so there is one rule, not two.
type ClaimRule struct {
	cfg JWTConfig
}

// NewClaimRule returns the rule of cfg's claim fields, admin scope, roles and Levels; the key
// URLs, issuers and audiences are not used (the caller has verified the token).
func NewClaimRule(cfg JWTConfig) *ClaimRule {
	if cfg.UserIDField == "" {
		cfg.UserIDField = DefaultUserIDClaim
	}
	return &ClaimRule{cfg: cfg}
}

// Caller maps verified claims to a Caller. Failures are *Error values (403 for a role not
// allowed or a blocked level, 503 when the levels cannot be read).
func (cr *ClaimRule) Caller(ctx context.Context, claims map[string]any) (*Caller, error) {
	cfg := cr.cfg
	c := &Caller{UserID: claimString(claims, cfg.UserIDField), TeamID: claimString(claims, cfg.TeamIDField),
		OrgID: claimString(claims, cfg.OrgIDField), EndUserID: claimString(claims, cfg.EndUserIDField),
		Role: RoleInternalUser, Claims: claims}
	if c.TeamID == "" {
		if teams := claimStrings(claims, cfg.TeamIDsField); len(teams) > 0 {
			c.TeamID = teams[0]
		} else {
			c.TeamID = cfg.TeamIDDefault
		}
	}
	if cfg.UserRolesField != "" && len(cfg.UserAllowedRoles) > 0 {
		roles := claimStrings(claims, cfg.UserRolesField)
		if !slices.ContainsFunc(roles, func(s string) bool { return slices.Contains(cfg.UserAllowedRoles, s) }) {
			return nil, &Error{Status: 403, Message: "token's roles are not allowed on this gateway"}
		}
	}
	if cfg.AdminScope != "" && slices.Contains(tokenScopes(claims), cfg.AdminScope) {
		c.IsMaster, c.Role = true, RoleProxyAdmin
		return c, nil
	}
	if len(c.EndUserID) > maxEndUserID {
		return nil, &Error{Status: 403, Message: fmt.Sprintf("token's end user id is longer than %d bytes", maxEndUserID)}
	}
	if cfg.Levels == nil {
		return c, nil
	}
	lv, err := cfg.Levels(ctx, c.UserID, c.TeamID, c.OrgID, c.EndUserID)
	if err != nil {
		return nil, errUnavailable()
	}
	if lv.BlockedBy != "" {
		return nil, &Error{Status: 403, Message: "the token's " + lv.BlockedBy + " is blocked: an admin can unblock it"}
	}
	c.TeamAlias, c.TeamLimits, c.Guardrails = lv.TeamAlias, lv.TeamLimits, nonEmpty(lv.Guardrails)
	if lv.Role != "" {
		c.Role = lv.Role
	}
	for _, g := range lv.Grants {
		c.Grants = append(c.Grants, Grant{Level: g.Level, Servers: nonEmpty(g.Servers),
			AccessGroups: nonEmpty(g.AccessGroups), ToolPermissions: toolPermissions(g.ToolPermissions),
			BlockedTools: nonEmpty(g.BlockedTools)})
	}
	return c, nil
}

// claimValue follows a dotted path through nested objects; a claim whose own name contains
// dots is found first.
func claimValue(claims map[string]any, path string) any {
	if path == "" {
		return nil
	}
	if v, ok := claims[path]; ok {
		return v
	}
	var cur any = claims
	for _, part := range strings.Split(path, ".") {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = m[part]
	}
	return cur
}

// claimString reads a string claim (a number is formatted); other types yield "".
func claimString(claims map[string]any, path string) string {
	switch v := claimValue(claims, path).(type) {
	case string:
		return v
	case float64:
		return fmt.Sprint(v)
	}
	return ""
}

// claimStrings reads a list of strings, or a single string as a one-element list.
func claimStrings(claims map[string]any, path string) []string {
	switch v := claimValue(claims, path).(type) {
	case string:
		if v != "" {
			return []string{v}
		}
	case []any:
		var out []string
		for _, x := range v {
			if s, ok := x.(string); ok && s != "" {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

// tokenScopes reads scope (space-separated, RFC 8693/9068) or scp (list or string).
func tokenScopes(claims map[string]any) []string {
	if s, ok := claims["scope"].(string); ok {
		return strings.Fields(s)
	}
	var out []string
	for _, s := range claimStrings(claims, "scp") {
		out = append(out, strings.Fields(s)...)
	}
	return out
}
