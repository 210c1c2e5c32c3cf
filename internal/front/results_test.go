package front

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// Caching hints a modern result must carry: the upstream's when valid, the
// conservative defaults otherwise; never on input_required.
func TestWithCacheHints(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"2025-era result", `{"contents":[]}`, `{"contents":[],"ttlMs":0,"cacheScope":"private"}`},
		{"upstream hints kept", `{"contents":[],"ttlMs":5000,"cacheScope":"public"}`, `{"contents":[],"ttlMs":5000,"cacheScope":"public"}`},
		{"scope only", `{"contents":[],"cacheScope":"public"}`, `{"contents":[],"cacheScope":"public","ttlMs":0}`},
		{"negative ttl", `{"ttlMs":-5,"cacheScope":"private"}`, `{"ttlMs":0,"cacheScope":"private"}`},
		{"fractional ttl", `{"ttlMs":1.5,"cacheScope":"private"}`, `{"ttlMs":0,"cacheScope":"private"}`},
		{"string ttl", `{"ttlMs":"10","cacheScope":"private"}`, `{"ttlMs":0,"cacheScope":"private"}`},
		{"huge ttl", `{"ttlMs":99999999999999999999,"cacheScope":"private"}`, `{"ttlMs":0,"cacheScope":"private"}`},
		{"unknown scope", `{"ttlMs":1,"cacheScope":"shared"}`, `{"ttlMs":1,"cacheScope":"private"}`},
		{"complete marked", `{"resultType":"complete"}`, `{"resultType":"complete","ttlMs":0,"cacheScope":"private"}`},
		{"input_required untouched", `{"resultType":"input_required","inputRequests":{}}`, `{"resultType":"input_required","inputRequests":{}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := &MCP{serverInfo: []byte(`{"name":"gw"}`)}
			var got map[string]any
			if err := json.Unmarshal(h.appendModern(nil, []byte(tc.in), true), &got); err != nil {
				t.Fatal(err)
			}
			if got["_meta"] == nil || (!strings.Contains(tc.in, "resultType") && got["resultType"] != "complete") {
				t.Fatalf("appendModern(%s) = %v: no _meta or resultType", tc.in, got)
			}
			delete(got, "_meta")
			if !strings.Contains(tc.in, "resultType") {
				delete(got, "resultType")
			}
			if !jsonEqual(t, got, tc.want) {
				t.Fatalf("appendModern(%s) = %s, want %s", tc.in, got, tc.want)
			}
		})
	}
}

// jsonEqual reports whether got (raw JSON or a decoded value) equals want.
func jsonEqual(t *testing.T, got any, want string) bool {
	t.Helper()
	var w any
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("bad want JSON %s: %v", want, err)
	}
	var b []byte
	switch g := got.(type) {
	case json.RawMessage:
		b = g
	case []byte:
		b = g
	default:
		b, _ = json.Marshal(got)
	}
	var g any
	if err := json.Unmarshal(b, &g); err != nil {
		return false
	}
	return reflect.DeepEqual(g, w)
}
