// Package shallowtest has the helpers the stack tests of internal/shallow
// and of the held streams share; tests only.
package shallowtest

import (
	"runtime"
	"strings"
)

// Deep uses about n KB of stack.
//
//go:noinline
func Deep(n int) byte {
	var b [1024]byte
	b[n%len(b)] = byte(n)
	if n <= 1 {
		return b[0]
	}
	return Deep(n-1) + b[n%len(b)]
}

// StackInuse is the runtime's stack memory in use after two collections.
func StackInuse() int64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.StackInuse)
}

// GoroutineID is the running goroutine's number, from its stack's header.
func GoroutineID() string {
	buf := make([]byte, 64)
	buf = buf[:runtime.Stack(buf, false)]
	id, _, _ := strings.Cut(strings.TrimPrefix(string(buf), "goroutine "), " ")
	return id
}
