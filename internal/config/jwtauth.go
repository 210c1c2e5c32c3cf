package config

import (
	"strings"
	"time"
)

// Environment variables read for JWT auth (LiteLLM's names, and JWT_ISSUER, mcpgw's).
const (
	// JWTPublicKeyURLEnv names the JWKS URL(s) of the identity provider(s), comma-separated.
	JWTPublicKeyURLEnv = "JWT_PUBLIC_KEY_URL"
	// JWTAudienceEnv names the audience(s) a token must carry, comma-separated.
	JWTAudienceEnv = "JWT_AUDIENCE"
	// JWTIssuerEnv names the accepted issuer(s), comma-separated; they are also the
	// authorization servers the protected-resource metadata names.
	JWTIssuerEnv = "JWT_ISSUER"
)

// DefaultAdminJWTScope is LiteLLM's default admin_jwt_scope.
const DefaultAdminJWTScope = "litellm_proxy_admin"

// JWTAuth is general_settings.enable_jwt_auth with its litellm_jwtauth block and the JWT_*
// environment variables.
type JWTAuth struct {
	// Enabled is enable_jwt_auth.
	Enabled bool
	// KeyURLs are JWT_PUBLIC_KEY_URL's JWKS URLs.
	KeyURLs []string
	// Audiences are JWT_AUDIENCE's values.
	Audiences []string
	// Issuers are JWT_ISSUER's values.
	Issuers []string
	// Fields map claims to the caller; dotted names reach into nested objects.
	UserIDField, UserEmailField, TeamIDField, TeamIDsField, OrgIDField, EndUserIDField string
	// TeamIDDefault is the team of a token naming none (team_id_default).
	TeamIDDefault string
	// AdminScope is admin_jwt_scope (default DefaultAdminJWTScope).
	AdminScope string
	// UserRolesField and UserAllowedRoles: when both are set, a token must carry one of the
	// allowed roles.
	UserRolesField   string
	UserAllowedRoles []string
	// Scopes are the scopes the protected-resource metadata advertises (mcpgw's scopes_supported).
	Scopes []string
	// JWKSRefetchGap (mcpgw's jwks_refetch_gap_seconds) is the least time between two JWKS
	// fetches of one URL prompted by unknown kids; zero means the identity package's default.
	JWKSRefetchGap time.Duration
}

// jwtAuthKey reads enable_jwt_auth and litellm_jwtauth; false when e is neither.
func (l *loader) jwtAuthKey(e entry, field string, j *JWTAuth) bool {
	switch e.key {
	case "enable_jwt_auth":
		j.Enabled, _ = l.boolean(e.v, field)
	case "litellm_jwtauth":
		l.jwtFields(e, field, j)
	default:
		return false
	}
	return true
}

func (l *loader) jwtFields(e entry, field string, j *JWTAuth) {
	strs := map[string]*string{
		"user_id_jwt_field": &j.UserIDField, "user_email_jwt_field": &j.UserEmailField,
		"team_id_jwt_field": &j.TeamIDField, "team_ids_jwt_field": &j.TeamIDsField,
		"org_id_jwt_field": &j.OrgIDField, "end_user_id_jwt_field": &j.EndUserIDField,
		"team_id_default": &j.TeamIDDefault, "admin_jwt_scope": &j.AdminScope,
		"user_roles_jwt_field": &j.UserRolesField,
	}
	for _, f := range l.entries(e.v, field, "key") {
		sub := field + "." + f.key
		if dst, ok := strs[f.key]; ok {
			*dst, _ = l.str(f.v, sub)
			continue
		}
		switch f.key {
		case "user_allowed_roles":
			j.UserAllowedRoles = l.strList(f.v, sub)
		case "scopes_supported":
			j.Scopes = l.strList(f.v, sub)
		case "jwks_refetch_gap_seconds":
			if d, ok := l.seconds(f.v, sub); ok {
				if d <= 0 {
					l.errorf(f.v, "%s must be a positive number of seconds", sub)
				}
				j.JWKSRefetchGap = d
			}
		default:
			l.warnf(f.k, "key %q in %s is not used by mcpgw (ignored)", f.key, field)
		}
	}
}

// jwtAuthEnv fills the JWT_* values and defaults, and refuses JWT auth without a key URL.
func (l *loader) jwtAuthEnv(j *JWTAuth) {
	if j.AdminScope == "" {
		j.AdminScope = DefaultAdminJWTScope
	}
	j.KeyURLs = l.envList(JWTPublicKeyURLEnv)
	j.Audiences = l.envList(JWTAudienceEnv)
	j.Issuers = l.envList(JWTIssuerEnv)
	if !j.Enabled {
		return
	}
	if len(j.KeyURLs) == 0 {
		l.errorAt(0, "general_settings.enable_jwt_auth needs %s (the identity provider's JWKS URL)", JWTPublicKeyURLEnv)
	}
	for _, u := range j.KeyURLs {
		if !isHTTPURL(u) {
			l.errorAt(0, "%s must list http(s) URLs", JWTPublicKeyURLEnv)
			break
		}
	}
}

// envList reads a comma-separated variable from environment_variables, else the environment.
func (l *loader) envList(name string) []string {
	v, ok := l.fileEnv[name]
	if !ok && l.opts.LookupEnv != nil {
		v, _ = l.opts.LookupEnv(name)
	}
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}
