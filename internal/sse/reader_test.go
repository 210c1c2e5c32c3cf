package sse_test

import (
	"errors"
	"io"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/mcpgw/mcpgw/internal/allocstest"
	"github.com/mcpgw/mcpgw/internal/sse"
)

// ev builds an Event tersely.
func ev(typ, data, id string, retry int) sse.Event {
	return sse.Event{Type: typ, Data: []byte(data), ID: id, Retry: retry}
}

// d builds a data-only Event.
func d(data string) sse.Event { return ev("", data, "", 0) }

// readers returns the ways each table input is fed to the Reader.
func readers(s string) map[string]func() io.Reader {
	return map[string]func() io.Reader{
		"whole":   func() io.Reader { return strings.NewReader(s) },
		"onebyte": func() io.Reader { return iotest.OneByteReader(strings.NewReader(s)) },
		"half":    func() io.Reader { return iotest.HalfReader(strings.NewReader(s)) },
		"chunk3":  func() io.Reader { return &chunkReader{strings.NewReader(s), 3} },
		"dataerr": func() io.Reader { return iotest.DataErrReader(strings.NewReader(s)) },
	}
}

func TestReaderParse(t *testing.T) {
	tests := []struct {
		name     string
		in       string
		want     []sse.Event
		lastID   string
		comments int64
	}{
		{name: "empty stream", in: ""},
		{name: "LF", in: "data: a\n\n", want: []sse.Event{d("a")}},
		{name: "CRLF", in: "data: a\r\n\r\n", want: []sse.Event{d("a")}},
		{name: "CR", in: "data: a\r\r", want: []sse.Event{d("a")}},
		{name: "CR then LF-terminated event", in: "data: a\r\rdata: b\n\n", want: []sse.Event{d("a"), d("b")}},
		{name: "LF CR is two line ends", in: "data: a\n\rdata: b\n\n", want: []sse.Event{d("a"), d("b")}},
		{name: "mixed endings", in: "data: a\r\ndata: b\rdata: c\n\r\n", want: []sse.Event{d("a\nb\nc")}},
		{name: "CRLF pairs back to back", in: "data: a\r\n\r\ndata: b\r\n\r\n", want: []sse.Event{d("a"), d("b")}},
		{name: "BOM", in: "\xef\xbb\xbfdata: a\n\n", want: []sse.Event{d("a")}},
		{name: "BOM only", in: "\xef\xbb\xbf"},
		{name: "partial BOM at EOF", in: "\xef\xbb"},
		{name: "partial BOM is part of field name", in: "\xef\xbbdata: a\n\ndata: b\n\n", want: []sse.Event{d("b")}},
		{name: "second BOM not stripped", in: "\xef\xbb\xbf\xef\xbb\xbfdata: a\n\ndata: b\n\n", want: []sse.Event{d("b")}},
		{name: "BOM mid-stream not stripped", in: "data: a\n\n\xef\xbb\xbfdata: b\n\n", want: []sse.Event{d("a")}},
		{name: "BOM then CR", in: "\xef\xbb\xbf\rdata: a\r\r", want: []sse.Event{d("a")}},
		{
			name: "comments", in: ": hello\ndata: a\n: mid\n:\n\n",
			want: []sse.Event{d("a")}, comments: 3,
		},
		{name: "comment only block", in: ": keepalive\n\n", comments: 1},
		{name: "multi-line data", in: "data: a\ndata:\ndata: b\n\n", want: []sse.Event{d("a\n\nb")}},
		{name: "data lines interleaved with other fields", in: "data: a\nevent: t\ndata: b\n\n", want: []sse.Event{ev("t", "a\nb", "", 0)}},
		{
			name: "id persistence", in: "id: 1\ndata: a\n\ndata: b\n\n",
			want: []sse.Event{ev("", "a", "1", 0), d("b")}, lastID: "1",
		},
		{
			name: "id reset by empty id", in: "id: 1\ndata: a\n\nid\ndata: b\n\n",
			want: []sse.Event{ev("", "a", "1", 0), d("b")}, lastID: "",
		},
		{
			name: "last id field wins", in: "id: 1\nid: 2\ndata: a\n\n",
			want: []sse.Event{ev("", "a", "2", 0)}, lastID: "2",
		},
		{
			name: "id with NUL ignored", in: "id: 1\n\nid: a\x00b\ndata: x\n\n",
			want: []sse.Event{d("x")}, lastID: "1",
		},
		{
			name: "id without data updates last id", in: "id: 5\n\ndata: x\n\n",
			want: []sse.Event{d("x")}, lastID: "5",
		},
		{name: "unterminated id block does not update last id", in: "id: 1\n\nid: 2\n", lastID: "1"},
		{name: "id keeps spaces after the first", in: "id:  x \ndata: a\n\n", want: []sse.Event{ev("", "a", " x ", 0)}, lastID: " x "},
		{name: "retry", in: "retry: 1000\ndata: a\n\n", want: []sse.Event{ev("", "a", "", 1000)}},
		{name: "retry zero", in: "retry: 0\ndata: a\n\n", want: []sse.Event{ev("", "a", "", 0)}},
		{name: "retry non-digit ignored", in: "retry: 10a\ndata: a\n\n", want: []sse.Event{d("a")}},
		{name: "retry negative ignored", in: "retry: -1\ndata: a\n\n", want: []sse.Event{d("a")}},
		{name: "retry two spaces ignored", in: "retry:  5\ndata: a\n\n", want: []sse.Event{d("a")}},
		{name: "retry empty ignored", in: "retry:\nretry\ndata: a\n\n", want: []sse.Event{d("a")}},
		{name: "retry invalid keeps earlier valid", in: "retry: 7\nretry: x\ndata: a\n\n", want: []sse.Event{ev("", "a", "", 7)}},
		{name: "retry saturates", in: "retry: 99999999999999999999999\ndata: a\n\n", want: []sse.Event{ev("", "a", "", math.MaxInt32)}},
		{name: "retry not carried to next event", in: "retry: 5\ndata: a\n\ndata: b\n\n", want: []sse.Event{ev("", "a", "", 5), d("b")}},
		{name: "field without colon is empty data", in: "data\n\n", want: []sse.Event{d("")}},
		{name: "spec example: empty data lines", in: "data\n\ndata\ndata\n\ndata:", want: []sse.Event{d(""), d("\n")}},
		{name: "event field without colon resets type", in: "event: t\nevent\ndata: x\n\n", want: []sse.Event{d("x")}},
		{name: "only one space stripped", in: "data:  a\n\n", want: []sse.Event{d(" a")}},
		{name: "no space", in: "data:a\n\n", want: []sse.Event{d("a")}},
		{name: "tab not stripped", in: "data:\ta\n\n", want: []sse.Event{d("\ta")}},
		{name: "trailing space kept", in: "data: a \n\n", want: []sse.Event{d("a ")}},
		{name: "event type two spaces", in: "event:  t\ndata: x\n\n", want: []sse.Event{ev(" t", "x", "", 0)}},
		{name: "colon in value", in: "data: a:b\ndata::\n\n", want: []sse.Event{d("a:b\n:")}},
		{name: "unknown fields ignored", in: "foo: bar\nData: x\ndata : y\ndata: z\n\n", want: []sse.Event{d("z")}},
		{name: "event type", in: "event: ping\ndata: x\n\n", want: []sse.Event{ev("ping", "x", "", 0)}},
		{name: "event type message kept", in: "event: message\ndata: x\n\n", want: []sse.Event{ev("message", "x", "", 0)}},
		{name: "event type not carried over", in: "event: a\ndata: 1\n\ndata: 2\n\n", want: []sse.Event{ev("a", "1", "", 0), d("2")}},
		{name: "event without data not dispatched, type reset", in: "event: e\nid: 5\n\ndata: x\n\n", want: []sse.Event{d("x")}, lastID: "5"},
		{
			name: "MCP priming event: id and empty data", in: "id: 42\ndata:\n\nid: 43\ndata: {}\n\n",
			want: []sse.Event{ev("", "", "42", 0), ev("", "{}", "43", 0)}, lastID: "43",
		},
		{name: "priming without data field", in: "id: 42\n\n", lastID: "42"},
		{name: "blank lines only", in: "\n\n\r\n\r\r"},
		{name: "EOF after data line", in: "data: a\n\ndata: b\n", want: []sse.Event{d("a")}},
		{name: "EOF mid-line", in: "data: a\n\ndata: b", want: []sse.Event{d("a")}},
		{name: "EOF after CR of CRLF", in: "data: a\r\n\r", want: []sse.Event{d("a")}},
		{name: "NUL and invalid UTF-8 pass through", in: "event: \x00\xff\ndata: \x00\xfe\n\n", want: []sse.Event{ev("\x00\xff", "\x00\xfe", "", 0)}},
		{
			name: "spec example stream",
			in:   ": test stream\n\ndata: first event\nid: 1\n\ndata:second event\nid\n\ndata:  third event\n",
			want: []sse.Event{ev("", "first event", "1", 0), d("second event")}, comments: 1,
		},
		{
			name: "JSON-RPC",
			in:   "event: message\nid: s1-1\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n",
			want: []sse.Event{ev("message", `{"jsonrpc":"2.0","id":1,"result":{}}`, "s1-1", 0)}, lastID: "s1-1",
		},
	}
	for _, tt := range tests {
		// The reference parser must agree with every expectation, too.
		if ref := refParse([]byte(tt.in)); !eventsEqual(ref.events, tt.want) || ref.lastID != tt.lastID {
			t.Errorf("%s: reference parser disagrees with table: %+v lastID %q", tt.name, ref.events, ref.lastID)
		}
		for rname, mk := range readers(tt.in) {
			t.Run(tt.name+"/"+rname, func(t *testing.T) {
				r := sse.NewReader(mk(), 0)
				got, err := readAll(r)
				if err != io.EOF {
					t.Fatalf("err = %v, want io.EOF", err)
				}
				if !eventsEqual(got, tt.want) {
					t.Errorf("events = %s, want %s", fmtEvents(got), fmtEvents(tt.want))
				}
				if r.LastEventID() != tt.lastID {
					t.Errorf("LastEventID = %q, want %q", r.LastEventID(), tt.lastID)
				}
				if r.Comments() != tt.comments {
					t.Errorf("Comments = %d, want %d", r.Comments(), tt.comments)
				}
				if _, err := r.Next(); err != io.EOF {
					t.Errorf("Next after EOF = %v, want io.EOF", err)
				}
			})
		}
	}
}

