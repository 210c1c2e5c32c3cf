package h1serve

import (
	"io"
	"net"
	"net/http"
	"testing"
	"time"
)

// watcherOf returns s's watcher, which a request on a connection with a
// descriptor started.
func watcherOf(t *testing.T, s *Server) *watcher {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.watch == nil {
		t.Fatal("no watcher started")
	}
	return s.watch
}

// failWatcher makes s start its watcher (a request on a connection with
// a descriptor), then ends its loop as a failed epoll_wait does.
func failWatcher(t *testing.T, s *Server, addr string) {
	t.Helper()
	c, br := rawConn(t, addr)
	_, _ = io.WriteString(c, "GET /pipelined HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n")
	readResp(t, br, "GET")
	w := watcherOf(t, s)
	w.mu.Lock()
	w.stopped = true
	w.mu.Unlock()
	w.wake()
	<-w.done
}

// TestWatchKeysPast32Bits: registrations are named by 64-bit keys in the
// watcher's events, so past 2^32 registrations each client leaving still
// ends its own request, and only that one: a key cut to 32 bits would
// name the watcher's eventfd (0) or another connection.
func TestWatchKeysPast32Bits(t *testing.T) {
	ended := make(chan string, 4)
	s := &Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/hold" {
			<-r.Context().Done()
			ended <- r.URL.RawQuery
		}
	})}
	addr := serve(t, s, nil)
	c, br := rawConn(t, addr)
	_, _ = io.WriteString(c, "GET /start HTTP/1.1\r\nHost: a\r\n\r\n")
	readResp(t, br, "GET") // the watcher runs from now on
	w := watcherOf(t, s)
	w.mu.Lock()
	w.lastReg = 1<<32 - 1 // the next keys are 1<<32 (0 in 32 bits) and 1<<32 + 1 (1)
	w.mu.Unlock()
	hold := func(name string, regs int) net.Conn {
		c, _ := rawConn(t, addr)
		_, _ = io.WriteString(c, "GET /hold?"+name+" HTTP/1.1\r\nHost: a\r\n\r\n")
		for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
			w.mu.Lock()
			n := len(w.regs)
			w.mu.Unlock()
			if n == regs {
				return c
			}
			if time.Now().After(deadline) {
				t.Fatalf("request %s was not registered", name)
			}
		}
	}
	b := hold("b", 1)
	cc := hold("c", 2)
	for _, step := range []struct {
		conn net.Conn
		name string
	}{{cc, "c"}, {b, "b"}} {
		step.conn.Close()
		select {
		case got := <-ended:
			if got != step.name {
				t.Fatalf("closing %s ended request %s", step.name, got)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("closing %s ended no request", step.name)
		}
	}
}
