package h1serve

import (
	"io"
	"testing"
)

// failWatcher makes s start its watcher (a request on a connection with
// a descriptor), then ends its loop as a failed epoll_wait does.
func failWatcher(t *testing.T, s *Server, addr string) {
	t.Helper()
	c, br := rawConn(t, addr)
	_, _ = io.WriteString(c, "GET /pipelined HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n")
	readResp(t, br, "GET")
	s.mu.Lock()
	w := s.watch
	s.mu.Unlock()
	if w == nil {
		t.Fatal("no watcher started")
	}
	w.mu.Lock()
	w.stopped = true
	w.mu.Unlock()
	w.wake()
	<-w.done
}
