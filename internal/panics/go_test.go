package panics

import (
	"bytes"
	"log/slog"
	"strings"
	"sync"
	"testing"
)

// TestGoSafeRecovers: a panic in a goroutine started with Go is logged at
// ERROR, without the panic's value (it may hold arguments or tokens), and
// the process goes on.
func TestGoSafeRecovers(t *testing.T) {
	var buf bytes.Buffer
	var mu sync.Mutex
	log := slog.New(slog.NewJSONHandler(&lockedWriter{w: &buf, mu: &mu}, nil))
	done := make(chan struct{})
	Go(log, "test work", func() { panic("token sk-secret-value") }, func() { close(done) })
	<-done
	mu.Lock()
	out := buf.String()
	mu.Unlock()
	if !strings.Contains(out, `"level":"ERROR"`) || !strings.Contains(out, "test work") {
		t.Fatalf("log = %s, want an ERROR naming the work", out)
	}
	if strings.Contains(out, "sk-secret-value") {
		t.Fatalf("log leaks the panic value: %s", out)
	}
}

type lockedWriter struct {
	w  *bytes.Buffer
	mu *sync.Mutex
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
