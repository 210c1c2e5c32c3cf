package front

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpgw/mcpgw/internal/fakemcp"
	"github.com/mcpgw/mcpgw/internal/mcp"
)

// slowTombs is a Tombstones whose calls of one kind for one id wait until released, as
// a shared store on a slow network would.
type slowTombs struct {
	*MemoryTombstones
	mu      sync.Mutex
	slow    string // the id whose calls named call wait ("" for none)
	call    string
	entered chan string
	release chan struct{}
	once    sync.Once
}

func newSlowTombs() *slowTombs {
	return &slowTombs{MemoryTombstones: NewMemoryTombstones(100), entered: make(chan string, 4), release: make(chan struct{})}
}

func (s *slowTombs) wait(ctx context.Context, id, call string) {
	s.mu.Lock()
	slow := s.slow == id && s.call == call
	s.mu.Unlock()
	if !slow {
		return
	}
	s.entered <- call
	select {
	case <-s.release:
	case <-ctx.Done():
	}
}

func (s *slowTombs) Bury(ctx context.Context, id string, until time.Time) error {
	s.wait(ctx, id, "Bury")
	return s.MemoryTombstones.Bury(ctx, id, until)
}

func (s *slowTombs) Buried(ctx context.Context, id string) (bool, error) {
	s.wait(ctx, id, "Buried")
	return s.MemoryTombstones.Buried(ctx, id)
}

func (s *slowTombs) slowDown(id, call string) {
	s.mu.Lock()
	s.slow, s.call = id, call
	s.mu.Unlock()
}

func (s *slowTombs) unblock() { s.once.Do(func() { close(s.release) }) }

// tryPing sends a ping on a legacy session, giving up after d.
func tryPing(base, sid string, d time.Duration) (int, error) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/mcp",
		strings.NewReader(fmt.Sprintf(`{"jsonrpc":"2.0","id":2,"method":%q,"params":{}}`, mcp.MethodPing)))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+testKey)
	req.Header.Set(mcp.HeaderSessionID, sid)
	req.Header.Set(mcp.HeaderProtocolVersion, mcp.V20251125)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}

// While the tombstones take their time over one session (asked whether it
// ended, or told that its caller deleted it), the session lock is free:
// another session's request is answered meanwhile. A request on the session
// whose DELETE is still being stored is refused, as once it is stored.
func TestSlowTombstonesDoNotHoldOtherSessions(t *testing.T) {
	for _, call := range []string{"Buried", "Bury"} {
		t.Run(call, func(t *testing.T) {
			tombs := newSlowTombs()
			t.Cleanup(tombs.unblock) // before the front closes (cleanups run last first)
			up := fakemcp.New(t, fakemcp.Opts{Legacy: true})
			f := newTestFront(t, frontSpec{ups: []upSpec{{name: "fs", fake: up}},
				cfg: MCPConfig{Sessions: SessionConfig{Tombstones: tombs}}})
			slow, other := initLegacy(t, f.url, testKey), initLegacy(t, f.url, testKey)
			for _, sid := range []string{slow, other} {
				if st := ping(t, f.url, testKey, sid); st != http.StatusOK {
					t.Fatalf("ping: %d", st)
				}
			}
			tombs.slowDown(slow, call)
			done := make(chan int, 1)
			go func() {
				if call == "Buried" {
					st, _ := tryPing(f.url, slow, 10*time.Second)
					done <- st
					return
				}
				req, _ := http.NewRequest(http.MethodDelete, f.url+"/mcp", nil)
				req.Header.Set("Authorization", "Bearer "+testKey)
				req.Header.Set(mcp.HeaderSessionID, slow)
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					done <- 0
					return
				}
				resp.Body.Close()
				done <- resp.StatusCode
			}()
			select {
			case got := <-tombs.entered:
				if got != call {
					t.Fatalf("tombstones asked %s first, want %s", got, call)
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("the tombstones were never asked %s", call)
			}
			st, err := tryPing(f.url, other, 3*time.Second)
			if err != nil || st != http.StatusOK {
				tombs.unblock()
				t.Fatalf("another session's ping while the tombstones wait: %d %v", st, err)
			}
			if call == "Bury" {
				tombs.slowDown("", "")
				if st, err := tryPing(f.url, slow, 3*time.Second); err != nil || st != http.StatusNotFound {
					tombs.unblock()
					t.Fatalf("ping on the session being deleted: %d %v, want 404", st, err)
				}
			}
			tombs.unblock()
			if st := <-done; st != http.StatusOK {
				t.Fatalf("the slow %s request answered %d", call, st)
			}
			want := http.StatusOK
			if call == "Bury" {
				want = http.StatusNotFound
			}
			if st := ping(t, f.url, testKey, slow); st != want {
				t.Fatalf("after the tombstones answered, the session answered %d, want %d", st, want)
			}
		})
	}
}
