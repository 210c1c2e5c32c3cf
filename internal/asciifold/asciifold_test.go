package asciifold

import "testing"

func TestEqual(t *testing.T) {
	for _, c := range []struct {
		s, t string
		want bool
	}{
		{"chunked", "CHUNKED", true},
		{"Chunked", "chunked", true},
		{"chun\u212aed", "chunked", false}, // Kelvin sign: strings.EqualFold says equal
		{"x-api-\u017fey", "x-api-sey", false},
		{"chunked", "chunke", false},
		{"a@", "A`", false}, // '@' and '`' are not a case pair
		{"", "", true},
	} {
		if got := Equal(c.s, c.t); got != c.want {
			t.Errorf("Equal(%q, %q) = %v, want %v", c.s, c.t, got, c.want)
		}
	}
}

func FuzzEqual(f *testing.F) {
	f.Add("chunked", "CHUNKED")
	f.Add("\u212a", "k")
	f.Fuzz(func(t *testing.T, s, u string) {
		got := Equal(s, u)
		if got != Equal(u, s) {
			t.Fatal("not symmetric")
		}
		want := len(s) == len(u)
		for i := 0; want && i < len(s); i++ {
			want = lower(s[i]) == lower(u[i])
		}
		if got != want {
			t.Fatalf("Equal(%q, %q) = %v", s, u, got)
		}
	})
}

func lower(c byte) byte {
	if c >= 'A' && c <= 'Z' {
		return c + 32
	}
	return c
}
