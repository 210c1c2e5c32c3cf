package handoff

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

type fakeServer struct {
	http.ResponseWriter
	cont  func()
	after []func()
}

func (f *fakeServer) ContinueAfterHandler(fn func()) bool {
	if f.cont != nil {
		return false
	}
	f.cont = fn
	return true
}

func (f *fakeServer) AfterContinuation(fn func()) bool {
	if f.cont == nil {
		return false
	}
	f.after = append(f.after, fn)
	return true
}

type wrapper struct{ http.ResponseWriter }

func (w wrapper) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// TestWithoutServer: a ResponseWriter of a server that cannot continue
// (net/http's) runs the continuation and the after-work at once.
func TestWithoutServer(t *testing.T) {
	w := wrapper{httptest.NewRecorder()}
	if Continue(w, func() {}) {
		t.Fatal("Continue on a recorder")
	}
	var ran []string
	Run(w, func() { ran = append(ran, "cont") })
	Finally(w, func() { ran = append(ran, "after") })
	if len(ran) != 2 || ran[0] != "cont" || ran[1] != "after" {
		t.Fatalf("ran %v", ran)
	}
}

// TestThroughWrappers: the server is found under wrappers; the
// continuation and after-work are left to it.
func TestThroughWrappers(t *testing.T) {
	s := &fakeServer{ResponseWriter: httptest.NewRecorder()}
	w := wrapper{wrapper{s}}
	ran := 0
	Run(w, func() { ran++ })
	Finally(w, func() { ran++ })
	if ran != 0 || s.cont == nil || len(s.after) != 1 {
		t.Fatalf("ran %d now, cont set %v, after %d", ran, s.cont != nil, len(s.after))
	}
	if Continue(w, func() {}) {
		t.Error("a second continuation was taken")
	}
}
