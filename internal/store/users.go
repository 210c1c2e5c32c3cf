package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"
)

// User roles, LiteLLM's.
const (
	UserRoleProxyAdmin         = "proxy_admin"
	UserRoleProxyAdminViewer   = "proxy_admin_viewer"
	UserRoleInternalUser       = "internal_user"
	UserRoleInternalUserViewer = "internal_user_viewer"
)

// UserRoles lists the valid user roles.
var UserRoles = []string{UserRoleProxyAdmin, UserRoleProxyAdminViewer, UserRoleInternalUser, UserRoleInternalUserViewer}

// User is one stored user, with the teams they belong to.
type User struct {
	UserID         string
	Email          string
	Alias          string
	Role           string // one of UserRoles
	OrganizationID string
	Metadata       json.RawMessage
	Permission     Permission
	Teams          []Membership // ordered by team_id
	CreatedAt      time.Time
	UpdatedAt      time.Time
}

const userColumns = `user_id, user_email, user_alias, user_role, organization_id, metadata, object_permission,
	created_at, updated_at`

// CreateUser stores u (a fresh UUID as its id when UserID is empty; internal_user when Role is
// empty) and its team memberships (u.Teams, UserID ignored), all or nothing: a user_id in
// use, an unknown role, or a team or organisation that does not exist is a RefError.
func (s *Store) CreateUser(ctx context.Context, u User) (User, error) {
	if u.UserID == "" {
		u.UserID = NewID()
	}
	if u.Role == "" {
		u.Role = UserRoleInternalUser
	}
	if !slices.Contains(UserRoles, u.Role) {
		return User{}, refErr(ErrForeign, "user_role", "user_role '%s': want one of %v", u.Role, UserRoles)
	}
	now := s.nowMillis()
	u.CreatedAt, u.UpdatedAt, u.Metadata = now, now, json.RawMessage(metadataText(u.Metadata))
	err := s.inTx(ctx, func(tx *tx) error {
		tx.touch(userCacheKey(u.UserID))
		if taken, err := exists(ctx, tx, `SELECT COUNT(*) FROM users WHERE user_id = $1`, u.UserID); err != nil || taken {
			return errors.Join(err, boolErr(taken, refErr(ErrExists, "user_id", "user_id '%s' already exists", u.UserID)))
		}
		if err := checkRefs(ctx, tx, "", u.OrganizationID); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO users (`+userColumns+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
			u.UserID, u.Email, u.Alias, u.Role, u.OrganizationID, string(u.Metadata), permissionText(u.Permission),
			now.UnixMilli(), now.UnixMilli()); err != nil {
			return fmt.Errorf("store: creating a user: %w", err)
		}
		for _, m := range u.Teams {
			tx.touch(teamCacheKey(m.TeamID))
			if err := checkRefs(ctx, tx, m.TeamID, ""); err != nil {
				return err
			}
			if err := addMembers(ctx, tx, now, m.TeamID, []Membership{{UserID: u.UserID, Role: m.Role}}); err != nil {
				return err
			}
		}
		var err error
		u.Teams, err = memberships(ctx, tx, "user_id", u.UserID)
		return err
	})
	if err != nil {
		return User{}, err
	}
	return u, nil
}

// GetUser returns the user with id and their memberships (a RefError matching ErrNotFound
// when none), read from the database.
func (s *Store) GetUser(ctx context.Context, id string) (User, error) {
	u, err := readUser(ctx, s.reads(), id)
	if err != nil {
		return User{}, err
	}
	if u.Teams, err = memberships(ctx, s.reads(), "user_id", id); err != nil {
		return User{}, err
	}
	return u, nil
}

// readUser reads the user with id on q, without their memberships; none is a RefError
// (ErrNotFound).
func readUser(ctx context.Context, q querier, id string) (User, error) {
	return queryRow(ctx, q, "a user", scanUser, notFound("user_id", "user_id '%s' does not exist", id),
		`SELECT `+userColumns+` FROM users WHERE user_id = $1`, id)
}

// LookupUser returns the user with id through this replica's lookup cache; found is false for
// none.
func (s *Store) LookupUser(ctx context.Context, id string) (User, bool, error) {
	return lookupCached(ctx, s, userCacheKey(id), func() (User, error) { return s.GetUser(ctx, id) })
}

// UpdateUser changes the user with id by change in one transaction; a missing user, an
// unknown role or an organisation that does not exist is a RefError and nothing is written.
// The id, memberships and created_at are not changed.
func (s *Store) UpdateUser(ctx context.Context, id string, change func(*User)) (User, error) {
	var u User
	err := s.inTx(ctx, func(tx *tx) error {
		tx.touch(userCacheKey(id))
		var err error
		if u, err = readUser(ctx, tx, id); err != nil {
			return err
		}
		old := u
		change(&u)
		u.UserID, u.CreatedAt, u.UpdatedAt = id, old.CreatedAt, s.nowMillis()
		u.Metadata = json.RawMessage(metadataText(u.Metadata))
		if !slices.Contains(UserRoles, u.Role) {
			return refErr(ErrForeign, "user_role", "user_role '%s': want one of %v", u.Role, UserRoles)
		}
		if u.OrganizationID != old.OrganizationID {
			if err := checkRefs(ctx, tx, "", u.OrganizationID); err != nil {
				return err
			}
		}
		if _, err := tx.ExecContext(ctx, `UPDATE users SET user_email = $1, user_alias = $2, user_role = $3,
			organization_id = $4, metadata = $5, object_permission = $6, updated_at = $7 WHERE user_id = $8`,
			u.Email, u.Alias, u.Role, u.OrganizationID, string(u.Metadata), permissionText(u.Permission),
			u.UpdatedAt.UnixMilli(), id); err != nil {
			return fmt.Errorf("store: updating a user: %w", err)
		}
		u.Teams, err = memberships(ctx, tx, "user_id", id)
		return err
	})
	if err != nil {
		return User{}, err
	}
	return u, nil
}

// DeleteUsers deletes every user in ids with their keys and memberships, as LiteLLM does; all
// or none: a user that does not exist is a RefError (ErrNotFound) and nothing is deleted.
func (s *Store) DeleteUsers(ctx context.Context, ids []string) error {
	return s.deleteWithKeys(ctx, "users", "user_id", "a user", userCacheKey, ids)
}

// ListUsers returns one page of the users (oldest first), of one organisation when orgID is
// set, without their memberships.
func (s *Store) ListUsers(ctx context.Context, orgID string, offset, limit int) ([]User, error) {
	return queryRows(ctx, s.db, "listing users", scanUser, `SELECT `+userColumns+` FROM users
		WHERE (CAST($1 AS TEXT) = '' OR organization_id = $1)
		ORDER BY created_at, user_id LIMIT $2 OFFSET $3`, orgID, limit, offset)
}

func scanUser(r scanner) (User, error) {
	var (
		u                User
		meta, perm       string
		created, updated int64
	)
	if err := r.Scan(&u.UserID, &u.Email, &u.Alias, &u.Role, &u.OrganizationID, &meta, &perm, &created, &updated); err != nil {
		return User{}, err
	}
	var err error
	u.Metadata = json.RawMessage(meta)
	if u.Permission, err = parsePermission(perm); err != nil {
		return User{}, err
	}
	u.CreatedAt, u.UpdatedAt = fromMillis(created), fromMillis(updated)
	return u, nil
}
