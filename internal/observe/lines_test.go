package observe

import (
	"bytes"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// syncBuffer is a bytes.Buffer safe for the flush timer's goroutine; it counts writes.
type syncBuffer struct {
	mu     sync.Mutex
	b      bytes.Buffer
	writes int
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.writes++
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func (s *syncBuffer) Writes() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.writes
}

// Lines wait until the next would not fit, then go out in one write, in order.
func TestLinesFlushBySize(t *testing.T) {
	var out syncBuffer
	l := NewLines(&out, 10, time.Hour, nil)
	defer l.Close()
	for _, s := range []string{"aaaa\n", "bbbb\n"} {
		_, _ = l.Write([]byte(s))
	}
	if out.Writes() != 0 {
		t.Fatal("lines that fit must wait")
	}
	_, _ = l.Write([]byte("cc\n"))
	if out.String() != "aaaa\nbbbb\n" || out.Writes() != 1 {
		t.Fatalf("after overflow: %q in %d writes", out.String(), out.Writes())
	}
	l.Flush()
	if out.String() != "aaaa\nbbbb\ncc\n" {
		t.Fatalf("after Flush: %q", out.String())
	}
}

// A line waits at most the interval.
func TestLinesFlushByTime(t *testing.T) {
	var out syncBuffer
	l := NewLines(&out, 0, 20*time.Millisecond, nil)
	defer l.Close()
	_, _ = l.Write([]byte("one\n"))
	deadline := time.Now().Add(5 * time.Second)
	for out.String() != "one\n" {
		if time.Now().After(deadline) {
			t.Fatal("a line was not written within the interval")
		}
		time.Sleep(5 * time.Millisecond)
	}
	_, _ = l.Write([]byte("two\n")) // the timer is armed again
	for out.String() != "one\ntwo\n" {
		if time.Now().After(deadline) {
			t.Fatal("a line after the first flush was not written")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Close writes what waits; later lines go straight through.
func TestLinesClose(t *testing.T) {
	var out syncBuffer
	l := NewLines(&out, 0, time.Hour, nil)
	_, _ = l.Write([]byte("before\n"))
	l.Close()
	if out.String() != "before\n" {
		t.Fatalf("Close left %q", out.String())
	}
	_, _ = l.Write([]byte("after\n"))
	if out.String() != "before\nafter\n" {
		t.Fatalf("after Close: %q", out.String())
	}
}

// A line longer than the buffer goes straight through, after what was buffered.
func TestLinesLongLineGoesThroughInOrder(t *testing.T) {
	var out syncBuffer
	l := NewLines(&out, 16, time.Hour, nil)
	defer l.Close()
	_, _ = l.Write([]byte("a\n"))
	long := strings.Repeat("x", 20) + "\n"
	_, _ = l.Write([]byte(long))
	if out.String() != "a\n"+long {
		t.Fatalf("got %q", out.String())
	}
}

// Concurrent writers' lines all arrive whole, none lost or torn.
func TestLinesConcurrentWholeLines(t *testing.T) {
	var out syncBuffer
	l := NewLines(&out, 256, time.Millisecond, nil)
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for i := range 500 {
				_, _ = fmt.Fprintf(l, "writer %d line %d %s\n", w, i, strings.Repeat("z", i%40))
			}
		})
	}
	wg.Wait()
	l.Close()
	got := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(got) != 8*500 {
		t.Fatalf("%d lines, want %d", len(got), 8*500)
	}
	seen := map[string]bool{}
	for _, line := range got {
		var w, i int
		var z string
		if n, _ := fmt.Sscanf(line, "writer %d line %d %s", &w, &i, &z); n < 2 || seen[line] {
			t.Fatalf("torn or repeated line %q", line)
		}
		seen[line] = true
	}
}
