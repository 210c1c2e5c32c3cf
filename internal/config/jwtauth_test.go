package config_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcpgw/mcpgw/internal/config"
)

func TestJWTAuthSettings(t *testing.T) {
	env := map[string]string{"JWT_PUBLIC_KEY_URL": "https://a.example/jwks, https://b.example/keys", "JWT_AUDIENCE": "mcpgw",
		"JWT_ISSUER": "https://a.example"}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	cfg, probs, err := config.Parse([]byte(`general_settings:
  enable_jwt_auth: true
  litellm_jwtauth:
    user_id_jwt_field: preferred_username
    team_id_jwt_field: azp
    team_ids_jwt_field: groups
    org_id_jwt_field: org
    end_user_id_jwt_field: act.sub
    user_roles_jwt_field: roles
    user_allowed_roles: [mcp]
    scopes_supported: [openid]
    jwks_refetch_gap_seconds: 0.5
    upsert_sso_user_to_team: true
`), config.Options{LookupEnv: lookup})
	if err != nil {
		t.Fatalf("Parse: %v %v", err, probs)
	}
	j := cfg.General.JWT
	if !j.Enabled || !slices.Equal(j.KeyURLs, []string{"https://a.example/jwks", "https://b.example/keys"}) ||
		!slices.Equal(j.Audiences, []string{"mcpgw"}) || !slices.Equal(j.Issuers, []string{"https://a.example"}) ||
		j.UserIDField != "preferred_username" || j.TeamIDField != "azp" || j.TeamIDsField != "groups" || j.OrgIDField != "org" ||
		j.EndUserIDField != "act.sub" || j.UserRolesField != "roles" || !slices.Equal(j.UserAllowedRoles, []string{"mcp"}) ||
		!slices.Equal(j.Scopes, []string{"openid"}) || j.AdminScope != config.DefaultAdminJWTScope ||
		j.JWKSRefetchGap != 500*time.Millisecond {
		t.Fatalf("JWT = %+v", j)
	}
	if !slices.ContainsFunc(probs, func(p config.Problem) bool {
		return p.Severity == config.SeverityWarning && strings.Contains(p.Msg, "upsert_sso_user_to_team")
	}) {
		t.Fatalf("want a warning for the unused key, got %v", probs)
	}
	if _, probs, err := config.Parse([]byte("general_settings:\n  enable_jwt_auth: true\n"), config.Options{}); err == nil ||
		!strings.Contains(probs[0].Msg, "JWT_PUBLIC_KEY_URL") {
		t.Fatalf("JWT auth without a JWKS URL: %v %v", err, probs)
	}
}
