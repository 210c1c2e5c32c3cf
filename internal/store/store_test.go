package store

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// open opens a fresh SQLite store; tests on every backend get theirs from forEachBackend.
func open(t *testing.T, opts Options) *Store { return openSQLiteForTest(t, opts) }

func TestGenerateStoresOnlyTheHash(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	s, err := OpenSQLite(ctx, dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	rpm := int64(10)
	exp := time.Now().Add(time.Hour)
	if _, err := s.CreateTeam(ctx, Team{TeamID: "t"}); err != nil {
		t.Fatal(err)
	}
	secret, k, err := s.Generate(ctx, NewKey{Alias: "a", UserID: "u", TeamID: "t", Metadata: json.RawMessage(`{"x":1}`),
		Permission: Permission{MCPServers: []string{"fx"}, MCPToolPermissions: map[string][]string{"fx": {"echo"}}},
		Expires:    &exp, RPMLimit: &rpm, MCPRPMLimit: map[string]int64{"fx": 5}})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(secret, "sk-") || len(secret) != 3+43 {
		t.Fatalf("secret %q: want sk- and 43 base64url characters", secret)
	}
	if k.Token != Hash(secret) || k.KeyName != "sk-..."+secret[len(secret)-4:] {
		t.Fatalf("token/key_name: %+v", k)
	}
	got, err := s.Get(ctx, k.Token)
	if err != nil {
		t.Fatal(err)
	}
	if got.Alias != "a" || got.UserID != "u" || got.TeamID != "t" || string(got.Metadata) != `{"x":1}` ||
		got.Permission.MCPServers[0] != "fx" || got.Permission.MCPToolPermissions["fx"][0] != "echo" ||
		*got.RPMLimit != 10 || got.MaxParallelRequests != nil || got.MCPRPMLimit["fx"] != 5 ||
		!got.Expires.Equal(exp.Truncate(time.Millisecond)) || got.Blocked {
		t.Fatalf("stored key: %+v", got)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(dir, FileName))
	if err != nil {
		t.Fatal(err)
	}
	wal, _ := os.ReadFile(filepath.Join(dir, FileName+"-wal"))
	if strings.Contains(string(raw)+string(wal), secret[3:]) {
		t.Fatal("the secret is in the database file")
	}
	// Reopening applies no migration twice and keeps the key.
	s2, err := OpenSQLite(ctx, dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if _, err := s2.Get(ctx, k.Token); err != nil {
		t.Fatal(err)
	}
}

func TestDuplicateAliasWritesNothing(t *testing.T) {
	forEachBackend(t, func(t *testing.T, open opener) {
		s := open(t, Options{})
		ctx := context.Background()
		if _, _, err := s.Generate(ctx, NewKey{Alias: "dup"}); err != nil {
			t.Fatal(err)
		}
		_, _, err := s.Generate(ctx, NewKey{Alias: "dup", UserID: "second"})
		if !errors.Is(err, ErrDuplicateAlias) {
			t.Fatalf("err = %v, want ErrDuplicateAlias", err)
		}
		var n int
		if err := s.db.QueryRow(`SELECT COUNT(*) FROM keys`).Scan(&n); err != nil || n != 1 {
			t.Fatalf("rows = %d (%v), want 1", n, err)
		}
		// Keys without an alias do not collide with each other.
		for range 2 {
			if _, _, err := s.Generate(ctx, NewKey{}); err != nil {
				t.Fatal(err)
			}
		}
	})
}

func TestDeleteIsAllOrNothing(t *testing.T) {
	forEachBackend(t, func(t *testing.T, open opener) {
		s := open(t, Options{})
		ctx := context.Background()
		_, a, _ := s.Generate(ctx, NewKey{})
		_, b, _ := s.Generate(ctx, NewKey{})
		err := s.Delete(ctx, []string{a.Token, Hash("sk-missing")})
		if !errors.Is(err, ErrNotFound) {
			t.Fatalf("err = %v, want ErrNotFound", err)
		}
		if _, err := s.Get(ctx, a.Token); err != nil {
			t.Fatalf("a was deleted by a failed delete: %v", err)
		}
		if err := s.Delete(ctx, []string{a.Token, b.Token}); err != nil {
			t.Fatal(err)
		}
		for _, tok := range []string{a.Token, b.Token} {
			if _, err := s.Get(ctx, tok); !errors.Is(err, ErrNotFound) {
				t.Fatalf("Get after delete: %v", err)
			}
		}
	})
}

func TestLookupCacheIsForgottenOnOwnWrites(t *testing.T) {
	forEachBackend(t, func(t *testing.T, open opener) {
		s := open(t, Options{CacheTTL: time.Hour})
		ctx := context.Background()
		secret, k, _ := s.Generate(ctx, NewKey{})
		got, found, err := s.Lookup(ctx, Hash(secret))
		if err != nil || !found || got.Blocked {
			t.Fatalf("lookup: %v %v %+v", err, found, got)
		}
		if _, err := s.SetBlocked(ctx, k.Token, true); err != nil {
			t.Fatal(err)
		}
		if got, _, _ := s.Lookup(ctx, k.Token); !got.Blocked {
			t.Fatal("a blocked key is still served from the cache")
		}
		if _, err := s.SetBlocked(ctx, k.Token, false); err != nil {
			t.Fatal(err)
		}
		if got, _, _ := s.Lookup(ctx, k.Token); got.Blocked {
			t.Fatal("an unblocked key is still blocked in the cache")
		}
		if err := s.Delete(ctx, []string{k.Token}); err != nil {
			t.Fatal(err)
		}
		if _, found, _ := s.Lookup(ctx, k.Token); found {
			t.Fatal("a deleted key is still found")
		}
		if _, err := s.SetBlocked(ctx, k.Token, true); !errors.Is(err, ErrNotFound) {
			t.Fatalf("block of a deleted key: %v", err)
		}
	})
}

func TestLookupCacheExpiresAndIsBounded(t *testing.T) {
	forEachBackend(t, func(t *testing.T, open opener) {
		s := open(t, Options{CacheSize: 3})
		ctx := context.Background()
		now := time.Now()
		s.now = func() time.Time { return now }
		_, k, _ := s.Generate(ctx, NewKey{})
		settle(t, s) // its own notification, once applied, does not forget the lookup below
		if _, found, _ := s.Lookup(ctx, k.Token); !found {
			t.Fatal("not found")
		}
		// A write that notifies no one (here: straight to the database) is seen once the TTL passed.
		if _, err := s.db.Exec(`UPDATE keys SET blocked = TRUE WHERE token = $1`, k.Token); err != nil {
			t.Fatal(err)
		}
		if got, _, _ := s.Lookup(ctx, k.Token); got.Blocked {
			t.Fatal("the cached lookup should still be used within the TTL")
		}
		now = now.Add(DefaultCacheTTL)
		if got, _, _ := s.Lookup(ctx, k.Token); !got.Blocked {
			t.Fatal("the change is not seen after the TTL")
		}
		for i := range 10 {
			_, _, _ = s.Lookup(ctx, Hash("sk-unknown-"+string(rune('a'+i))))
		}
		if n := len(s.cache.m); n > 3 {
			t.Fatalf("cache holds %d entries, bound 3", n)
		}
	})
}

func TestUnwritableDirFails(t *testing.T) {
	_, err := OpenSQLite(context.Background(), filepath.Join(t.TempDir(), "missing", "deeper"), Options{})
	if err == nil {
		t.Fatal("opened a database in a directory that does not exist")
	}
}

// TestSchemaRefusesADuplicateAlias: the UNIQUE constraint, not only the check before the write,
// keeps aliases unique, and its failure is ErrDuplicateAlias.
func TestSchemaRefusesADuplicateAlias(t *testing.T) {
	forEachBackend(t, func(t *testing.T, open opener) {
		s := open(t, Options{})
		ctx := context.Background()
		if _, _, err := s.Generate(ctx, NewKey{Alias: "x"}); err != nil {
			t.Fatal(err)
		}
		_, err := s.db.Exec(`INSERT INTO keys (token, key_name, key_alias, created_at, updated_at) VALUES ('t', 'n', 'x', 0, 0)`)
		if err == nil || !errors.Is(uniqueAlias(err), ErrDuplicateAlias) {
			t.Fatalf("direct insert of a taken alias: %v", err)
		}
	})
}

// TestOpenSQLiteEscapesThePath: a data dir whose name holds '#', '?' or '%' opens the
// database inside it, not a file named by the part of the path before that character.
func TestOpenSQLiteEscapesThePath(t *testing.T) {
	base := t.TempDir()
	ctx := context.Background()
	for _, name := range []string{"a#b", "c?d", "e%20f"} {
		dir := filepath.Join(base, name)
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		s, err := OpenSQLite(ctx, dir, Options{})
		if err != nil {
			t.Fatal(err)
		}
		_ = s.Close()
		if _, err := os.Stat(filepath.Join(dir, FileName)); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	entries, _ := os.ReadDir(base)
	if len(entries) != 3 {
		t.Fatalf("files beside the data dirs: %v", entries)
	}
}

// NewID is a version-4 UUID in its canonical form, different each time.
func TestNewID(t *testing.T) {
	re := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	a, b := NewID(), NewID()
	if !re.MatchString(a) || !re.MatchString(b) || a == b {
		t.Fatalf("NewID gave %q and %q", a, b)
	}
}
