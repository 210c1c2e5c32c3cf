package store

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"go.uber.org/goleak"

	"github.com/mcpgw/mcpgw/internal/store/pgtest"
)

// TestConcurrentDuplicateAliasOneWins: many writers racing on one key_alias end in exactly one
// key and ErrDuplicateAlias for every other writer.
func TestConcurrentDuplicateAliasOneWins(t *testing.T) {
	forEachBackend(t, func(t *testing.T, open opener) {
		s := open(t, Options{})
		ctx := context.Background()
		const n = 8
		errs := make(chan error, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				_, _, err := s.Generate(ctx, NewKey{Alias: "race", UserID: fmt.Sprint(i)})
				errs <- err
			})
		}
		wg.Wait()
		close(errs)
		won := 0
		for err := range errs {
			switch {
			case err == nil:
				won++
			case !errors.Is(err, ErrDuplicateAlias):
				t.Errorf("a losing writer got %v, want ErrDuplicateAlias", err)
			}
		}
		if _, total, err := s.List(ctx, ListQuery{Alias: "race", Limit: 10}); won != 1 || total != 1 || err != nil {
			t.Fatalf("%d writers won, %d keys stored (%v); want 1 and 1", won, total, err)
		}
	})
}

// TestConcurrentUpdatesLoseNothing: read-modify-write Updates racing on one key all count, so
// each saw the previous one's write.
func TestConcurrentUpdatesLoseNothing(t *testing.T) {
	forEachBackend(t, func(t *testing.T, open opener) {
		s := open(t, Options{})
		ctx := context.Background()
		_, k, err := s.Generate(ctx, NewKey{Metadata: json.RawMessage(`{"n":0}`)})
		if err != nil {
			t.Fatal(err)
		}
		const n = 10
		var wg sync.WaitGroup
		for range n {
			wg.Go(func() {
				_, err := s.Update(ctx, k.Token, func(k *Key) {
					var m struct{ N int }
					_ = json.Unmarshal(k.Metadata, &m)
					time.Sleep(5 * time.Millisecond) // widen the window a lost update needs
					k.Metadata = json.RawMessage(fmt.Sprintf(`{"n":%d}`, m.N+1))
				})
				if err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		if got, _ := s.Get(ctx, k.Token); string(got.Metadata) != fmt.Sprintf(`{"n":%d}`, n) {
			t.Fatalf("metadata after %d increments: %s", n, got.Metadata)
		}
	})
}

// TestGenerateStoresEveryField: a generated key reads back as it was given, on every backend.
func TestGenerateStoresEveryField(t *testing.T) {
	forEachBackend(t, func(t *testing.T, open opener) {
		s := open(t, Options{})
		ctx := context.Background()
		rpm, par := int64(10), int64(3)
		exp := time.Now().Add(time.Hour)
		withRefs(t, s, []string{"o"}, []string{"t"})
		_, k, err := s.Generate(ctx, NewKey{Alias: "a", UserID: "u", TeamID: "t", OrganizationID: "o",
			Metadata:   json.RawMessage(`{"x":1}`),
			Permission: Permission{MCPServers: []string{"fx"}, MCPAccessGroups: []string{"g"}, MCPToolPermissions: map[string][]string{"fx": {"echo"}}},
			Expires:    &exp, RPMLimit: &rpm, MaxParallelRequests: &par, MCPRPMLimit: map[string]int64{"fx": 5}})
		if err != nil {
			t.Fatal(err)
		}
		got, err := s.Get(ctx, k.Token)
		if err != nil {
			t.Fatal(err)
		}
		if got.Alias != "a" || got.UserID != "u" || got.TeamID != "t" || got.OrganizationID != "o" ||
			string(got.Metadata) != `{"x":1}` || got.Permission.MCPServers[0] != "fx" ||
			got.Permission.MCPAccessGroups[0] != "g" || got.Permission.MCPToolPermissions["fx"][0] != "echo" ||
			*got.RPMLimit != 10 || *got.MaxParallelRequests != 3 || got.MCPRPMLimit["fx"] != 5 ||
			!got.Expires.Equal(exp.Truncate(time.Millisecond)) || got.Blocked ||
			!got.CreatedAt.Equal(k.CreatedAt) || !got.UpdatedAt.Equal(k.UpdatedAt) {
			t.Fatalf("stored key: %+v", got)
		}
		if _, err := s.SetBlocked(ctx, k.Token, true); err != nil {
			t.Fatal(err)
		}
		if got, _ := s.Get(ctx, k.Token); !got.Blocked {
			t.Fatal("blocked is not stored")
		}
	})
}

// TestPostgresStoresOnlyTheHash: no column of the stored row holds the secret.
func TestPostgresStoresOnlyTheHash(t *testing.T) {
	s := openPostgresForTest(t, Options{})
	secret, _, err := s.Generate(context.Background(), NewKey{Alias: "a"})
	if err != nil {
		t.Fatal(err)
	}
	var row string
	if err := s.db.QueryRow(`SELECT k::text FROM keys k`).Scan(&row); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(row, secret[3:]) || !strings.Contains(row, Hash(secret)) {
		t.Fatalf("stored row %s: want the hash and not the secret", row)
	}
}

// TestReplicaSeesWritesWithinASecond: two stores on one database, with an hour-long cache: a
// block, an unblock and a delete on A are seen by B's cached lookups within 1 s.
func TestReplicaSeesWritesWithinASecond(t *testing.T) {
	url := pgtest.NewDatabase(t)
	a := openPostgresAt(t, url, Options{CacheTTL: time.Hour})
	b := openPostgresAt(t, url, Options{CacheTTL: time.Hour})
	ctx := context.Background()
	_, k, err := a.Generate(ctx, NewKey{})
	if err != nil {
		t.Fatal(err)
	}
	settle(t, b)
	if got, found, err := b.Lookup(ctx, k.Token); !found || got.Blocked || err != nil {
		t.Fatalf("B's first lookup: %v %+v %v", found, got, err)
	}
	seenWithin := func(what string, ok func(Key, bool) bool) {
		t.Helper()
		deadline := time.Now().Add(time.Second)
		for {
			got, found, err := b.Lookup(ctx, k.Token)
			if err != nil {
				t.Fatal(err)
			}
			if ok(got, found) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("B does not see the %s within 1 s", what)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	if _, err := a.SetBlocked(ctx, k.Token, true); err != nil {
		t.Fatal(err)
	}
	seenWithin("block", func(k Key, found bool) bool { return found && k.Blocked })
	if _, err := a.SetBlocked(ctx, k.Token, false); err != nil {
		t.Fatal(err)
	}
	seenWithin("unblock", func(k Key, found bool) bool { return found && !k.Blocked })
	if err := a.Delete(ctx, []string{k.Token}); err != nil {
		t.Fatal(err)
	}
	seenWithin("delete", func(_ Key, found bool) bool { return !found })
}

// TestListenerReconnectsAndClearsTheCache: when the listening connection is killed, a change
// no one was told of is still seen (the cache was cleared, not kept for its hour), the
// listener reconnects, and another replica's write is again seen through it.
func TestListenerReconnectsAndClearsTheCache(t *testing.T) {
	url := pgtest.NewDatabase(t)
	a := openPostgresAt(t, url, Options{CacheTTL: time.Hour})
	ctx := context.Background()
	_, k, _ := a.Generate(ctx, NewKey{})
	settle(t, a)
	if _, found, _ := a.Lookup(ctx, k.Token); !found {
		t.Fatal("not found")
	}
	pid := a.pg.listener.pid.Load()
	if _, err := a.db.Exec(`SELECT pg_terminate_backend($1)`, int64(pid)); err != nil {
		t.Fatal(err)
	}
	if _, err := a.db.Exec(`UPDATE keys SET blocked = TRUE WHERE token = $1`, k.Token); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for a.pg.listener.connects.Load() < 2 || a.pg.listener.pid.Load() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the listener did not reconnect within 10 s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if got, _, _ := a.Lookup(ctx, k.Token); !got.Blocked {
		t.Fatal("a lookup cached before the connection dropped is still served after the reconnect")
	}
	b := openPostgresAt(t, url, Options{})
	if _, err := b.SetBlocked(ctx, k.Token, false); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(time.Second); ; time.Sleep(5 * time.Millisecond) {
		if got, _, _ := a.Lookup(ctx, k.Token); !got.Blocked {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("after reconnecting, the listener does not forget another replica's write")
		}
	}
}

// TestCacheIsOffWhileTheListenerIsDown: while the listener cannot reconnect, every lookup
// reads the database (a change no one is told of is seen at once); once it listens again, the
// cache works again.
func TestCacheIsOffWhileTheListenerIsDown(t *testing.T) {
	a := openPostgresForTest(t, Options{CacheTTL: time.Hour})
	ctx := context.Background()
	_, k, _ := a.Generate(ctx, NewKey{})
	settle(t, a)
	var name string
	if err := a.db.QueryRow(`SELECT current_database()`).Scan(&name); err != nil {
		t.Fatal(err)
	}
	admin, err := sql.Open("pgx", os.Getenv(pgtest.EnvURL))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	allow := func(yes bool) { // the pool keeps its open connections; new ones are refused
		t.Helper()
		if _, err := admin.Exec(fmt.Sprintf(`ALTER DATABASE %s ALLOW_CONNECTIONS %t`, name, yes)); err != nil {
			t.Fatal(err)
		}
	}
	allow(false)
	if _, err := a.db.Exec(`SELECT pg_terminate_backend($1)`, int64(a.pg.listener.pid.Load())); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); a.pg.listener.pid.Load() != 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the listener did not notice its connection drop")
		}
	}
	if _, found, _ := a.Lookup(ctx, k.Token); !found {
		t.Fatal("not found")
	}
	if _, err := a.db.Exec(`UPDATE keys SET blocked = TRUE WHERE token = $1`, k.Token); err != nil {
		t.Fatal(err)
	}
	if got, _, _ := a.Lookup(ctx, k.Token); !got.Blocked {
		t.Fatal("a lookup was served from the cache while the listener was down")
	}
	allow(true)
	for deadline := time.Now().Add(10 * time.Second); a.pg.listener.pid.Load() == 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the listener did not reconnect within 10 s")
		}
	}
	settle(t, a)
	_, _, _ = a.Lookup(ctx, k.Token)
	if _, err := a.db.Exec(`UPDATE keys SET blocked = FALSE WHERE token = $1`, k.Token); err != nil {
		t.Fatal(err)
	}
	if got, _, _ := a.Lookup(ctx, k.Token); !got.Blocked {
		t.Fatal("the cache is still off after the listener reconnected")
	}
}

