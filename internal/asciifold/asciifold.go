// Package asciifold compares the ASCII tokens of HTTP (header names,
// transfer codings, auth schemes, expectations) ignoring ASCII case only.
// strings.EqualFold also folds non-ASCII runes to ASCII letters (the Kelvin
// sign to "k", the long s to "s"), which net/http and a front proxy do not:
// a framing token taken as equal where they see another is a smuggling
// risk, a header name a credential check misses. The server (h1serve), the
// upstream client's response parser and its credential policy
// (upstream/auth) share this one function; httpguts has none exported.
package asciifold

// Equal reports whether s and t are equal under ASCII case folding only.
func Equal(s, t string) bool {
	if len(s) != len(t) {
		return false
	}
	for i := 0; i < len(s); i++ {
		a, b := s[i], t[i]
		if 'A' <= a && a <= 'Z' {
			a += 'a' - 'A'
		}
		if 'A' <= b && b <= 'Z' {
			b += 'a' - 'A'
		}
		if a != b {
			return false
		}
	}
	return true
}
