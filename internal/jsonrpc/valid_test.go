package jsonrpc

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

var validSeeds = []string{
	`{}`, `[]`, ` {"a" : [1, -2.5e+3, 0, true, false, null, "x\u00e9\n\"\\/"]} `, `"é"`, `0`, `-0.0E-0`,
	`{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"a","inputSchema":{"type":"object"}}]}}`,
	``, ` `, `{`, `}`, `[1,]`, `{"a":1,}`, `{"a"}`, `{1:2}`, `01`, `1.`, `.5`, `1e`, `-`, `+1`, `tru`, `truex`, `nul`,
	`"\x"`, `"\u12"`, `"\u12G4"`, "\"\x01\"", "\"\xff\"", "\"\xed\xa0\x80\"", "\"\xef\xbf\xbd\"", `"\ud800"`,
	"{\"a\":1}\xff", `[1 2]`, `{"a":1 "b":2}`, `[[[[]]]]`, `[}`, `{]`, `"unterminated`, "\ufeff{}",
}

func TestValidUTF8JSONAgrees(t *testing.T) {
	deep := strings.Repeat("[", maxValidDepth) + strings.Repeat("]", maxValidDepth)
	deeper := "[" + deep + "]"
	for _, s := range append(validSeeds, deep, deeper) {
		want := json.Valid([]byte(s)) && utf8.ValidString(s)
		if got := validUTF8JSON([]byte(s)); got != want {
			t.Errorf("validUTF8JSON(%.40q) = %v, want %v", s, got, want)
		}
	}
}

// FuzzValidUTF8JSON: the one-pass check says exactly what json.Valid and
// utf8.Valid say together.
func FuzzValidUTF8JSON(f *testing.F) {
	for _, s := range validSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		want := json.Valid(data) && utf8.Valid(data)
		if got := validUTF8JSON(data); got != want {
			t.Fatalf("validUTF8JSON(%q) = %v, want %v", data, got, want)
		}
	})
}

// validUTF8JSON is validMembers without members.
func validUTF8JSON(data []byte) bool { return validMembers(data, nil) }
