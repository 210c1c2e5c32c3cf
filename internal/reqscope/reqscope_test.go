package reqscope

import (
	"context"
	"net/http"
	"testing"
)

func TestWithWritesTheOwnScopeInPlace(t *testing.T) {
	ctx := With(context.Background(), Admission, 1)
	if got := With(ctx, Served, 2); got != ctx {
		t.Fatal("a slot of the request's own scope was not written in place")
	}
	if Value(ctx, Admission) != 1 || Value(ctx, Served) != 2 {
		t.Fatalf("values %v %v", Value(ctx, Admission), Value(ctx, Served))
	}
	if Value(context.Background(), Admission) != nil {
		t.Fatal("a context without a scope holds a value")
	}
}

func TestWithCopiesForASetSlotOrADerivedContext(t *testing.T) {
	outer := With(context.Background(), Later, "outer")
	inner := With(outer, Later, "inner")
	if inner == outer || Value(outer, Later) != "outer" || Value(inner, Later) != "inner" {
		t.Fatalf("a set slot was overwritten: outer %v inner %v", Value(outer, Later), Value(inner, Later))
	}
	derived, cancel := context.WithCancel(outer)
	defer cancel()
	d := With(derived, Usage, "d")
	if Value(outer, Usage) != nil || Value(d, Usage) != "d" || Value(d, Later) != "outer" {
		t.Fatalf("a derived context wrote the request's scope: outer %v, d %v %v", Value(outer, Usage), Value(d, Usage), Value(d, Later))
	}
}

func TestWithoutShadows(t *testing.T) {
	ctx := With(context.Background(), Later, "l")
	w := Without(ctx, Later)
	if Value(w, Later) != nil || Value(ctx, Later) != "l" {
		t.Fatalf("without: %v, the original %v", Value(w, Later), Value(ctx, Later))
	}
	if got := With(w, Later, "again"); Value(got, Later) != "again" || Value(w, Later) != nil {
		t.Fatal("a cleared slot set again changed the cleared context")
	}
	if Without(context.Background(), Later) != context.Background() {
		t.Fatal("Without made a context for nothing")
	}
}

func TestRequestCopiesOnlyForANewContext(t *testing.T) {
	r, _ := http.NewRequest(http.MethodGet, "http://x/", nil)
	r = r.WithContext(With(r.Context(), Admission, 1))
	if Request(With(r.Context(), Served, 2), r) != r {
		t.Fatal("a request was copied for its own context")
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	if r2 := Request(ctx, r); r2 == r || r2.Context() != ctx {
		t.Fatal("a request was not given its new context")
	}
}

// A context derived from the request's own before a later in-place write
// shares its scope and sees that write (unlike context.WithValue): the
// package's rule is that every write comes before any derivation. Changing
// this must be deliberate.
func TestDerivedBeforeAWriteSeesIt(t *testing.T) {
	owner := With(context.Background(), Admission, 1)
	derived, cancel := context.WithCancel(owner)
	defer cancel()
	if With(owner, Usage, "u") != owner {
		t.Fatal("the owner's empty slot was not written in place")
	}
	if Value(derived, Usage) != "u" {
		t.Fatalf("a context derived before the write sees %v", Value(derived, Usage))
	}
}
