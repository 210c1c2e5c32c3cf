package jsonrpc

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"
	"unicode/utf8"
)

// decodeTwoPass is Decode as it was before validation and member scanning
// became one pass: encoding/json's validity and UTF-8 checks, then a scan of
// the members. Decode must agree with it on every input.
func decodeTwoPass(data []byte) (*Message, error) {
	if !json.Valid(data) {
		return nil, &DecodeError{Code: CodeParseError, Reason: "body is not valid JSON"}
	}
	if !utf8.Valid(data) {
		return nil, &DecodeError{Code: CodeParseError, Reason: "body is not valid UTF-8"}
	}
	data = bytes.TrimSpace(data)
	switch data[0] {
	case '{':
	case '[':
		return nil, shapeErr(ID{}, "batches are not supported: send one message per request")
	default:
		return nil, shapeErr(ID{}, "a message must be a JSON object")
	}
	var f fields
	if err := scanObject(data, f.set); err != nil {
		return nil, err
	}
	return f.message()
}

var onePassSeeds = []string{
	`{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"a","inputSchema":{"type":"object","properties":{}}}],"ttlMs":0}}`,
	`{"jsonrpc":"2.0","id":1,"method":"x","params":{},"method":"y"}`,
	` {"id":"a" , "jsonrpc" : "2.0","result":[]} `,
	`{"jsonrpc":"2.0","id":1,"result":{},"id":2`,
	`{"jsonrpc":"2.0","id":1,"result":{"a":[{},[],""]}}x`,
	"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":\"\xff\"}",
	"{\"jsonrpc\":\"2.0\",\"id\":1,\"id\":2,\"result\":\"\xff\"}",
	`{"\u006aso\u006erpc":"2.0","id":null,"error":{"code":-32600,"message":"m","data":{"x":[1,2]}}}`,
	`[{"jsonrpc":"2.0","method":"n"}]`, `{}`, `[]`, `"s"`, `1`, ``, `{"a":}`, `{"a":{}}`, `{"a":[]}`,
}

// Decode reads a message once and must answer exactly what checking it with
// encoding/json and then scanning it did: the same message, or the same
// error.
func FuzzDecodeOnePass(f *testing.F) {
	for _, s := range onePassSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		got, gerr := Decode(data)
		want, werr := decodeTwoPass(data)
		if (gerr == nil) != (werr == nil) {
			t.Fatalf("Decode(%q) error %v, want %v", data, gerr, werr)
		}
		if gerr != nil {
			var g, w *DecodeError
			if errors.As(gerr, &g) != errors.As(werr, &w) || g != nil && (g.Code != w.Code || g.Reason != w.Reason || g.ID != w.ID) {
				t.Fatalf("Decode(%q) error %#v, want %#v", data, gerr, werr)
			}
			return
		}
		if got.ID != want.ID || got.Method != want.Method || !bytes.Equal(got.Params, want.Params) || !bytes.Equal(got.Result, want.Result) ||
			(got.Error == nil) != (want.Error == nil) || got.Error != nil && (got.Error.Code != want.Error.Code || got.Error.Message != want.Error.Message || !bytes.Equal(got.Error.Data, want.Error.Data)) {
			t.Fatalf("Decode(%q) = %+v, want %+v", data, got, want)
		}
	})
}

// The members validMembers reports for a valid object are scanRaw's, in the
// same order, and it reports validity as validUTF8JSON does.
func FuzzValidMembers(f *testing.F) {
	for _, s := range append(onePassSeeds, validSeeds...) {
		f.Add([]byte(s))
	}
	type member struct {
		key        string
		start, end int
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var got []member
		valid := validMembers(data, func(k []byte, s, e int) { got = append(got, member{string(k), s, e}) })
		if want := json.Valid(data) && utf8.Valid(data); valid != want {
			t.Fatalf("validMembers(%q) = %v, want %v", data, valid, want)
		}
		if !valid || data[skipWS(data, 0)] != '{' {
			return
		}
		var want []member
		_ = scanRaw(data, func(k []byte, s, e int) error { want = append(want, member{string(k), s, e}); return nil })
		if len(got) != len(want) {
			t.Fatalf("validMembers(%q) found %v, want %v", data, got, want)
		}
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("validMembers(%q) found %v, want %v", data, got, want)
			}
		}
	})
}