// TestListenerEndsOnClose: Close stops the listener's goroutine and connection.
func TestListenerEndsOnClose(t *testing.T) {
	url := pgtest.NewDatabase(t)
	before := goleak.IgnoreCurrent()
	s, err := OpenPostgres(context.Background(), url, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	_ = s.Close() // a second Close neither hangs nor panics
	goleak.VerifyNone(t, before)
}

// TestOpenPostgresErrorsHideThePassword: a URL that does not parse and a database that does
// not answer both fail with an error that does not contain the password.
func TestOpenPostgresErrorsHideThePassword(t *testing.T) {
	for _, url := range []string{
		"postgres://u:SEKRIT@127.0.0.1:notaport/db",
		"postgres://u:SEKRIT@127.0.0.1:1/db?connect_timeout=2",
		"host=127.0.0.1 port=1 user=u password=SEKRIT dbname=db connect_timeout=2",
		"postgres://u:SEKRIT@[::1/db",
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		s, err := OpenPostgres(ctx, url, Options{})
		cancel()
		if err == nil {
			_ = s.Close()
			t.Fatalf("%q opened", url)
		}
		if strings.Contains(err.Error(), "SEKRIT") || !strings.HasPrefix(err.Error(), "store: ") {
			t.Fatalf("%q: %v", url, err)
		}
	}
}

// TestNotifyPayloadsFitAndClearWhenTheyCannot: keys are deduplicated and split into JSON
// payloads under Postgres' limit; a key too long for any payload becomes one clear-all.
func TestNotifyPayloadsFitAndClearWhenTheyCannot(t *testing.T) {
	var keys []string
	for i := range 400 {
		keys = append(keys, keyCacheKey(Hash(fmt.Sprint(i))), keyCacheKey(Hash(fmt.Sprint(i))))
	}
	payloads := notifyPayloads("o1", keys)
	seen := map[string]bool{}
	for _, p := range payloads {
		if len(p) > maxNotifyPayload {
			t.Fatalf("payload of %d bytes", len(p))
		}
		origin, arr, _ := strings.Cut(p, "|")
		var got []string
		if err := json.Unmarshal([]byte(arr), &got); err != nil || origin != "o1" {
			t.Fatal(err)
		}
		for _, k := range got {
			if seen[k] {
				t.Fatalf("%s sent twice", k)
			}
			seen[k] = true
		}
	}
	if len(seen) != 400 || len(payloads) < 2 {
		t.Fatalf("%d keys in %d payloads", len(seen), len(payloads))
	}
	if got := notifyPayloads("o1", []string{"team:" + strings.Repeat("x", maxNotifyPayload)}); len(got) != 1 || got[0] != "o1|"+clearPayload {
		t.Fatalf("an oversized key: %v", got)
	}
	c := newKeyCache(10, time.Hour)
	now := time.Now()
	c.put("key:a", cacheEntry{found: true}, now)
	c.put("key:b", cacheEntry{found: true}, now)
	applyPayload(c, "me", `me|["key:a"]`)
	if _, ok := c.get("key:a", now); !ok {
		t.Fatal("the store's own notification was applied (its writes are forgotten on commit)")
	}
	applyPayload(c, "me", `other|["key:a"]`)
	if _, ok := c.get("key:a", now); ok {
		t.Fatal("a named key is still cached")
	}
	if _, ok := c.get("key:b", now); !ok {
		t.Fatal("a key not named was forgotten")
	}
	applyPayload(c, "me", "other|"+clearPayload)
	if _, ok := c.get("key:b", now); ok {
		t.Fatal("a clear-all payload kept an entry")
	}
}

// TestCacheDropsALookupThatRacedAnInvalidation: a database read begun before an invalidation
// is not cached after it, so it cannot put back the row just invalidated; off, the cache keeps
// nothing.
func TestCacheDropsALookupThatRacedAnInvalidation(t *testing.T) {
	c := newKeyCache(10, time.Hour)
	now := time.Now()
	gen := c.generation()
	c.forget("key:other") // another replica's write lands while the read is in flight
	c.put("key:a", cacheEntry{found: true, gen: gen}, now)
	if _, ok := c.get("key:a", now); ok {
		t.Fatal("a read that raced an invalidation was cached")
	}
	c.put("key:a", cacheEntry{found: true, gen: c.generation()}, now)
	if _, ok := c.get("key:a", now); !ok {
		t.Fatal("a read after the invalidation was not cached")
	}
	c.reset(true)
	c.put("key:b", cacheEntry{found: true}, now)
	if _, ok := c.get("key:a", now); ok || len(c.m) != 0 {
		t.Fatal("an off cache serves or keeps entries")
	}
	c.reset(false)
	c.put("key:b", cacheEntry{found: true}, now)
	if _, ok := c.get("key:b", now); !ok {
		t.Fatal("the cache stays off after being turned back on")
	}
}

// TestListenerRecoversFromAPanic: a panic while applying a notification is logged without its
// value, the connection is replaced (the cache cleared) and later notifications are applied.
func TestListenerRecoversFromAPanic(t *testing.T) {
	url := pgtest.NewDatabase(t)
	s := openPostgresAt(t, url, Options{CacheTTL: time.Hour}) // migrates; its db sends the notifications
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	var logs syncBuffer
	cache := newKeyCache(10, time.Hour)
	l := &listener{cfg: cfg, cache: cache, log: slog.New(slog.NewTextHandler(&logs, nil))}
	l.apply = func(p string) {
		if p == `["boom"]` {
			panic("payload sk-secret")
		}
		applyPayload(cache, "", p)
	}
	if err := l.start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer l.stop()
	notify := func(payload string) {
		t.Helper()
		if _, err := s.db.Exec(`SELECT pg_notify($1, $2)`, notifyChannel, payload); err != nil {
			t.Fatal(err)
		}
	}
	notify(`["boom"]`)
	for deadline := time.Now().Add(10 * time.Second); l.connects.Load() < 2 || l.pid.Load() == 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the listener did not reconnect after a panic")
		}
	}
	cache.put("key:a", cacheEntry{found: true}, time.Now())
	notify(`["key:a"]`)
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if _, ok := cache.get("key:a", time.Now()); !ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("a notification after the panic was not applied")
		}
	}
	if out := logs.String(); !strings.Contains(out, "recovered from a panic") || strings.Contains(out, "sk-secret") {
		t.Fatalf("log: %s", out)
	}
}

// syncBuffer is a bytes.Buffer safe for a logger and a test to share.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
