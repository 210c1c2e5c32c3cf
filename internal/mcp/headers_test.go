package mcp

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestHeaderConstants(t *testing.T) {
	for got, want := range map[string]string{
		HeaderProtocolVersion: "MCP-Protocol-Version", HeaderMethod: "Mcp-Method", HeaderName: "Mcp-Name",
		HeaderSessionID: "Mcp-Session-Id", HeaderParamPrefix: "Mcp-Param-", HeaderLastEventID: "Last-Event-ID",
		XMCPHeader: "x-mcp-header",
	} {
		if got != want {
			t.Errorf("%q != %q", got, want)
		}
	}
	if ParamHeader("Region") != "Mcp-Param-Region" || ParamHeader("Method") != "Mcp-Param-Method" {
		t.Fatal("ParamHeader")
	}
	if MaxSafeInteger != 9007199254740991 {
		t.Fatal("MaxSafeInteger")
	}
}

func TestEncodeHeaderValue(t *testing.T) {
	tests := []struct{ in, want string }{
		// Examples from the header value encoding rules.
		{"Zürich", "=?base64?WsO8cmljaA==?="},
		{" x", "=?base64?IHg=?="},
		// Plain safe values.
		{"", ""},
		{"get_weather", "get_weather"},
		{"file:///cfg.json", "file:///cfg.json"},
		{"a b", "a b"},
		{"42", "42"},
		{"true", "true"},
		{"~!@#$%^&*()_+{}|:\"<>?`-=[]\\;',./", "~!@#$%^&*()_+{}|:\"<>?`-=[]\\;',./"},
		{"=?BASE64?WA==?=", "=?BASE64?WA==?="}, // uppercase markers are literal text
		{"=?base64?", "=?base64?"},             // no suffix
		{"?=", "?="},
		{"=?base64?=", "=?base64?="}, // markers would overlap: literal
		// Need wrapping.
		{"x ", "=?base64?eCA=?="},
		{" ", "=?base64?IA==?="},
		{"\tx", "=?base64?CXg=?="},
		{"a\tb", "=?base64?YQli?="},
		{"a\r\nb", "=?base64?YQ0KYg==?="},
		{"a\x7fb", "=?base64?YX9i?="},
		{"a\x00b", "=?base64?YQBi?="},
		{"日本", "=?base64?5pel5pys?="},
		{"=?base64?SGk=?=", "=?base64?PT9iYXNlNjQ/U0drPT89?="}, // plain that looks encoded
		{"=?base64??=", "=?base64?PT9iYXNlNjQ/Pz0=?="},
	}
	for _, tt := range tests {
		if got := EncodeHeaderValue(tt.in); got != tt.want {
			t.Errorf("EncodeHeaderValue(%q) = %q, want %q", tt.in, got, tt.want)
		}
		back, err := DecodeHeaderValue(tt.want)
		if err != nil || back != tt.in {
			t.Errorf("DecodeHeaderValue(%q) = %q, %v; want %q", tt.want, back, err, tt.in)
		}
	}
}

func TestDecodeHeaderValue(t *testing.T) {
	tests := []struct {
		in      string
		want    string
		wantErr error
	}{
		{"=?base64?WsO8cmljaA==?=", "Zürich", nil},
		{"=?base64?IHg=?=", " x", nil},
		{"plain", "plain", nil},
		{"", "", nil},
		// Surrounding SP/HTAB is trimmed per HTTP.
		{"  plain \t", "plain", nil},
		{"\t=?base64?IHg=?= ", " x", nil},
		{" \t ", "", nil},
		{"a b", "a b", nil},
		// Markers are lowercase and case-sensitive.
		{"=?BASE64?WsO8cmljaA==?=", "=?BASE64?WsO8cmljaA==?=", nil},
		{"=?Base64?WA==?=", "=?Base64?WA==?=", nil},
		{"=?base64?WA==?", "=?base64?WA==?", nil},
		{"=?base64?=", "=?base64?=", nil},
		{"x=?base64?WA==?=", "x=?base64?WA==?=", nil},
		// Empty payload decodes to the empty string.
		{"=?base64??=", "", nil},
		// Invalid base64 inside the markers.
		{"=?base64?!!!!?=", "", ErrHeaderBase64},
		{"=?base64?WsO8cmljaA?=", "", ErrHeaderBase64},  // missing padding
		{"=?base64?WsO8cmljaA=?=", "", ErrHeaderBase64}, // wrong padding
		{"=?base64?IHh=?=", "", ErrHeaderBase64},        // non-canonical trailing bits
		{"=?base64?IH g=?=", "", ErrHeaderBase64},       // space inside
		{"=?base64?SGk_?=", "", ErrHeaderBase64},        // URL alphabet
		{"=?base64?=?base64?SGk=?=?=", "", ErrHeaderBase64},
		// Invalid characters in the raw value.
		{"a\x00b", "", ErrHeaderInvalidChar},
		{"a\tb", "", ErrHeaderInvalidChar},
		{"a\r\nb", "", ErrHeaderInvalidChar},
		{"a\x7fb", "", ErrHeaderInvalidChar},
		{"Zürich", "", ErrHeaderInvalidChar},
		{"\xff", "", ErrHeaderInvalidChar},
		{"=?base64?IHg=\n?=", "", ErrHeaderInvalidChar}, // base64 decoders skip \n; we must not
		// Decoded bytes must be UTF-8.
		{"=?base64?/w==?=", "", ErrHeaderUTF8},
		// Decoded control characters are fine (that is what the wrapper is for).
		{"=?base64?YQ0KYg==?=", "a\r\nb", nil},
	}
	for _, tt := range tests {
		got, err := DecodeHeaderValue(tt.in)
		if !errors.Is(err, tt.wantErr) || got != tt.want {
			t.Errorf("DecodeHeaderValue(%q) = %q, %v; want %q, %v", tt.in, got, err, tt.want, tt.wantErr)
		}
	}
}