// fmtEvents renders events readably for failure messages.
func fmtEvents(evs []sse.Event) string {
	var b strings.Builder
	b.WriteByte('[')
	for i, e := range evs {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("{Type:" + strconv.Quote(e.Type) + " Data:" + strconv.Quote(string(e.Data)) + " ID:" + strconv.Quote(e.ID))
		if e.Retry != 0 {
			b.WriteString(" Retry:" + strconv.Itoa(e.Retry))
		}
		b.WriteByte('}')
	}
	b.WriteByte(']')
	return b.String()
}

func TestReaderRetryState(t *testing.T) {
	r := sse.NewReader(strings.NewReader("retry: 250\n\ndata: a\n\nretry: x\n\n"), 0)
	if _, ok := r.Retry(); ok {
		t.Fatal("Retry reported before any retry field")
	}
	ev, err := r.Next()
	if err != nil || string(ev.Data) != "a" || ev.Retry != 0 {
		t.Fatalf("Next = %+v, %v", ev, err)
	}
	if ms, ok := r.Retry(); !ok || ms != 250 {
		t.Fatalf("Retry = %d, %v; want 250, true", ms, ok)
	}
	if _, err := r.Next(); err != io.EOF {
		t.Fatalf("err = %v", err)
	}
	if ms, _ := r.Retry(); ms != 250 {
		t.Fatalf("invalid retry changed state to %d", ms)
	}
}

