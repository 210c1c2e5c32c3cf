package front

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mcpgw/mcpgw/internal/store"
)

func TestDecodeRegenerate(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tok, change, err := decodeRegenerate([]byte(`{"key":"sk-a","key_alias":"b","duration":"1h"}`), "", now)
	if err != nil || tok != store.Hash("sk-a") {
		t.Fatalf("decode: %q %v", tok, err)
	}
	k := store.Key{Alias: "a", TeamID: "t"}
	change(&k)
	if k.Alias != "b" || k.TeamID != "t" || !k.Expires.Equal(now.Add(time.Hour)) {
		t.Fatalf("changed key %+v: want the alias and expiry changed, the team kept", k)
	}
	// The path's key with an empty body; the same key named twice is fine.
	for _, body := range []string{"", " ", `{"key":"sk-a"}`, `{"key":"` + store.Hash("sk-a") + `"}`} {
		if tok, _, err := decodeRegenerate([]byte(body), "sk-a", now); err != nil || tok != store.Hash("sk-a") {
			t.Errorf("body %q with the path's key: %q %v", body, tok, err)
		}
	}
	for _, tc := range []struct{ body, path, want string }{
		{`{"key":"sk-a"}`, "sk-b", "different keys"},
		{`{"key":"sk-a","new_key":"sk-b"}`, "", "new_key: not accepted"},
		{`{"key":"sk-a","new_master_key":"sk-b"}`, "", "new_master_key"},
		{`{}`, "", "key: required"},
		{``, "", "want a JSON object"},
		{`{"key":"sk-a","blocked":false}`, "", `unknown field "blocked"`},
	} {
		if _, _, err := decodeRegenerate([]byte(tc.body), tc.path, now); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q (path %q): %v, want an error with %q", tc.body, tc.path, err, tc.want)
		}
	}
}

// TestHideKeyInPath: what runs behind /key/{key}/regenerate (the authenticator, its messages)
// sees the key's token, never the secret, and the path's key is still readable.
func TestHideKeyInPath(t *testing.T) {
	var seenPath, seenURI, seenKey string
	mux := http.NewServeMux()
	mux.HandleFunc("POST /key/{key}/regenerate", hideKeyInPath("/key/", "/regenerate", func(w http.ResponseWriter, r *http.Request) {
		seenPath, seenURI, seenKey = r.URL.Path, r.RequestURI, r.PathValue("key")
	}))
	for ref, want := range map[string]string{"sk-secret": store.Hash("sk-secret"), store.Hash("x"): store.Hash("x"), "junk": "not-a-key"} {
		mux.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodPost, "/key/"+ref+"/regenerate?q=1", nil))
		if seenPath != "/key/"+want+"/regenerate" || seenURI != seenPath+"?q=1" || seenKey != ref {
			t.Errorf("%s: handler saw path %q, uri %q, key %q", ref, seenPath, seenURI, seenKey)
		}
	}
}
