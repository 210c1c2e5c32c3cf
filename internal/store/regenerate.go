package store

import (
	"context"
	"fmt"
)

// keyName is the display name of secret: "sk-...<last 4>".
func keyName(secret string) string { return KeyPrefix + "..." + secret[len(secret)-4:] }

// Regenerate gives the key with token a new secret, in one transaction, and returns the secret
// (shown once) and the key as stored. The key keeps its alias, owners, permissions, limits,
// expiry, blocked state and created_at; its token becomes the new secret's hash, so the old
// secret stops working the moment the transaction commits (this replica forgets both cached
// lookups, other replicas are told through the store's invalidation). change, when not nil,
// then changes the key as Update does. A missing key is ErrNotFound, a key_alias another key
// has is ErrDuplicateAlias; either way nothing is written.
func (s *Store) Regenerate(ctx context.Context, token string, change func(*Key)) (string, Key, error) {
	secret := newSecret()
	newToken := Hash(secret)
	if change == nil {
		change = func(*Key) {}
	}
	var k Key
	err := s.inTx(ctx, func(tx *tx) error {
		tx.touch(keyCacheKey(token), keyCacheKey(newToken))
		res, err := tx.ExecContext(ctx, `UPDATE keys SET token = $1, key_name = $2 WHERE token = $3`,
			newToken, keyName(secret), token)
		if err != nil {
			return fmt.Errorf("store: regenerating a key: %w", err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return ErrNotFound
		}
		k, err = s.updateTx(ctx, tx, newToken, change)
		return err
	})
	if err != nil {
		return "", Key{}, err
	}
	return secret, k, nil
}