func TestReaderLimits(t *testing.T) {
	const max = 16
	tests := []struct {
		name   string
		in     string
		want   []sse.Event // events before the error
		wantOK bool        // stream ends in io.EOF instead of ErrEventTooLarge
	}{
		{name: "data exactly at limit", in: "data: " + strings.Repeat("x", max) + "\n\n", want: []sse.Event{d(strings.Repeat("x", max))}, wantOK: true},
		{name: "data one over limit", in: "data: " + strings.Repeat("x", max+1) + "\n\n"},
		{name: "multi-line data at limit", in: "data: 1234567\ndata: 12345678\n\n", want: []sse.Event{d("1234567\n12345678")}, wantOK: true},
		{name: "many data lines", in: "data: a\n\ndata: aa\ndata: aa\ndata: aa\ndata: aa\ndata: aa\ndata: aa\n\n", want: []sse.Event{d("a")}},
		{name: "many empty data lines", in: strings.Repeat("data\n", max+2) + "\n"},
		{name: "long line in unknown field", in: "x: " + strings.Repeat("y", max+sse.LineOverhead) + "\n\n"},
		{name: "long comment", in: ":" + strings.Repeat("y", max+sse.LineOverhead+1) + "\n\n"},
		{name: "comment at line limit ok", in: ":" + strings.Repeat("y", max+sse.LineOverhead-1) + "\n\n", wantOK: true},
		{name: "long unterminated line", in: "data: a\n\n" + strings.Repeat("y", 10*max), want: []sse.Event{d("a")}},
		{name: "limit resets per event", in: strings.Repeat("data: "+strings.Repeat("z", max)+"\n\n", 5), want: repeatEv(d(strings.Repeat("z", max)), 5), wantOK: true},
	}
	for _, tt := range tests {
		for rname, mk := range readers(tt.in) {
			t.Run(tt.name+"/"+rname, func(t *testing.T) {
				r := sse.NewReader(mk(), max)
				got, err := readAll(r)
				if tt.wantOK {
					if err != io.EOF {
						t.Fatalf("err = %v, want io.EOF", err)
					}
				} else if !errors.Is(err, sse.ErrEventTooLarge) {
					t.Fatalf("err = %v, want ErrEventTooLarge", err)
				}
				if !eventsEqual(got, tt.want) {
					t.Errorf("events = %s, want %s", fmtEvents(got), fmtEvents(tt.want))
				}
				if _, err2 := r.Next(); err2 != err {
					t.Errorf("error not sticky: %v then %v", err, err2)
				}
			})
		}
	}
}

