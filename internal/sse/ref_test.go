package sse_test

import (
	"bytes"
	"io"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/mcpgw/mcpgw/internal/sse"
)

// refResult is what the reference parser produces for a whole input.
type refResult struct {
	events []sse.Event
	lastID string // last event ID string at EOF
}

// refParse is a deliberately naive, literal transcription of the WHATWG
// "event stream interpretation" algorithm, working on the whole input at
// once, without limits. It is the oracle for differential tests.
func refParse(input []byte) refResult {
	s := string(input)
	s = strings.TrimPrefix(s, "\ufeff")
	// Split into terminated lines; an unterminated tail is not a line.
	var lines []string
	for {
		i := strings.IndexAny(s, "\r\n")
		if i < 0 {
			break
		}
		lines = append(lines, s[:i])
		if s[i] == '\r' && i+1 < len(s) && s[i+1] == '\n' {
			i++
		}
		s = s[i+1:]
	}
	var (
		res              refResult
		data, typ, idBuf string
		idSeen           bool
		retry            int
	)
	for _, line := range lines {
		if line == "" {
			// Dispatch.
			res.lastID = idBuf
			if data == "" {
				data, typ, idSeen, retry = "", "", false, 0
				continue
			}
			data = strings.TrimSuffix(data, "\n")
			ev := sse.Event{Type: typ, Data: []byte(data), Retry: retry}
			if idSeen {
				ev.ID = idBuf
			}
			res.events = append(res.events, ev)
			data, typ, idSeen, retry = "", "", false, 0
			continue
		}
		if line[0] == ':' {
			continue
		}
		name, value, found := strings.Cut(line, ":")
		if found {
			value = strings.TrimPrefix(value, " ")
		}
		switch name {
		case "event":
			typ = value
		case "data":
			data += value + "\n"
		case "id":
			if !strings.Contains(value, "\x00") {
				idBuf = value
				idSeen = true
			}
		case "retry":
			if value != "" && strings.Trim(value, "0123456789") == "" {
				n, err := strconv.ParseInt(value, 10, 64)
				if err != nil || n > math.MaxInt32 {
					n = math.MaxInt32
				}
				retry = int(n)
			}
		}
	}
	return res
}

// readAll reads events until Next fails and returns them with the error.
func readAll(r *sse.Reader) ([]sse.Event, error) {
	var evs []sse.Event
	for {
		ev, err := r.Next()
		if err != nil {
			return evs, err
		}
		evs = append(evs, ev)
	}
}

// chunkReader returns at most n bytes per Read.
type chunkReader struct {
	r io.Reader
	n int
}

func (c *chunkReader) Read(p []byte) (int, error) {
	if len(p) > c.n {
		p = p[:c.n]
	}
	return c.r.Read(p)
}

// eventsEqual compares event lists, treating nil and empty Data alike.
func eventsEqual(a, b []sse.Event) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Type != b[i].Type || a[i].ID != b[i].ID || a[i].Retry != b[i].Retry ||
			!bytes.Equal(a[i].Data, b[i].Data) {
			return false
		}
	}
	return true
}

// TestReferenceParserSpecExamples pins the oracle itself to examples from the spec.
func TestReferenceParserSpecExamples(t *testing.T) {
	got := refParse([]byte("data\n\ndata\ndata\n\ndata:"))
	want := []sse.Event{{Data: []byte("")}, {Data: []byte("\n")}}
	if !eventsEqual(got.events, want) {
		t.Fatalf("refParse = %+v, want %+v", got.events, want)
	}
}
