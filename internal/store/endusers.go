package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// EndUser is one stored end user (LiteLLM's customer): the x-litellm-end-user-id a caller
// acts for.
type EndUser struct {
	UserID     string
	Alias      string
	Blocked    bool
	Metadata   json.RawMessage
	Permission Permission
	CreatedAt  time.Time
	UpdatedAt  time.Time
}

const endUserColumns = `user_id, alias, blocked, metadata, object_permission, created_at, updated_at`

// CreateEndUser stores e; a user_id in use is a RefError (ErrExists) and nothing is written.
func (s *Store) CreateEndUser(ctx context.Context, e EndUser) (EndUser, error) {
	now := s.nowMillis()
	e.CreatedAt, e.UpdatedAt, e.Metadata = now, now, json.RawMessage(metadataText(e.Metadata))
	err := s.inTx(ctx, func(tx *tx) error {
		tx.touch(endUserCacheKey(e.UserID))
		if taken, err := exists(ctx, tx, `SELECT COUNT(*) FROM end_users WHERE user_id = $1`, e.UserID); err != nil || taken {
			return errors.Join(err, boolErr(taken, refErr(ErrExists, "user_id", "end user '%s' already exists", e.UserID)))
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO end_users (`+endUserColumns+`) VALUES ($1, $2, $3, $4, $5, $6, $7)`,
			e.UserID, e.Alias, e.Blocked, string(e.Metadata), permissionText(e.Permission), now.UnixMilli(), now.UnixMilli())
		if err != nil {
			return fmt.Errorf("store: creating an end user: %w", err)
		}
		return nil
	})
	if err != nil {
		return EndUser{}, err
	}
	return e, nil
}

// GetEndUser returns the end user with id (a RefError matching ErrNotFound when none), read
// from the database.
func (s *Store) GetEndUser(ctx context.Context, id string) (EndUser, error) {
	return readEndUser(ctx, s.reads(), id, "end_user_id")
}

// readEndUser reads the end user with id on q; none is a RefError (ErrNotFound) naming field.
func readEndUser(ctx context.Context, q querier, id, field string) (EndUser, error) {
	return queryRow(ctx, q, "an end user", scanEndUser, notFound(field, "end user '%s' does not exist", id),
		`SELECT `+endUserColumns+` FROM end_users WHERE user_id = $1`, id)
}

// LookupEndUser returns the end user with id through this replica's lookup cache; found is
// false for none.
func (s *Store) LookupEndUser(ctx context.Context, id string) (EndUser, bool, error) {
	return lookupCached(ctx, s, endUserCacheKey(id), func() (EndUser, error) { return s.GetEndUser(ctx, id) })
}

// UpdateEndUser changes the end user with id by change in one transaction; a missing end user
// is a RefError (ErrNotFound) and nothing is written.
func (s *Store) UpdateEndUser(ctx context.Context, id string, change func(*EndUser)) (EndUser, error) {
	var e EndUser
	err := s.inTx(ctx, func(tx *tx) error {
		tx.touch(endUserCacheKey(id))
		var err error
		if e, err = readEndUser(ctx, tx, id, "user_id"); err != nil {
			return err
		}
		created := e.CreatedAt
		change(&e)
		e.UserID, e.CreatedAt, e.UpdatedAt = id, created, s.nowMillis()
		e.Metadata = json.RawMessage(metadataText(e.Metadata))
		_, err = tx.ExecContext(ctx, `UPDATE end_users SET alias = $1, blocked = $2, metadata = $3,
			object_permission = $4, updated_at = $5 WHERE user_id = $6`,
			e.Alias, e.Blocked, string(e.Metadata), permissionText(e.Permission), e.UpdatedAt.UnixMilli(), id)
		if err != nil {
			return fmt.Errorf("store: updating an end user: %w", err)
		}
		return nil
	})
	if err != nil {
		return EndUser{}, err
	}
	return e, nil
}

// DeleteEndUsers deletes every end user in ids, all or none: one that does not exist is a
// RefError (ErrNotFound) and nothing is deleted.
func (s *Store) DeleteEndUsers(ctx context.Context, ids []string) error {
	return s.inTx(ctx, func(tx *tx) error {
		for _, id := range ids {
			tx.touch(endUserCacheKey(id))
			if err := execOne(ctx, tx, "deleting an end user",
				notFound("user_ids", "end user '%s' does not exist (nothing was deleted)", id),
				`DELETE FROM end_users WHERE user_id = $1`, id); err != nil {
				return err
			}
		}
		return nil
	})
}

// SetEndUsersBlocked blocks or unblocks every end user in ids, all or none: one that does not
// exist is a RefError (ErrNotFound) and nothing changes.
func (s *Store) SetEndUsersBlocked(ctx context.Context, ids []string, blocked bool) error {
	now := s.nowMillis().UnixMilli()
	return s.inTx(ctx, func(tx *tx) error {
		for _, id := range ids {
			tx.touch(endUserCacheKey(id))
			if err := execOne(ctx, tx, "blocking an end user",
				notFound("user_ids", "end user '%s' does not exist (nothing was changed)", id),
				`UPDATE end_users SET blocked = $1, updated_at = $2 WHERE user_id = $3`, blocked, now, id); err != nil {
				return err
			}
		}
		return nil
	})
}

// ListEndUsers returns one page of the end users, oldest first.
func (s *Store) ListEndUsers(ctx context.Context, offset, limit int) ([]EndUser, error) {
	return queryRows(ctx, s.db, "listing end users", scanEndUser, `SELECT `+endUserColumns+` FROM end_users
		ORDER BY created_at, user_id LIMIT $1 OFFSET $2`, limit, offset)
}

func scanEndUser(r scanner) (EndUser, error) {
	var (
		e                EndUser
		meta, perm       string
		created, updated int64
	)
	if err := r.Scan(&e.UserID, &e.Alias, &e.Blocked, &meta, &perm, &created, &updated); err != nil {
		return EndUser{}, err
	}
	var err error
	e.Metadata = json.RawMessage(meta)
	if e.Permission, err = parsePermission(perm); err != nil {
		return EndUser{}, err
	}
	e.CreatedAt, e.UpdatedAt = fromMillis(created), fromMillis(updated)
	return e, nil
}
