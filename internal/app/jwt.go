package app

import (
	"context"

	"github.com/mcpgw/mcpgw/internal/config"
	"github.com/mcpgw/mcpgw/internal/front"
	"github.com/mcpgw/mcpgw/internal/identity"
	"github.com/mcpgw/mcpgw/internal/store"
)

// resourceMetadata is the gateway's OAuth protected-resource metadata, or nil when JWT auth
// is off (the gateway then has no authorization server to name).
func resourceMetadata(cfg *config.Config, reg *registry) *front.ResourceMetadata {
	j := cfg.General.JWT
	if !j.Enabled {
		return nil
	}
	return &front.ResourceMetadata{
		Public:               front.NewPublicURL(cfg.General.Public.BaseURL, cfg.General.Public.TrustedProxies),
		AuthorizationServers: j.Issuers, Scopes: j.Scopes, Resolve: reg.resolve,
	}
}

// jwtConfig is the authenticator's JWT configuration, or nil when JWT auth is off. A token's
// audience must name JWT_AUDIENCE or one of the request's resource URLs.
func jwtConfig(cfg *config.Config, st *store.Store, md *front.ResourceMetadata) *identity.JWTConfig {
	j := cfg.General.JWT
	if !j.Enabled || md == nil {
		return nil
	}
	return &identity.JWTConfig{
		KeyURLs: j.KeyURLs, Issuers: j.Issuers, Audiences: j.Audiences, Resources: md.Resources,
		UserIDField: j.UserIDField, TeamIDField: j.TeamIDField, TeamIDsField: j.TeamIDsField,
		OrgIDField: j.OrgIDField, EndUserIDField: j.EndUserIDField, TeamIDDefault: j.TeamIDDefault,
		AdminScope: j.AdminScope, UserRolesField: j.UserRolesField, UserAllowedRoles: j.UserAllowedRoles,
		Levels: levelLookup(st), JWKSRefetchGap: j.JWKSRefetchGap,
	}
}

// levelLookup resolves a token's team, user, organisation and end user through the store as
// a key's are (nil without a store): the same permission decision applies to both.
func levelLookup(st *store.Store) identity.LevelLookup {
	if st == nil {
		return nil
	}
	return func(ctx context.Context, userID, teamID, orgID, endUserID string) (identity.StoredKey, error) {
		var out identity.StoredKey
		err := resolveLevels(ctx, st, store.Key{UserID: userID, TeamID: teamID, OrganizationID: orgID}, endUserID, &out)
		return out, err
	}
}
