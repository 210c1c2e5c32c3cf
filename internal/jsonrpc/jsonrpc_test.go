package jsonrpc

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/mcpgw/mcpgw/internal/allocstest"
)

func TestDecodeShapes(t *testing.T) {
	tests := []struct {
		name, in string
		kind     Kind
		id       string
		method   string
		wantErr  string
		code     int64
	}{
		{name: "request string id", in: `{"jsonrpc":"2.0","id":"a-1","method":"tools/list","params":{}}`, kind: KindRequest, id: `"a-1"`, method: "tools/list"},
		{name: "large int id kept", in: `{"jsonrpc":"2.0","id":9007199254740993,"method":"x"}`, kind: KindRequest, id: `9007199254740993`, method: "x"},
		{name: "negative id", in: `{"jsonrpc":"2.0","id":-5,"method":"x"}`, kind: KindRequest, id: `-5`, method: "x"},
		{name: "notification", in: `{"jsonrpc":"2.0","method":"notifications/initialized"}`, kind: KindNotification, method: "notifications/initialized"},
		{name: "result", in: ` {"jsonrpc":"2.0","id":1,"result":{"tools":[]}} `, kind: KindResponse, id: `1`},
		{name: "error", in: `{"jsonrpc":"2.0","id":"x","error":{"code":-32601,"message":"nope","data":{"a":1}}}`, kind: KindErrorResponse, id: `"x"`},
		{name: "error null id", in: `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse"}}`, kind: KindErrorResponse},
		{name: "unknown member tolerated", in: `{"jsonrpc":"2.0","id":1,"result":{},"extra":true}`, kind: KindResponse, id: "1"},
		{name: "escaped key", in: `{"jsonrpc":"2.0","\u0069d":7,"method":"m"}`, kind: KindRequest, id: "7", method: "m"},
		{name: "fraction id", in: `{"jsonrpc":"2.0","id":1.5,"method":"x"}`, wantErr: "not an integer", code: CodeInvalidRequest},
		{name: "exponent id", in: `{"jsonrpc":"2.0","id":1e3,"method":"x"}`, wantErr: "not an integer", code: CodeInvalidRequest},
		{name: "bool id", in: `{"jsonrpc":"2.0","id":true,"method":"x"}`, wantErr: "string or an integer", code: CodeInvalidRequest},
		{name: "null request id", in: `{"jsonrpc":"2.0","id":null,"method":"x"}`, wantErr: "must not be null", code: CodeInvalidRequest},
		{name: "missing version", in: `{"id":1,"method":"x"}`, wantErr: `missing "jsonrpc"`, code: CodeInvalidRequest},
		{name: "wrong version", in: `{"jsonrpc":"1.0","id":1,"method":"x"}`, wantErr: `must be "2.0"`, code: CodeInvalidRequest},
		{name: "case-variant key is not id", in: `{"jsonrpc":"2.0","ID":1,"result":{}}`, wantErr: "neither", code: CodeInvalidRequest},
		{name: "both result and error", in: `{"jsonrpc":"2.0","id":1,"result":{},"error":{"code":1,"message":"m"}}`, wantErr: "both", code: CodeInvalidRequest},
		{name: "neither", in: `{"jsonrpc":"2.0","id":1}`, wantErr: `needs "result" or "error"`, code: CodeInvalidRequest},
		{name: "request with result", in: `{"jsonrpc":"2.0","id":1,"method":"x","result":{}}`, wantErr: "must not carry", code: CodeInvalidRequest},
		{name: "method not string", in: `{"jsonrpc":"2.0","id":1,"method":5}`, wantErr: "must be a string", code: CodeInvalidRequest},
		{name: "empty method", in: `{"jsonrpc":"2.0","id":1,"method":""}`, wantErr: "must not be empty", code: CodeInvalidRequest},
		{name: "scalar params", in: `{"jsonrpc":"2.0","id":1,"method":"x","params":3}`, wantErr: "object or an array", code: CodeInvalidRequest},
		{name: "duplicate id", in: `{"jsonrpc":"2.0","id":1,"id":2,"method":"x"}`, wantErr: "duplicate", code: CodeInvalidRequest},
		{name: "error code fraction", in: `{"jsonrpc":"2.0","id":1,"error":{"code":1.5,"message":"m"}}`, wantErr: "must be an integer", code: CodeInvalidRequest},
		{name: "error without message", in: `{"jsonrpc":"2.0","id":1,"error":{"code":1}}`, wantErr: "message\" is missing", code: CodeInvalidRequest},
		{name: "error not object", in: `{"jsonrpc":"2.0","id":1,"error":"bad"}`, wantErr: "must be an object", code: CodeInvalidRequest},
		{name: "result without id", in: `{"jsonrpc":"2.0","id":null,"result":{}}`, wantErr: "must carry an id", code: CodeInvalidRequest},
		{name: "batch refused", in: `[{"jsonrpc":"2.0","id":1,"method":"x"}]`, wantErr: "batches", code: CodeInvalidRequest},
		{name: "not object", in: `"hello"`, wantErr: "JSON object", code: CodeInvalidRequest},
		{name: "invalid json", in: `{"jsonrpc":"2.0",`, wantErr: "not valid JSON", code: CodeParseError},
		{name: "empty", in: ``, wantErr: "not valid JSON", code: CodeParseError},
		{name: "invalid UTF-8 in method", in: "{\"jsonrpc\":\"2.0\",\"method\":\"\xcd\"}", wantErr: "UTF-8", code: CodeParseError},
		{name: "invalid UTF-8 in params", in: "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"x\",\"params\":{\"a\":\"\xff\xfe\"}}", wantErr: "UTF-8", code: CodeParseError},
		{name: "invalid UTF-8 in key", in: "{\"jsonrpc\":\"2.0\",\"\xc0\":1,\"method\":\"x\"}", wantErr: "UTF-8", code: CodeParseError},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := Decode([]byte(tt.in))
			if tt.wantErr != "" {
				var de *DecodeError
				if !errors.As(err, &de) {
					t.Fatalf("err = %v, want DecodeError containing %q", err, tt.wantErr)
				}
				if !strings.Contains(de.Error(), tt.wantErr) || de.Code != tt.code {
					t.Fatalf("err = %v (code %d), want %q (code %d)", de, de.Code, tt.wantErr, tt.code)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if m.Kind() != tt.kind || m.ID.String() != tt.id || m.Method != tt.method {
				t.Fatalf("got kind=%v id=%q method=%q", m.Kind(), m.ID, m.Method)
			}
		})
	}
}

func TestDecodeKeepsPayloadBytes(t *testing.T) {
	in := []byte(`{"jsonrpc":"2.0","id":1,"result":{"b": 1.50, "a" :[1, 2]}}`)
	m, err := Decode(in)
	if err != nil {
		t.Fatal(err)
	}
	if got := string(m.Result); got != `{"b": 1.50, "a" :[1, 2]}` {
		t.Fatalf("result = %s", got)
	}
}

func TestDecodeErrorCarriesID(t *testing.T) {
	_, err := Decode([]byte(`{"jsonrpc":"2.0","id":"req-9","method":""}`))
	var de *DecodeError
	if !errors.As(err, &de) || de.ID.String() != `"req-9"` {
		t.Fatalf("err = %#v", err)
	}
	if got := string(EncodeError(de.ID, de.RPCError())); !strings.Contains(got, `"id":"req-9"`) || !strings.Contains(got, `-32600`) {
		t.Fatalf("encoded = %s", got)
	}
}

func TestEncodeRoundTrip(t *testing.T) {
	ids := []ID{IntID(0), IntID(-7), StringID("x\"y"), StringID("ünï"), mustID(t, `9007199254740993`)}
	for _, id := range ids {
		for _, b := range [][]byte{
			EncodeRequest(id, "tools/call", json.RawMessage(`{"name":"a<b>"}`)),
			EncodeResult(id, json.RawMessage(`{"ok":true}`)),
			EncodeError(id, &Error{Code: -32602, Message: "bad \"x\"", Data: json.RawMessage(`{"k":1}`)}),
		} {
			m, err := Decode(b)
			if err != nil {
				t.Fatalf("%s: %v", b, err)
			}
			if m.ID != id {
				t.Fatalf("%s: id %s != %s", b, m.ID, id)
			}
		}
	}
	n, err := Decode(EncodeNotification("notifications/\nodd", nil))
	if err != nil || n.Method != "notifications/\nodd" || n.Params != nil {
		t.Fatalf("notification: %+v %v", n, err)
	}
}

func TestIDJSON(t *testing.T) {
	var v struct {
		ID ID `json:"id"`
	}
	if err := json.Unmarshal([]byte(`{"id":12345678901234567890}`), &v); err != nil {
		t.Fatal(err)
	}
	out, _ := json.Marshal(v)
	if string(out) != `{"id":12345678901234567890}` {
		t.Fatalf("got %s", out)
	}
	if err := json.Unmarshal([]byte(`{"id":{}}`), &v); err == nil {
		t.Fatal("object id accepted")
	}
}

func TestMember(t *testing.T) {
	raw := []byte(`{"a":{"x":"}"},"resultType" : "input_required","c":[1,{"d":"\"]"}]}`)
	if got := string(Member(raw, "resultType")); got != `"input_required"` {
		t.Fatalf("got %q", got)
	}
	if got := Member(raw, "missing"); got != nil {
		t.Fatalf("got %q", got)
	}
	var keys []string
	if err := EachMember(raw, func(k string, _ []byte) error { keys = append(keys, k); return nil }); err != nil {
		t.Fatal(err)
	}
	if strings.Join(keys, ",") != "a,resultType,c" {
		t.Fatalf("keys %v", keys)
	}
	if err := EachMember([]byte(`[1]`), func(string, []byte) error { return nil }); err == nil {
		t.Fatal("array accepted as object")
	}
}