func repeatEv(e sse.Event, n int) []sse.Event {
	out := make([]sse.Event, n)
	for i := range out {
		out[i] = e
	}
	return out
}

// endless repeats a pattern forever.
type endless struct {
	pat []byte
	off int
}

func (e *endless) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = e.pat[e.off]
		e.off = (e.off + 1) % len(e.pat)
	}
	return len(p), nil
}

// TestReaderBoundedOnEndlessInput checks that the limit stops unbounded
// input (an endless line, endless data lines) instead of buffering it.
func TestReaderBoundedOnEndlessInput(t *testing.T) {
	for _, pat := range []string{"a", "data: aaaaaaaa\n", "data\n", "data:\r\n", "data\r"} {
		src := &endless{pat: []byte(pat)}
		r := sse.NewReader(src, 1<<20)
		evs, err := readAll(r)
		if !errors.Is(err, sse.ErrEventTooLarge) || len(evs) != 0 {
			t.Errorf("%q: got %d events, err %v; want ErrEventTooLarge", pat, len(evs), err)
		}
	}
}

func TestReaderDefaultLimit(t *testing.T) {
	big := strings.Repeat("x", 100<<10) // longer than the bufio buffer
	in := "data: " + big + "\r\ndata: " + big + "\r\r"
	for rname, mk := range readers(in) {
		r := sse.NewReader(mk(), -1)
		got, err := readAll(r)
		if err != io.EOF || len(got) != 1 || string(got[0].Data) != big+"\n"+big {
			t.Errorf("%s: got %d events, err %v", rname, len(got), err)
		}
	}
}

