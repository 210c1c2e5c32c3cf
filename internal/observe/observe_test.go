package observe_test

import (
	"context"
	"testing"
	"unicode/utf8"

	"github.com/mcpgw/mcpgw/internal/allocstest"
	"github.com/mcpgw/mcpgw/internal/fault"
	"github.com/mcpgw/mcpgw/internal/observe"
)

type ctxKey struct{}

// recorder notes what it is given, tags the context and sets Cost.
type recorder struct {
	name  string
	log   *[]string
	cost  float64
	calls []observe.Call
}

func (r *recorder) StartRequest(ctx context.Context, _ *observe.Request) context.Context {
	*r.log = append(*r.log, r.name+" start")
	return context.WithValue(ctx, ctxKey{}, r.name)
}

func (r *recorder) EndRequest(ctx context.Context, req *observe.Request) {
	*r.log = append(*r.log, r.name+" end "+ctx.Value(ctxKey{}).(string))
	if r.cost != 0 {
		req.Cost = r.cost
	} else if req.Cost == 0.25 {
		*r.log = append(*r.log, "cost seen")
	}
}

func (r *recorder) StartCall(ctx context.Context, _ *observe.Call) context.Context { return ctx }

func (r *recorder) EndCall(_ context.Context, c *observe.Call) { r.calls = append(r.calls, *c) }

func TestNilObserverDoesNothing(t *testing.T) {
	var o *observe.Observer
	if o.Enabled() || observe.New() != nil || observe.New(nil) != nil {
		t.Fatal("an observer without sinks must be nil and disabled")
	}
	ctx := context.Background()
	got, span := o.Request(ctx, &observe.Request{})
	if got != ctx || span.Record() != nil {
		t.Fatal("a nil observer must not derive a context")
	}
	span.End()
	if n := allocstest.Least(100, func() {
		_, s := o.Request(ctx, nil)
		s.End()
		_, c := o.Call(ctx, nil)
		c.End()
		observe.Served(ctx, "x")
	}); n != 0 {
		t.Fatalf("allocs when off = %v, want 0", n)
	}
}

func TestSinksRunInOrderOnceWithTheirContext(t *testing.T) {
	var log []string
	first := &recorder{name: "spend", log: &log, cost: 0.25}
	second := &recorder{name: "metrics", log: &log}
	o := observe.New(first, second)
	r := &observe.Request{Method: "tools/call"}
	ctx, span := o.Request(context.Background(), r)
	if observe.RequestFrom(ctx) != r {
		t.Fatal("the context must carry the record")
	}
	observe.Served(ctx, "github")
	span.End()
	span.End() // a second End is ignored
	want := []string{"spend start", "metrics start", "spend end metrics", "metrics end metrics", "cost seen"}
	if len(log) != len(want) {
		t.Fatalf("log = %q, want %q", log, want)
	}
	for i := range want {
		if log[i] != want[i] {
			t.Fatalf("log = %q, want %q", log, want)
		}
	}
	if r.Cost != 0.25 || r.Server != "github" || r.Duration <= 0 && r.Start.IsZero() {
		t.Fatalf("record = %+v", r)
	}
}

func TestCallRecordsReachSinks(t *testing.T) {
	var log []string
	rec := &recorder{name: "m", log: &log}
	o := observe.New(rec)
	_, span := o.Call(context.Background(), &observe.Call{Server: "s", Method: "tools/call", Fault: fault.Timeout})
	span.End()
	if len(rec.calls) != 1 || rec.calls[0].ErrorType() != "timeout" || rec.calls[0].Server != "s" {
		t.Fatalf("calls = %+v", rec.calls)
	}
}

func TestErrorType(t *testing.T) {
	for _, tc := range []struct {
		r    observe.Request
		want string
	}{
		{observe.Request{Status: 200}, ""},
		{observe.Request{Status: 200, Fault: fault.LimitExceeded}, "limit_exceeded"},
		{observe.Request{Status: 400, ErrorCode: -32602}, "-32602"},
		{observe.Request{Status: 401}, "401"},
		{observe.Request{Status: 200, InBandError: true}, "tool_error"},
	} {
		if got := tc.r.ErrorType(); got != tc.want || tc.r.Failed() != (tc.want != "") {
			t.Errorf("%+v: ErrorType = %q, Failed = %v; want %q", tc.r, got, tc.r.Failed(), tc.want)
		}
	}
}

// Clip keeps what fits, cuts at a character boundary and replaces bad bytes.
func TestClip(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"sea", "sea"},
		{"search", "sea"},
		{"ab" + "é", "ab"}, // "é" would straddle the 3-byte limit
		{"\xffb", "\uFFFD"},
	} {
		if got := observe.Clip(c.in, 3); got != c.want || !utf8.ValidString(got) {
			t.Errorf("Clip(%q, 3) = %q, want %q", c.in, got, c.want)
		}
	}
}
