package observe

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"math"
	"testing"
	"time"

	"github.com/mcpgw/mcpgw/internal/allocstest"
	"github.com/mcpgw/mcpgw/internal/fault"
)

// slogLine is the line slog's JSONHandler writes for r's access record at t: what the
// AccessLog wrote through a logger before it encoded its lines itself.
func slogLine(t *testing.T, at time.Time, r *Request) string {
	t.Helper()
	var buf bytes.Buffer
	rec := slog.NewRecord(at, slog.LevelInfo, accessMsg, 0)
	rec.AddAttrs(accessAttrs(r)...)
	if err := slog.NewJSONHandler(&buf, nil).Handle(context.Background(), rec); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

func sampleRequest() *Request {
	return &Request{Method: "tools/call", Target: "fx-echo", Server: "fx", Protocol: "2026-07-28",
		Transport: TransportStreamable, Status: 200, Fault: fault.Timeout, ErrorCode: -32001,
		Caller: Caller{KeyHash: "ab12", KeyAlias: "ci", Team: "t1", TeamAlias: "Team One", User: "u1",
			EndUser: "e1", Org: "o1"},
		Start: time.Date(2026, 12, 2, 9, 30, 0, 123456789, time.FixedZone("X", 3600)), Duration: 1234567 * time.Nanosecond}
}

// The encoded line is byte for byte the line slog writes for the same record: every field,
// and fields left out when empty.
func TestAccessLineIsSlogs(t *testing.T) {
	full := sampleRequest()
	bare := &Request{Method: "initialize", Transport: TransportREST, Status: 401, Start: full.Start}
	odd := sampleRequest()
	odd.Target = "a\"b\\c\n\r\t\x00\x1f\x7f<&>é\u2028\u2029\xff\xfe😀"
	odd.Duration = 0
	for _, r := range []*Request{full, bare, odd} {
		at := r.Start.Add(r.Duration)
		got := string(appendAccessLine(nil, at, r))
		if want := slogLine(t, at, r); got != want {
			t.Errorf("line:\n got %s\nwant %s", got, want)
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(got), &m); err != nil || m["msg"] != "mcp request" {
			t.Errorf("not a JSON access line (%v): %s", err, got)
		}
	}
}

func TestAppendJSONFloatIsEncodingJSONs(t *testing.T) {
	for _, f := range []float64{0, 0.001, 1.5, 1234.567, 1e-7, 1.5e-9, 1e21, 3e300, -2.5e-8, math.SmallestNonzeroFloat64} {
		want, _ := json.Marshal(f)
		if got := appendJSONFloat(nil, f); string(got) != string(want) {
			t.Errorf("%v: got %s, want %s", f, got, want)
		}
	}
}

// FuzzAccessLine: for any names a caller can send (targets, header-borne ids) the encoded
// line is the one slog writes.
func FuzzAccessLine(f *testing.F) {
	f.Add("fx-echo", "team", "\xff\u2028\"x\\", int64(1500), 200)
	f.Fuzz(func(t *testing.T, target, team, endUser string, micros int64, status int) {
		r := sampleRequest()
		r.Target, r.Caller.Team, r.Caller.EndUser, r.Status = target, team, endUser, status
		r.Duration = time.Duration(micros) * time.Microsecond
		at := r.Start.Add(r.Duration)
		if got, want := string(appendAccessLine(nil, at, r)), slogLine(t, at, r); got != want {
			t.Fatalf("line:\n got %s\nwant %s", got, want)
		}
	})
}

// The sink over Lines writes the request's line, stamped with its end, and allocates
// nothing per request once warm.
func TestAccessLogLinesSink(t *testing.T) {
	var out bytes.Buffer
	lines := NewLines(&out, 0, time.Hour, nil)
	a := NewAccessLogLines(lines)
	r := sampleRequest()
	a.EndRequest(context.Background(), r)
	if out.Len() != 0 {
		t.Fatal("a line must wait in the buffer")
	}
	lines.Close()
	if want := slogLine(t, r.Start.Add(r.Duration), r); out.String() != want {
		t.Fatalf("got %s\nwant %s", out.String(), want)
	}
	lines = NewLines(&bytes.Buffer{}, 1<<20, time.Hour, nil)
	defer lines.Close()
	a = NewAccessLogLines(lines)
	if n := allocstest.Least(200, func() { a.EndRequest(context.Background(), r) }); n != 0 {
		t.Errorf("allocs per request = %v, want 0", n)
	}
}

func BenchmarkAccessLog(b *testing.B) {
	r := sampleRequest()
	r.Fault, r.ErrorCode = 0, 0
	ctx := context.Background()
	b.Run("slog", func(b *testing.B) {
		a := NewAccessLog(slog.New(slog.NewJSONHandler(discard{}, nil)))
		b.ReportAllocs()
		for b.Loop() {
			a.EndRequest(ctx, r)
		}
	})
	b.Run("lines", func(b *testing.B) {
		lines := NewLines(discard{}, 0, 0, nil)
		defer lines.Close()
		a := NewAccessLogLines(lines)
		b.ReportAllocs()
		for b.Loop() {
			a.EndRequest(ctx, r)
		}
	})
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }
