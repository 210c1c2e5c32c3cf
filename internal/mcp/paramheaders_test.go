package mcp

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

func TestParseParamSpecs(t *testing.T) {
	for _, tc := range []struct {
		name   string
		schema string
		want   []ParamSpec
		err    string
	}{
		{"none", `{"type":"object","properties":{"a":{"type":"string"}}}`, nil, ""},
		{"empty", ``, nil, ""},
		{"not JSON", `{"x-mcp-header":`, nil, ""},
		{"top level", `{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"}}}`,
			[]ParamSpec{{Header: "Mcp-Param-Region", Path: []string{"region"}, Type: "string"}}, ""},
		{"nested", `{"type":"object","properties":{"o":{"type":"object","properties":{"n":{"type":"integer","x-mcp-header":"N"}}}}}`,
			[]ParamSpec{{Header: "Mcp-Param-N", Path: []string{"o", "n"}, Type: "integer"}}, ""},
		{"boolean", `{"properties":{"v":{"type":"boolean","x-mcp-header":"Verbose"}}}`,
			[]ParamSpec{{Header: "Mcp-Param-Verbose", Path: []string{"v"}, Type: "boolean"}}, ""},
		{"number type", `{"properties":{"x":{"type":"number","x-mcp-header":"X"}}}`, nil, "cannot carry"},
		{"used twice", `{"properties":{"a":{"type":"string","x-mcp-header":"Dup"},"b":{"type":"string","x-mcp-header":"dup"}}}`, nil, "used twice"},
		{"bad name", `{"properties":{"a":{"type":"string","x-mcp-header":"has space"}}}`, nil, "invalid"},
		{"not a string", `{"properties":{"a":{"type":"string","x-mcp-header":7}}}`, nil, "invalid"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseParamSpecs(json.RawMessage(tc.schema))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("specs = %+v (%v), want %+v", got, err, tc.want)
			}
		})
	}
}

func TestParamHeaderValues(t *testing.T) {
	specs, err := ParseParamSpecs(json.RawMessage(`{"type":"object","properties":{
		"region":{"type":"string","x-mcp-header":"Region"},
		"n":{"type":"integer","x-mcp-header":"Priority"},
		"v":{"type":"boolean","x-mcp-header":"Verbose"},
		"city":{"type":"string","x-mcp-header":"City"},
		"opt":{"type":"string","x-mcp-header":"Opt"},
		"big":{"type":"integer","x-mcp-header":"Big"},
		"nested":{"type":"object","properties":{"deep":{"type":"string","x-mcp-header":"Deep"}}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	args := json.RawMessage(`{"region":"us-west","n":42.0,"v":false,"city":"Zürich","opt":null,"big":9007199254740993,"nested":{"deep":" x"}}`)
	want := map[string][]string{"Mcp-Param-Region": {"us-west"}, "Mcp-Param-Priority": {"42"}, "Mcp-Param-Verbose": {"false"},
		"Mcp-Param-City": {"=?base64?WsO8cmljaA==?="}, "Mcp-Param-Deep": {"=?base64?IHg=?="}}
	if got := ParamHeaderValues(specs, args); !reflect.DeepEqual(got, want) {
		t.Fatalf("headers = %v, want %v", got, want)
	}
	if got := ParamHeaderValues(specs, nil); got != nil {
		t.Fatalf("no arguments: %v", got)
	}
	if got := ParamHeaderValues(nil, args); got != nil {
		t.Fatalf("no specs: %v", got)
	}
}

func TestCheckParamHeaders(t *testing.T) {
	specs, err := ParseParamSpecs(json.RawMessage(`{"type":"object","properties":{
		"region":{"type":"string","x-mcp-header":"Region"},"n":{"type":"integer","x-mcp-header":"Priority"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	args := json.RawMessage(`{"region":"Zürich","n":42}`)
	cases := []struct {
		name string
		h    map[string][]string
		want string
	}{
		{"both right", map[string][]string{"Mcp-Param-Region": {"=?base64?WsO8cmljaA==?="}, "Mcp-Param-Priority": {"42.0"}}, ""},
		{"missing", map[string][]string{"Mcp-Param-Priority": {"42"}}, "missing"},
		{"mismatch", map[string][]string{"Mcp-Param-Region": {"=?base64?WsO8cmljaA==?="}, "Mcp-Param-Priority": {"41"}}, "does not match"},
		{"bad base64", map[string][]string{"Mcp-Param-Region": {"=?base64?@@?="}, "Mcp-Param-Priority": {"42"}}, "malformed"},
		{"control char", map[string][]string{"Mcp-Param-Region": {"Z\x01"}, "Mcp-Param-Priority": {"42"}}, "malformed"},
	}
	for _, tc := range cases {
		got := CheckParamHeaders(specs, args, tc.h)
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
	if got := CheckParamHeaders(specs, json.RawMessage(`{}`), nil); got != "" {
		t.Errorf("absent values need no headers: %q", got)
	}
	if got := CheckParamHeaders(nil, args, nil); got != "" {
		t.Errorf("unknown tool: %q", got)
	}
}

// FuzzParseParamSpecs feeds the parser schemas as an upstream may send them:
// it never panics, every spec it returns is usable, and the headers it
// builds from any arguments pass its own check.
func FuzzParseParamSpecs(f *testing.F) {
	f.Add([]byte(`{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"}}}`), []byte(`{"region":"eu"}`))
	f.Add([]byte(`{"properties":{"o":{"properties":{"n":{"type":"integer","x-mcp-header":"N"}}}}}`), []byte(`{"o":{"n":3}}`))
	f.Add([]byte(`{"properties":{"a":{"type":"string","x-mcp-header":"Dup"},"b":{"type":"string","x-mcp-header":"dup"}}}`), []byte(`{}`))
	f.Add([]byte(`{"properties":{"v":{"type":"boolean","x-mcp-header":"V"},"s":{"type":"string","x-mcp-header":"S"}}}`), []byte(`{"v":true,"s":"Zürich\n"}`))
	f.Add([]byte(`{"x-mcp-header":[1,{"properties":null}]}`), []byte(`null`))
	f.Fuzz(func(t *testing.T, schema, args []byte) {
		specs, err := ParseParamSpecs(schema)
		if err != nil {
			if specs != nil {
				t.Fatalf("specs %v with error %v", specs, err)
			}
			return
		}
		seen := map[string]bool{}
		for _, sp := range specs {
			if !strings.HasPrefix(sp.Header, HeaderParamPrefix) || !ValidParamHeaderName(strings.TrimPrefix(sp.Header, HeaderParamPrefix)) {
				t.Fatalf("invalid header %q", sp.Header)
			}
			if seen[strings.ToLower(sp.Header)] {
				t.Fatalf("header %q twice", sp.Header)
			}
			seen[strings.ToLower(sp.Header)] = true
			if sp.Type != "string" && sp.Type != "integer" && sp.Type != "boolean" || len(sp.Path) == 0 {
				t.Fatalf("unusable spec %+v", sp)
			}
		}
		h := ParamHeaderValues(specs, args)
		if why := CheckParamHeaders(specs, args, h); why != "" {
			t.Fatalf("own headers %v refused for %s: %s", h, args, why)
		}
	})
}
