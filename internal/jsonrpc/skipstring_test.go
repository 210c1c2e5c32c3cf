package jsonrpc

import (
	"testing"

	"github.com/mcpgw/mcpgw/internal/allocstest"
)

// skipStringRef is the byte-at-a-time scan skipString replaced: each
// backslash takes the byte after it along.
func skipStringRef(data []byte, i int) int {
	for j := i + 1; j < len(data); j++ {
		switch data[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return len(data)
}

func TestSkipStringEscapes(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int
	}{
		{`"abc"`, 5},
		{`"a\"b"x`, 6},
		{`"a\\"x`, 5},
		{`"a\\\"b"`, 8},
		{`"\\\\"`, 6},
		{`"unterminated`, 13},
		{`"ends in backslash\"`, 20},
		{`""`, 2},
		{`"\u0022"`, 8},
	} {
		if got := skipString([]byte(tc.in), 0); got != tc.want {
			t.Errorf("skipString(%q) = %d, want %d", tc.in, got, tc.want)
		}
	}
}

// FuzzSkipString: the quote-to-quote scan ends every string where the byte
// loop does, from any start, on any bytes.
func FuzzSkipString(f *testing.F) {
	for _, s := range []string{`"abc"`, `"a\"b"`, `"a\\"b"`, `\"\\\"`, `x"\\\\\"\"`, `"\u0022\\"`, `"`, ``} {
		f.Add([]byte(s), uint8(0))
	}
	f.Fuzz(func(t *testing.T, data []byte, start uint8) {
		i := int(start)
		if i >= len(data) {
			i = 0
		}
		if got, want := skipString(data, i), skipStringRef(data, i); got != want {
			t.Fatalf("skipString(%q, %d) = %d, want %d", data, i, got, want)
		}
	})
}

// StringMemberIs agrees with StringMember's string (absent and non-string
// members read as ""), and compares an unescaped member without allocating.
func TestStringMemberIs(t *testing.T) {
	objs := []string{`{"name":"fx-a"}`, `{"name":"fx\u002da"}`, `{"name":"fx\\a"}`, `{"name":1}`, `{}`,
		`{"name":""}`, `[1]`, ``, `{"other":"fx-a","name":"b"}`,
		`{"name":"a","name":"b"}`, `{"name":"\/x"}`, `{ "name" : "x" }`, `{"n\u0061me":"x"}`}
	for _, o := range objs {
		for _, want := range []string{"fx-a", "", "b", `fx\a`, "1", "a", "/x", "x"} {
			got, _ := StringMember([]byte(o), "name")
			if is := StringMemberIs([]byte(o), "name", want); is != (got == want) {
				t.Errorf("StringMemberIs(%s, %q) = %v, StringMember gives %q", o, want, is, got)
			}
		}
	}
	obj := []byte(`{"name":"fx-test_simple_text","arguments":{}}`)
	if n := allocstest.Least(100, func() { StringMemberIs(obj, "name", "fx-test_simple_text") }); n != 0 {
		t.Errorf("StringMemberIs allocated %v times", n)
	}
}