var errBoom = errors.New("boom")

func TestReaderUnderlyingError(t *testing.T) {
	tests := []struct {
		name string
		r    io.Reader
		want []sse.Event
	}{
		{name: "immediate", r: iotest.ErrReader(errBoom)},
		{name: "after event", r: io.MultiReader(strings.NewReader("data: a\n\ndata: b"), iotest.ErrReader(errBoom)), want: []sse.Event{d("a")}},
		{name: "inside BOM", r: io.MultiReader(strings.NewReader("\xef\xbb"), iotest.ErrReader(errBoom))},
		{name: "after CR", r: io.MultiReader(strings.NewReader("data: a\r\r"), iotest.ErrReader(errBoom)), want: []sse.Event{d("a")}},
		{name: "unexpected EOF is not EOF", r: io.MultiReader(strings.NewReader("data: a\n\n"), iotest.ErrReader(io.ErrUnexpectedEOF)), want: []sse.Event{d("a")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := sse.NewReader(tt.r, 0)
			got, err := readAll(r)
			want := errBoom
			if tt.name == "unexpected EOF is not EOF" {
				want = io.ErrUnexpectedEOF
			}
			if !errors.Is(err, want) || err == want || err == io.EOF {
				t.Fatalf("err = %v, want wrapped %v", err, want)
			}
			if !strings.Contains(err.Error(), "sse") {
				t.Errorf("error lacks context: %v", err)
			}
			if !eventsEqual(got, tt.want) {
				t.Errorf("events = %s, want %s", fmtEvents(got), fmtEvents(tt.want))
			}
			if _, err2 := r.Next(); err2 != err {
				t.Errorf("error not sticky: %v then %v", err, err2)
			}
		})
	}
}

// TestReaderDoesNotReadAhead checks that Next returns as soon as an event is
// complete, in particular without waiting to see whether an LF follows a CR,
// and that the LF of a CRLF split across writes is still skipped.
func TestReaderDoesNotReadAhead(t *testing.T) {
	pr, pw := io.Pipe()
	defer pr.Close()
	r := sse.NewReader(pr, 0)
	type result struct {
		ev  sse.Event
		err error
	}
	next := func() result {
		ch := make(chan result, 1)
		go func() {
			ev, err := r.Next()
			ch <- result{ev, err}
		}()
		select {
		case res := <-ch:
			return res
		case <-time.After(10 * time.Second):
			t.Fatal("Next blocked waiting for input it does not need")
			return result{}
		}
	}
	write := func(s string) {
		go func() { _, _ = pw.Write([]byte(s)) }()
	}
	steps := []struct{ write, want string }{
		{"data: a\r\r", "a"},
		{"\ndata: b\r\n\r", "b"}, // leading LF completes the previous CRLF
		{"\ndata: c\n\n", "c"},   // ditto
	}
	for _, s := range steps {
		write(s.write)
		res := next()
		if res.err != nil || string(res.ev.Data) != s.want {
			t.Fatalf("after %q: got %+v, %v; want %q", s.write, res.ev, res.err, s.want)
		}
	}
	go func() {
		_, _ = pw.Write([]byte("id: 9\n\n"))
		pw.Close()
	}()
	res := next()
	if res.err != io.EOF {
		t.Fatalf("got %+v, %v; want EOF", res.ev, res.err)
	}
	if r.LastEventID() != "9" {
		t.Fatalf("LastEventID = %q, want 9", r.LastEventID())
	}
}

