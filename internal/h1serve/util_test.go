package h1serve

import (
	"io"
	"log"
	"sync"
)

func quietLog() *log.Logger { return log.New(io.Discard, "", 0) }

type lockedWriter struct {
	w  io.Writer
	mu *sync.Mutex
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func newLockedLog(w io.Writer, mu *sync.Mutex) *log.Logger {
	return log.New(lockedWriter{w, mu}, "", 0)
}
