package front

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/mcpgw/mcpgw/internal/fakemcp"
	"github.com/mcpgw/mcpgw/internal/mcp"
)

// sharedTombs is a LocalTombstones that records which ids were buried for
// every replica and which here only.
type sharedTombs struct {
	*MemoryTombstones
	mu         sync.Mutex
	everywhere map[string]bool
	here       map[string]bool
}

func newSharedTombs() *sharedTombs {
	return &sharedTombs{MemoryTombstones: NewMemoryTombstones(100), everywhere: map[string]bool{}, here: map[string]bool{}}
}

func (s *sharedTombs) Bury(ctx context.Context, id string, until time.Time) error {
	s.mu.Lock()
	s.everywhere[id] = true
	s.mu.Unlock()
	return s.MemoryTombstones.Bury(ctx, id, until)
}

func (s *sharedTombs) BuryHere(ctx context.Context, id string, until time.Time) error {
	s.mu.Lock()
	s.here[id] = true
	s.mu.Unlock()
	return s.MemoryTombstones.Bury(ctx, id, until)
}

func (s *sharedTombs) buried(id string) (everywhere, here bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.everywhere[id], s.here[id]
}

// A session DELETEd is buried for every replica; one this replica ended for
// reasons of its own (evicted to make room, idle here) only here, since
// another replica may be serving it; either way it is 404 here.
func TestSessionsEndedForLocalReasonsAreBuriedHereOnly(t *testing.T) {
	tombs := newSharedTombs()
	up := fakemcp.New(t, fakemcp.Opts{Legacy: true})
	f := newTestFront(t, frontSpec{ups: []upSpec{{name: "fs", fake: up}},
		cfg: MCPConfig{Sessions: SessionConfig{Tombstones: tombs, MaxLive: 1, IdleTimeout: 300 * time.Millisecond}}})

	evicted := initLegacy(t, f.url, testKey)
	if st := ping(t, f.url, testKey, evicted); st != http.StatusOK {
		t.Fatalf("ping: %d", st)
	}
	deleted := initLegacy(t, f.url, testKey)
	if st := ping(t, f.url, testKey, deleted); st != http.StatusOK { // evicts the first
		t.Fatalf("ping: %d", st)
	}
	if st := ping(t, f.url, testKey, evicted); st != http.StatusNotFound {
		t.Fatalf("evicted session answered %d here, want 404", st)
	}
	if everywhere, here := tombs.buried(evicted); everywhere || !here {
		t.Fatalf("evicted session buried everywhere=%v here=%v; want here only", everywhere, here)
	}

	req, _ := http.NewRequest(http.MethodDelete, f.url+"/mcp", nil)
	req.Header.Set("Authorization", "Bearer "+testKey)
	req.Header.Set(mcp.HeaderSessionID, deleted)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("DELETE: %v %v", resp, err)
	}
	resp.Body.Close()
	if everywhere, _ := tombs.buried(deleted); !everywhere {
		t.Fatal("deleted session not buried for every replica")
	}

	idle := initLegacy(t, f.url, testKey)
	if st := ping(t, f.url, testKey, idle); st != http.StatusOK {
		t.Fatalf("ping: %d", st)
	}
	if !eventually(5*time.Second, func() bool { _, here := tombs.buried(idle); return here }) {
		t.Fatal("idle session never swept")
	}
	if everywhere, _ := tombs.buried(idle); everywhere {
		t.Fatal("session idle here buried for every replica")
	}
	if st := ping(t, f.url, testKey, idle); st != http.StatusNotFound {
		t.Fatalf("session swept here answered %d here, want 404", st)
	}
}
