package store

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestOAuthTokens stores, replaces, reads and deletes per-user upstream tokens on every
// backend; a compare-and-delete spares a token stored meanwhile, and deleting the user deletes
// its tokens and no one else's.
func TestOAuthTokens(t *testing.T) {
	forEachBackend(t, func(t *testing.T, open opener) {
		ctx := context.Background()
		s := open(t, Options{})
		if _, err := s.GetOAuthToken(ctx, "u1", "gh"); !errors.Is(err, ErrNotFound) {
			t.Fatalf("missing token: %v", err)
		}
		exp := time.Now().Add(time.Hour).Truncate(time.Millisecond).UTC()
		for _, v := range []string{"first", "second"} {
			if err := s.PutOAuthToken(ctx, OAuthToken{UserID: "u1", Server: "gh", Sealed: v, ExpiresAt: exp}); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.PutOAuthToken(ctx, OAuthToken{UserID: "u2", Server: "gh", Sealed: "other"}); err != nil {
			t.Fatal(err)
		}
		got, err := s.GetOAuthToken(ctx, "u1", "gh")
		if err != nil || got.Sealed != "second" || !got.ExpiresAt.Equal(exp) {
			t.Fatalf("got %+v, %v", got, err)
		}
		if gone, err := s.DeleteOAuthToken(ctx, "u1", "gh", "first"); err != nil || gone {
			t.Fatalf("stale compare-and-delete deleted: %v %v", gone, err)
		}
		if _, err := s.CreateUser(ctx, User{UserID: "u1"}); err != nil {
			t.Fatal(err)
		}
		if err := s.DeleteUsers(ctx, []string{"u1"}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.GetOAuthToken(ctx, "u1", "gh"); !errors.Is(err, ErrNotFound) {
			t.Fatalf("a deleted user's token survived: %v", err)
		}
		if got, err := s.GetOAuthToken(ctx, "u2", "gh"); err != nil || got.Sealed != "other" || !got.ExpiresAt.IsZero() {
			t.Fatalf("another user's token: %+v, %v", got, err)
		}
		if gone, err := s.DeleteOAuthToken(ctx, "u2", "gh", ""); err != nil || !gone {
			t.Fatalf("delete: %v %v", gone, err)
		}
	})
}