// TestReaderMatchesReference compares the Reader with the literal spec
// transcription on random streams built from SSE-relevant fragments, fed in
// random chunk sizes.
func TestReaderMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	frags := []string{
		"data", "id", "event", "retry", "Data", ":", " ", "  ", "\r", "\n", "\r\n", "\n\n", "\r\r",
		"x", "42", "\x00", "\xef\xbb\xbf", "\xff", "message", "é", "0", "99999999999999",
	}
	for i := range 5000 {
		var b strings.Builder
		if rng.IntN(4) == 0 {
			b.WriteString("\xef\xbb\xbf")
		}
		for range rng.IntN(60) {
			b.WriteString(frags[rng.IntN(len(frags))])
		}
		in := b.String()
		want := refParse([]byte(in))
		var src io.Reader = strings.NewReader(in)
		if n := rng.IntN(8); n > 0 {
			src = &chunkReader{src, n}
		}
		r := sse.NewReader(src, 0)
		got, err := readAll(r)
		if err != io.EOF || !eventsEqual(got, want.events) || r.LastEventID() != want.lastID {
			t.Fatalf("case %d %q:\n got %s lastID %q err %v\nwant %s lastID %q",
				i, in, fmtEvents(got), r.LastEventID(), err, fmtEvents(want.events), want.lastID)
		}
	}
}

func TestReaderDataIsOwnedByCaller(t *testing.T) {
	r := sse.NewReader(strings.NewReader("data: aaaa\n\ndata: bbbb\n\n"), 0)
	first, _ := r.Next()
	second, _ := r.Next()
	if string(first.Data) != "aaaa" || string(second.Data) != "bbbb" {
		t.Fatalf("data aliased: %q %q", first.Data, second.Data)
	}
}

func TestReaderAllocs(t *testing.T) {
	stream := []byte(strings.Repeat("event: message\n: c\ndata: {\"jsonrpc\":\"2.0\"}\ndata: {}\n\n", 100))
	br := bytesReader{}
	r := sse.NewReader(&br, 0)
	allocs := allocstest.Least(20, func() {
		br.reset(stream)
		for range 100 {
			if _, err := r.Next(); err != nil {
				t.Fatal(err)
			}
		}
	})
	// One allocation per event (Data); Type is cached, no ID.
	if allocs > 100 {
		t.Errorf("allocs per 100 events = %v, want <= 100", allocs)
	}
}

// bytesReader is a resettable reader that never reports EOF early.
type bytesReader struct{ b []byte }

func (r *bytesReader) reset(b []byte) { r.b = b }
func (r *bytesReader) Read(p []byte) (int, error) {
	if len(r.b) == 0 {
		return 0, io.EOF
	}
	n := copy(p, r.b)
	r.b = r.b[n:]
	return n, nil
}

// TestReaderReset: a Reset Reader forgets the last stream's ID, its
// unfinished event and its error, and leaves the events it returned alone.
func TestReaderReset(t *testing.T) {
	r := sse.NewReader(strings.NewReader("id: 7\ndata: first\n\ndata: unfinished"), 64)
	first, err := r.Next()
	if err != nil || string(first.Data) != "first" {
		t.Fatalf("Next = %+v, %v", first, err)
	}
	if _, err := r.Next(); err != io.EOF {
		t.Fatalf("second Next: %v, want EOF", err)
	}
	r.Reset(strings.NewReader("data: second\n\n"))
	if r.LastEventID() != "" {
		t.Fatalf("LastEventID after Reset = %q", r.LastEventID())
	}
	got, err := readAll(r)
	if err != io.EOF || !eventsEqual(got, []sse.Event{d("second")}) {
		t.Fatalf("after Reset: %s, %v", fmtEvents(got), err)
	}
	if string(first.Data) != "first" {
		t.Fatalf("an event returned before Reset changed: %q", first.Data)
	}
	r.Reset(strings.NewReader("data: " + strings.Repeat("x", 100) + "\n\n"))
	if _, err := r.Next(); !errors.Is(err, sse.ErrEventTooLarge) {
		t.Fatalf("limit after Reset: %v", err)
	}
}
