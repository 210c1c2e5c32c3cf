package app

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/mcpgw/mcpgw/internal/config"
	"github.com/mcpgw/mcpgw/internal/identity"
	"github.com/mcpgw/mcpgw/internal/store"
	"github.com/mcpgw/mcpgw/internal/ui"
)

// Environment variables of the admin UI's sign-in through an OpenID provider: LiteLLM's
// generic SSO names, and GENERIC_ISSUER (mcpgw's), whose discovery document gives the key set
// and the endpoints GENERIC_AUTHORIZATION_ENDPOINT and GENERIC_TOKEN_ENDPOINT do not set.
const (
	genericClientIDEnv     = "GENERIC_CLIENT_ID"
	genericClientSecretEnv = "GENERIC_CLIENT_SECRET"
	genericIssuerEnv       = "GENERIC_ISSUER"
	genericAuthEnv         = "GENERIC_AUTHORIZATION_ENDPOINT"
	genericTokenEnv        = "GENERIC_TOKEN_ENDPOINT"
	genericScopeEnv        = "GENERIC_SCOPE"
)

// readUISSO reads the UI's SSO settings; nil when GENERIC_CLIENT_ID is unset. Errors name
// the variable, never its value.
func readUISSO(lookupEnv func(string) (string, bool)) (*ui.SSOConfig, error) {
	get := func(name string) string {
		if v, ok := lookupEnv(name); ok {
			return strings.TrimSpace(v)
		}
		return ""
	}
	id := get(genericClientIDEnv)
	if id == "" {
		return nil, nil
	}
	c := &ui.SSOConfig{ClientID: id, ClientSecret: get(genericClientSecretEnv), Issuer: get(genericIssuerEnv),
		AuthURL: get(genericAuthEnv), TokenURL: get(genericTokenEnv), Scopes: strings.Fields(strings.ReplaceAll(get(genericScopeEnv), ",", " "))}
	if c.Issuer == "" {
		return nil, fmt.Errorf("%s needs %s: the OpenID provider's issuer URL (its discovery document gives the keys that sign ID tokens)",
			genericClientIDEnv, genericIssuerEnv)
	}
	for name, v := range map[string]string{genericIssuerEnv: c.Issuer, genericAuthEnv: c.AuthURL, genericTokenEnv: c.TokenURL} {
		if u, err := url.Parse(v); v != "" && (err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "") {
			return nil, fmt.Errorf("%s must be an absolute http(s) URL", name)
		}
	}
	return c, nil
}

// uiClaims is the rule the UI's SSO identities are decided by: the one JWT callers are
// (litellm_jwtauth's claim fields, admin_jwt_scope, user_roles_jwt_field with
// user_allowed_roles, and the stored levels, which carry the user's role), whether or not
// enable_jwt_auth is on.
func uiClaims(cfg *config.Config, st *store.Store) ui.ClaimsCaller {
	j := cfg.General.JWT
	return identity.NewClaimRule(identity.JWTConfig{
		UserIDField: j.UserIDField, TeamIDField: j.TeamIDField, TeamIDsField: j.TeamIDsField,
		OrgIDField: j.OrgIDField, EndUserIDField: j.EndUserIDField, TeamIDDefault: j.TeamIDDefault,
		AdminScope: j.AdminScope, UserRolesField: j.UserRolesField, UserAllowedRoles: j.UserAllowedRoles,
		Levels: levelLookup(st),
	}).Caller
}