func mustID(t *testing.T, s string) ID {
	id, err := ParseID([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func FuzzDecode(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"x","params":{}}`,
		`{"jsonrpc":"2.0","id":"a","result":{"k":[1,"]"]}}`,
		`{"jsonrpc":"2.0","id":null,"error":{"code":-1,"message":"m"}}`,
		`[{"jsonrpc":"2.0","method":"n"}]`,
		`{"jsonrpc":"2.0","\u006dethod":"m"}`,
		`{}`, `[]`, `null`, `{"jsonrpc":"2.0","id":-0,"method":"x"}`,
		"{\"jsonrpc\":\"2.0\",\"method\":\"\xcd\"}",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := Decode(data)
		if err != nil {
			var de *DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("non-DecodeError %T", err)
			}
			return
		}
		// Whatever decodes must re-encode to something that decodes to the same message.
		var b []byte
		switch m.Kind() {
		case KindRequest:
			b = EncodeRequest(m.ID, m.Method, m.Params)
		case KindNotification:
			b = EncodeNotification(m.Method, m.Params)
		case KindResponse:
			b = EncodeResult(m.ID, m.Result)
		case KindErrorResponse:
			b = EncodeError(m.ID, m.Error)
		}
		m2, err := Decode(b)
		if err != nil {
			t.Fatalf("re-encoded %q does not decode: %v", b, err)
		}
		if m2.ID != m.ID || m2.Method != m.Method || !bytes.Equal(m2.Params, m.Params) || !bytes.Equal(m2.Result, m.Result) {
			t.Fatalf("round trip changed message: %q -> %q", data, b)
		}
		if (m.Error == nil) != (m2.Error == nil) || (m.Error != nil && (m.Error.Code != m2.Error.Code || m.Error.Message != m2.Error.Message)) {
			t.Fatalf("round trip changed error: %q -> %q", data, b)
		}
	})
}

func BenchmarkDecodeLargeResult(b *testing.B) {
	var buf bytes.Buffer
	buf.WriteString(`{"jsonrpc":"2.0","id":42,"result":{"content":[`)
	for i := 0; i < 20000; i++ {
		if i > 0 {
			buf.WriteByte(',')
		}
		buf.WriteString(`{"type":"text","text":"lorem ipsum dolor sit amet \"quoted\" {braces}"}`)
	}
	buf.WriteString(`]}}`)
	data := buf.Bytes()
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Decode(data); err != nil {
			b.Fatal(err)
		}
	}
}

func TestSetMember(t *testing.T) {
	cases := []struct{ in, key, val, want string }{
		{`{"name":"a","x":{"name":"inner"}}`, "name", `"srv-a"`, `{"name":"srv-a","x":{"name":"inner"}}`},
		{`{ "x" : 1 , "name" : "a" }`, "name", `"b"`, `{ "x" : 1 , "name" : "b" }`},
		{`{"x":1}`, "name", `"b"`, `{"x":1,"name":"b"}`},
		{`{}`, "resultType", `"complete"`, `{"resultType":"complete"}`},
		{` { } `, "k", `1`, `{"k":1}`},
	}
	for _, tc := range cases {
		got, err := SetMember([]byte(tc.in), tc.key, []byte(tc.val))
		if err != nil || string(got) != tc.want {
			t.Errorf("SetMember(%s, %s) = %s, %v; want %s", tc.in, tc.key, got, err, tc.want)
		}
		if !json.Valid(got) {
			t.Errorf("invalid JSON %s", got)
		}
	}
}

func TestEachElement(t *testing.T) {
	for in, want := range map[string]string{
		`[]`:                           "",
		` [ 1 , "a,b" , {"x":[1,2]} ]`: `1|"a,b"|{"x":[1,2]}`,
		`[[],[[]],null]`:               `[]|[[]]|null`,
	} {
		var got []string
		if err := EachElement([]byte(in), func(e []byte) error { got = append(got, string(e)); return nil }); err != nil {
			t.Fatal(err)
		}
		if strings.Join(got, "|") != want {
			t.Errorf("EachElement(%s) = %q, want %q", in, got, want)
		}
	}
	if err := EachElement([]byte(`{}`), func([]byte) error { return nil }); err == nil {
		t.Fatal("an object taken for an array")
	}
}

func TestMembers(t *testing.T) {
	obj := []byte(`{"a":1, "b" : "x", "c\u0061":[1,{"a":2}], "a":3, "_meta":{}}`)
	keys := []string{"a", "ca", "missing", "_meta"}
	vals := make([][]byte, len(keys))
	vals[2] = []byte("stale")
	if err := Members(obj, keys, vals); err != nil {
		t.Fatal(err)
	}
	want := []string{"3", `[1,{"a":2}]`, "", "{}"}
	for i := range keys {
		if string(vals[i]) != want[i] {
			t.Errorf("%s = %q, want %q", keys[i], vals[i], want[i])
		}
	}
	if Members([]byte(`[1]`), keys, vals) == nil {
		t.Error("an array was scanned as an object")
	}
}

func TestMemberEscapedKeys(t *testing.T) {
	obj := []byte(`{"\u006aext":1,"next":2,"n\"x":3}`)
	if got := string(Member(obj, "jext")); got != "1" {
		t.Errorf("escaped key: %q", got)
	}
	if got := string(Member(obj, `n"x`)); got != "3" {
		t.Errorf("escaped quote in key: %q", got)
	}
	set, err := SetMember(obj, "jext", []byte(`9`))
	if err != nil || string(set) != `{"\u006aext":9,"next":2,"n\"x":3}` {
		t.Errorf("SetMember = %s, %v", set, err)
	}
}

// TestDecodeKeysAllocateNothing: the member names of a message are not copied.
func TestDecodeKeysAllocateNothing(t *testing.T) {
	msg := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{}}}`)
	base := allocstest.Least(100, func() { _, _ = Decode(msg) })
	// The Message, its method string and the id (one more under -race); a
	// copy of each of the four keys would make it 7.
	if base > 4 {
		t.Errorf("Decode allocates %.0f times, want ≤ 4", base)
	}
}

// FuzzMembers: for any valid JSON object, Members finds what encoding/json
// decodes into a map (the last of duplicate keys, escapes in keys resolved).
func FuzzMembers(f *testing.F) {
	for _, s := range []string{`{"a":1,"b":[1,{"a":2}],"a":"x"}`, `{"\u0061":1, "a" : {"c":"}"}}`, `{}`, ` {"k\"":null} `} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if !json.Valid(data) || !utf8.Valid(data) {
			return
		}
		var m map[string]json.RawMessage
		if json.Unmarshal(data, &m) != nil || m == nil {
			return // not an object (null decodes to a nil map)
		}
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		vals := make([][]byte, len(keys))
		if err := Members(bytes.TrimSpace(data), keys, vals); err != nil {
			t.Fatalf("Members(%q): %v", data, err)
		}
		for i, k := range keys {
			if !bytes.Equal(vals[i], m[k]) {
				t.Fatalf("Members(%q)[%q] = %q, encoding/json %q", data, k, vals[i], m[k])
			}
		}
		// MemberSpans' first spans and Member agree on the first of
		// duplicate keys; its last spans are Members'.
		first, last := make([]Span, len(keys)), make([]Span, len(keys))
		if err := MemberSpans(bytes.TrimSpace(data), keys, first, last); err != nil {
			t.Fatalf("MemberSpans(%q): %v", data, err)
		}
		for i, k := range keys {
			obj := bytes.TrimSpace(data)
			if got, want := first[i].Of(obj), Member(obj, k); !bytes.Equal(got, want) || want == nil {
				t.Fatalf("MemberSpans(%q) first[%q] = %q, Member %q", data, k, got, want)
			}
			if got := last[i].Of(obj); !bytes.Equal(got, vals[i]) {
				t.Fatalf("MemberSpans(%q) last[%q] = %q, Members %q", data, k, got, vals[i])
			}
		}
	})
}

func TestMemberSpans(t *testing.T) {
	obj := []byte(`{"a":1,"b":{"a":2},"a":3,"c":"x"}`)
	first, last := make([]Span, 3), make([]Span, 3)
	if err := MemberSpans(obj, []string{"a", "c", "z"}, first, last); err != nil {
		t.Fatal(err)
	}
	if string(first[0].Of(obj)) != "1" || string(last[0].Of(obj)) != "3" ||
		string(first[1].Of(obj)) != `"x"` || first[1] != last[1] ||
		first[2].Of(obj) != nil || last[2].Start != -1 {
		t.Fatalf("MemberSpans = %v / %v", first, last)
	}
	if string(Member(obj, "a")) != "1" || Member(obj, "z") != nil {
		t.Fatalf("Member = %q / %q", Member(obj, "a"), Member(obj, "z"))
	}
	if MemberSpans([]byte(`[1]`), []string{"a"}, first, last) == nil {
		t.Fatal("MemberSpans of an array: no error")
	}
}

// The members of a modern request's _meta are read without a copy of
// their names.
func TestScanModernMetaAllocatesNothing(t *testing.T) {
	meta := []byte(`{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},` +
		`"io.modelcontextprotocol/clientInfo":{"name":"c","version":"1"},"progressToken":1}`)
	n := 0
	count := func(string, []byte) error { n++; return nil }
	allocs := allocstest.Least(100, func() {
		_ = EachMember(meta, count)
		_ = EachMember(Member(meta, "io.modelcontextprotocol/clientInfo"), count)
	})
	if allocs != 0 || n == 0 {
		t.Fatalf("scanning _meta allocates %.0f times (%d members seen), want 0", allocs, n)
	}
}
