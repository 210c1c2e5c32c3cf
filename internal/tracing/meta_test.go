package tracing

import (
	"encoding/json"
	"net/http"
	"testing"

	"go.opentelemetry.io/otel/propagation"
)

func TestWithMeta(t *testing.T) {
	carrier := propagation.MapCarrier{"traceparent": "00-aa-bb-01", "tracestate": "v=1"}
	cases := []struct{ in, want string }{
		{``, `{"_meta":{"traceparent":"00-aa-bb-01","tracestate":"v=1"}}`},
		{`{"name":"x","arguments":{"a":  1}}`, `{"name":"x","arguments":{"a":  1},"_meta":{"traceparent":"00-aa-bb-01","tracestate":"v=1"}}`},
		{`{"_meta":{"progressToken":3,"traceparent":"old"},"name":"x"}`, `{"_meta":{"progressToken":3,"traceparent":"00-aa-bb-01","tracestate":"v=1"},"name":"x"}`},
		{`[1]`, `[1]`},
		{`{"_meta":5}`, `{"_meta":5}`},
	}
	for _, tc := range cases {
		got := string(withMeta(json.RawMessage(tc.in), carrier))
		if got != tc.want {
			t.Errorf("withMeta(%s) = %s, want %s", tc.in, got, tc.want)
		}
	}
}

func TestMetaCarrier(t *testing.T) {
	c := metaCarrier(`{"traceparent":"00-x","other":1}`)
	if c.Get("traceparent") != "00-x" || c.Get("tracestate") != "" || c.Get("other") != "" {
		t.Fatal("metaCarrier reads the wrong members")
	}
}

// FuzzWithMeta: from any JSON value withMeta makes a JSON value, without panicking (params
// reach it valid: the front refuses a request that is not JSON, as the scanners it uses
// require).
func FuzzWithMeta(f *testing.F) {
	for _, seed := range []string{``, `{}`, `{"_meta":{"a":1}}`, `{"_meta":null}`, `{"_meta":5}`, `[1]`, `{"a":"\u00e9"}`} {
		f.Add(seed)
	}
	carrier := propagation.MapCarrier{"traceparent": "00-aa-bb-01", "tracestate": "v=1", "baggage": "k=v"}
	f.Fuzz(func(t *testing.T, in string) {
		if !json.Valid([]byte(in)) {
			return
		}
		if out := withMeta(json.RawMessage(in), carrier); !json.Valid(out) {
			t.Fatalf("withMeta(%q) = %q, not JSON", in, out)
		}
	})
}

// TestHeaderKeysAreMetaKeys: headerKeys spells each of metaKeys as net/http
// canonicalises it, in the same order (Outgoing writes the headers by index).
func TestHeaderKeysAreMetaKeys(t *testing.T) {
	for i, k := range metaKeys {
		if want := http.CanonicalHeaderKey(k); headerKeys[i] != want {
			t.Errorf("headerKeys[%d] = %q, want %q", i, headerKeys[i], want)
		}
	}
}
