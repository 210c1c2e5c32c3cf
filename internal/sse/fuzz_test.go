package sse_test

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/mcpgw/mcpgw/internal/sse"
)

// FuzzReader checks that the Reader never panics, never returns an event
// larger than its limit, agrees with the literal spec transcription
// (refParse), reads the same events with NextShared as with Next, and that
// every event it returns survives a Writer → Reader round trip.
func FuzzReader(f *testing.F) {
	seeds := []string{
		"",
		"data: a\n\n",
		"data: a\r\n\r\n",
		"data: a\r\r",
		"data: a\r\ndata: b\rdata: c\n\r\n",
		"\xef\xbb\xbfdata: bom\n\n",
		"\xef\xbb\xef\xbb\xbf",
		": comment\ndata: x\n:\n\n",
		"id: 1\ndata: a\n\ndata: b\n\nid\ndata: c\n\n",
		"id: a\x00b\ndata: x\n\n",
		"retry: 1000\nretry: 1x\nretry:  5\nretry: 99999999999999999999\ndata: r\n\n",
		"data\n\ndata\ndata\n\ndata:",
		"data:  two spaces\nevent:  t\n\n",
		"foo: bar\nData: x\ndata : y\n\n",
		"event: e\nid: 5\n\n",
		"id: 42\ndata:\n\n",
		"data: a\n\ndata: b",
		"event: message\nid: s-1\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n",
		"data: " + strings.Repeat("x", 300) + "\n\n",
		strings.Repeat("data: aaaa\n", 100) + "\n",
		"data: a\r",
		"\r\n\r\n\n\r",
		"event: \x00\xff\ndata: \x00\n\n",
	}
	for i, s := range seeds {
		f.Add([]byte(s), uint16(i*37), uint8(i%5))
	}
	f.Add([]byte("data: 0123456789abcdef\n\n"), uint16(15), uint8(1)) // one over a 16-byte limit
	f.Fuzz(func(t *testing.T, in []byte, limit uint16, chunk uint8) {
		max := 1 + int(limit)%512
		var src io.Reader = bytes.NewReader(in)
		if chunk%8 != 0 {
			src = &chunkReader{src, int(chunk % 8)}
		}
		r := sse.NewReader(src, max)
		got, err := readAll(r)
		tooLarge := errors.Is(err, sse.ErrEventTooLarge)
		if err != io.EOF && !tooLarge {
			t.Fatalf("unexpected error %v", err)
		}
		for _, e := range got {
			if len(e.Data) > max {
				t.Fatalf("event data %d bytes, limit %d", len(e.Data), max)
			}
			if strings.ContainsAny(e.Type, "\r\n") || strings.ContainsAny(e.ID, "\r\n\x00") || e.Retry < 0 {
				t.Fatalf("invalid event returned: %+v", e)
			}
		}

		// Differential check against the spec transcription.
		ref := refParse(in)
		if tooLarge {
			if len(got) > len(ref.events) || !eventsEqual(got, ref.events[:len(got)]) {
				t.Fatalf("events before limit error differ:\n got %s\nwant prefix of %s", fmtEvents(got), fmtEvents(ref.events))
			}
		} else if !eventsEqual(got, ref.events) || r.LastEventID() != ref.lastID {
			t.Fatalf("differs from reference:\n got %s lastID %q\nwant %s lastID %q",
				fmtEvents(got), r.LastEventID(), fmtEvents(ref.events), ref.lastID)
		}

		// A Reader Reset after this stream (ended, failed or not) reads
		// the same input again exactly as a new one did.
		var again io.Reader = bytes.NewReader(in)
		if chunk%8 != 0 {
			again = &chunkReader{again, int(chunk % 8)}
		}
		r.Reset(again)
		regot, reerr := readAll(r)
		if (reerr == io.EOF) != (err == io.EOF) || errors.Is(reerr, sse.ErrEventTooLarge) != tooLarge || !eventsEqual(regot, got) || r.LastEventID() != ref.lastID && !tooLarge {
			t.Fatalf("after Reset: %s err %v, want %s err %v", fmtEvents(regot), reerr, fmtEvents(got), err)
		}

		// NextShared reads the same events as Next, each one's data good
		// until the next call (kept here by a copy taken at once).
		var shared io.Reader = bytes.NewReader(in)
		if chunk%8 != 0 {
			shared = &chunkReader{shared, int(chunk % 8)}
		}
		r.Reset(shared)
		var sgot []sse.Event
		var serr error
		for {
			e, err := r.NextShared()
			if err != nil {
				serr = err
				break
			}
			e.Data = bytes.Clone(e.Data)
			sgot = append(sgot, e)
		}
		if (serr == io.EOF) != (err == io.EOF) || errors.Is(serr, sse.ErrEventTooLarge) != tooLarge || !eventsEqual(sgot, got) {
			t.Fatalf("NextShared: %s err %v, want %s err %v", fmtEvents(sgot), serr, fmtEvents(got), err)
		}

		// Round trip through the Writer.
		var buf bytes.Buffer
		w := sse.NewWriter(&buf)
		for _, e := range got {
			if err := w.WriteEvent(e); err != nil {
				t.Fatalf("WriteEvent(%+v): %v", e, err)
			}
		}
		// Rewriting may add the optional space after ':', so a line at
		// exactly the line limit can grow by one byte; allow for it.
		back, err := readAll(sse.NewReader(&buf, max+sse.LineOverhead))
		if err != io.EOF || len(back) != len(got) {
			t.Fatalf("round trip: %d events, err %v; want %d", len(back), err, len(got))
		}
		for i := range got {
			g, b := got[i], back[i]
			if g.Type != b.Type || !bytes.Equal(g.Data, b.Data) || g.Retry != b.Retry || (g.ID != "" && g.ID != b.ID) {
				t.Fatalf("round trip event %d: got %+v, read back %+v", i, g, b)
			}
		}
	})
}
