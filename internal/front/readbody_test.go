package front

import (
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// TestReadAllSized checks that a body read for its announced length comes
// back whole, in a buffer of that length, and that a body shorter or longer
// than announced is handled as io.ReadAll would.
func TestReadAllSized(t *testing.T) {
	body := strings.Repeat("x", 300)
	cases := []struct {
		name    string
		r       io.Reader
		n       int64
		want    string
		wantCap int
		wantErr bool
	}{
		{"exact", iotest.OneByteReader(strings.NewReader(body)), 300, body, 300, false},
		{"longer than announced", strings.NewReader(body + "yz"), 300, body + "yz", -1, false},
		{"shorter than announced", strings.NewReader(body[:10]), 300, "", -1, true},
		{"unknown length", strings.NewReader(body), -1, body, -1, false},
		{"over the sized bound", strings.NewReader(body), maxSizedBody + 1, body, -1, false},
		{"read error", iotest.ErrReader(errors.New("boom")), 300, "", -1, true},
	}
	for _, c := range cases {
		got, err := readAllSized(c.r, c.n)
		if (err != nil) != c.wantErr {
			t.Errorf("%s: err %v", c.name, err)
			continue
		}
		if c.wantErr {
			continue
		}
		if string(got) != c.want {
			t.Errorf("%s: got %d bytes, want %d", c.name, len(got), len(c.want))
		}
		if c.wantCap >= 0 && cap(got) != c.wantCap {
			t.Errorf("%s: cap %d, want %d", c.name, cap(got), c.wantCap)
		}
	}
}
