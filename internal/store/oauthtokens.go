package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// OAuthToken is one user's OAuth token for one upstream server, as the vault keeps it: Sealed is
// the token set encrypted by the caller (the store never sees a token in clear); ExpiresAt is
// the access token's expiry (zero for none), kept in clear for housekeeping only.
type OAuthToken struct {
	UserID    string
	Server    string
	Sealed    string
	ExpiresAt time.Time
	UpdatedAt time.Time
}

// PutOAuthToken stores t, replacing the user's earlier token for the same server. It is one
// row's upsert, so it does not take the write lock other writes serialise on.
func (s *Store) PutOAuthToken(ctx context.Context, t OAuthToken) error {
	var exp int64
	if !t.ExpiresAt.IsZero() {
		exp = t.ExpiresAt.UnixMilli()
	}
	_, err := s.db.ExecContext(ctx, `INSERT INTO upstream_oauth_tokens (user_id, server, sealed, expires_at, updated_at)
		VALUES ($1, $2, $3, $4, $5)
		ON CONFLICT (user_id, server) DO UPDATE SET sealed = $3, expires_at = $4, updated_at = $5`,
		t.UserID, t.Server, t.Sealed, exp, s.now().UnixMilli())
	if err != nil {
		return fmt.Errorf("store: storing an OAuth token: %w", err)
	}
	return nil
}

// GetOAuthToken returns the user's token for server; ErrNotFound when there is none.
func (s *Store) GetOAuthToken(ctx context.Context, userID, server string) (OAuthToken, error) {
	t := OAuthToken{UserID: userID, Server: server}
	var exp, updated int64
	err := s.db.QueryRowContext(ctx, `SELECT sealed, expires_at, updated_at FROM upstream_oauth_tokens
		WHERE user_id = $1 AND server = $2`, userID, server).Scan(&t.Sealed, &exp, &updated)
	if errors.Is(err, sql.ErrNoRows) {
		return OAuthToken{}, ErrNotFound
	}
	if err != nil {
		return OAuthToken{}, fmt.Errorf("store: reading an OAuth token: %w", err)
	}
	if exp != 0 {
		t.ExpiresAt = fromMillis(exp)
	}
	t.UpdatedAt = fromMillis(updated)
	return t, nil
}

// DeleteOAuthToken deletes the user's token for server. With sealed set it deletes the row
// only while it still holds that value (a token another replica stored meanwhile stays). It
// reports whether a row was deleted.
func (s *Store) DeleteOAuthToken(ctx context.Context, userID, server, sealed string) (bool, error) {
	res, err := s.db.ExecContext(ctx, `DELETE FROM upstream_oauth_tokens
		WHERE user_id = $1 AND server = $2 AND (CAST($3 AS TEXT) = '' OR sealed = $3)`, userID, server, sealed)
	if err != nil {
		return false, fmt.Errorf("store: deleting an OAuth token: %w", err)
	}
	n, _ := res.RowsAffected()
	return n > 0, nil
}

// deleteUserOAuthTokens deletes every upstream token of a user, in the transaction deleting it.
func deleteUserOAuthTokens(ctx context.Context, tx *tx, userID string) error {
	if _, err := tx.ExecContext(ctx, `DELETE FROM upstream_oauth_tokens WHERE user_id = $1`, userID); err != nil {
		return fmt.Errorf("store: deleting a user's OAuth tokens: %w", err)
	}
	return nil
}