func TestHeaderValueWrapped(t *testing.T) {
	for in, want := range map[string]bool{
		"=?base64?IHg=?=": true, " =?base64?IHg=?= ": true, "=?base64??=": true,
		"=?BASE64?IHg=?=": false, "=?base64?=": false, "plain": false, "": false,
	} {
		if got := HeaderValueWrapped(in); got != want {
			t.Errorf("HeaderValueWrapped(%q) = %v", in, got)
		}
	}
}

func TestValidSessionID(t *testing.T) {
	tests := []struct {
		in   string
		want bool
	}{
		{"abc", true},
		{"!~", true},
		{"a1b2-c3_d4.e5", true},
		{"ZXlK.eyJ0=", true},
		{strings.Repeat("a", MaxSessionIDLen), true},
		{strings.Repeat("a", MaxSessionIDLen+1), false},
		{"", false},
		{"a b", false},
		{" a", false},
		{"a\tb", false},
		{"a\x7f", false},
		{"é", false},
		{"a\nb", false},
	}
	for _, tt := range tests {
		if got := ValidSessionID(tt.in); got != tt.want {
			t.Errorf("ValidSessionID(%.20q) = %v", tt.in, got)
		}
	}
}

func TestValidParamHeaderName(t *testing.T) {
	tests := []struct {
		in   string
		want bool
	}{
		{"Region", true},
		{"Method", true},
		{"X-Tenant_ID.v2", true},
		{"!#$%&'*+-.^_`|~09azAZ", true},
		{"", false},
		{"has space", false},
		{"colon:", false},
		{"Zürich", false},
		{"tab\t", false},
		{"(paren)", false},
		{"a/b", false},
		{"a\"b", false},
	}
	for _, tt := range tests {
		if got := ValidParamHeaderName(tt.in); got != tt.want {
			t.Errorf("ValidParamHeaderName(%q) = %v", tt.in, got)
		}
	}
}

// FuzzHeaderValue checks that decoding never panics, that encoding always yields a value that
// needs no trimming and holds only safe bytes, and that every valid UTF-8 string round-trips.
func FuzzHeaderValue(f *testing.F) {
	for _, s := range []string{
		"", "Zürich", " x", "x ", "plain", "=?base64?IHg=?=", "=?BASE64?IHg=?=", "=?base64?=",
		"=?base64??=", "a\tb", "\x00", "\xff", "日本語", "  =?base64?WsO8cmljaA==?=\t", "=?base64?!!?=",
		"=?base64?/w==?=", "=?base64?IHh=?=",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		dec, err := DecodeHeaderValue(s)
		if err == nil {
			if !utf8.ValidString(dec) {
				t.Fatalf("DecodeHeaderValue(%q) returned invalid UTF-8 %q", s, dec)
			}
			// Anything we accept re-encodes to something that decodes to the same value.
			if again, err := DecodeHeaderValue(EncodeHeaderValue(dec)); err != nil || again != dec {
				t.Fatalf("re-encode of %q: %q, %v", dec, again, err)
			}
		}
		enc := EncodeHeaderValue(s)
		for i := 0; i < len(enc); i++ {
			if enc[i] < 0x20 || enc[i] > 0x7e {
				t.Fatalf("EncodeHeaderValue(%q) = %q has byte %#x", s, enc, enc[i])
			}
		}
		if strings.Trim(enc, " \t") != enc {
			t.Fatalf("EncodeHeaderValue(%q) = %q needs trimming", s, enc)
		}
		if !utf8.ValidString(s) {
			if _, err := DecodeHeaderValue(enc); err == nil {
				t.Fatalf("invalid UTF-8 %q round-tripped without error", s)
			}
			return
		}
		got, err := DecodeHeaderValue(enc)
		if err != nil || got != s {
			t.Fatalf("round trip %q -> %q -> %q, %v", s, enc, got, err)
		}
		if enc == s && HeaderValueWrapped(enc) {
			t.Fatalf("plain value %q left looking encoded", s)
		}
	})
}
