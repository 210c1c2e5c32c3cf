package e2e

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/mcpgw/mcpgw/internal/testpeers"
)

func sha256Hex(s string) string {
	d := sha256.Sum256([]byte(s))
	return hex.EncodeToString(d[:])
}

// regenerate calls path with body and returns the new secret, failing unless the answer is a
// 200 whose key, token and token_id agree.
func regenerate(t *testing.T, gw, path, body string) map[string]any {
	t.Helper()
	status, m := manage(t, http.MethodPost, gw+path, testKey, body)
	secret, _ := m["key"].(string)
	if status != 200 || !strings.HasPrefix(secret, "sk-") || m["token"] != sha256Hex(secret) || m["token_id"] != m["token"] ||
		m["key_name"] != "sk-..."+secret[len(secret)-4:] {
		t.Fatalf("POST %s = %d %v", path, status, m)
	}
	return m
}

// TestKeyRegenerate: /key/regenerate (and /key/{key}/regenerate) gives a key a new secret: the
// old one is refused at once although its lookup was cached, the new one works with the same
// permissions, alias and team, optional fields change as /key/update changes them, and a
// blocked key stays blocked.
func TestKeyRegenerate(t *testing.T) {
	forEachStore(t, func(t *testing.T, st storeBackend) {
		fixture := testpeers.StartGoFixtureHTTP(t, false)
		gw := startGatewayWithStore(t, st, fmt.Sprintf("general_settings:\n  master_key: %s\nmcp_servers:\n  fx:\n    url: %s\n  other:\n    url: %s\n",
			testKey, fixture, fixture))
		if status, m := manage(t, http.MethodPost, gw+"/team/new", testKey, `{"team_id":"team-a"}`); status != 200 {
			t.Fatalf("/team/new = %d %v", status, m)
		}
		old := generateKey(t, gw, `{"key_alias":"ci","team_id":"team-a","metadata":{"app":"ci"},"object_permission":{"mcp_servers":["fx"]}}`)
		if status, _ := callAs(t, gw, old, "fx-test_simple_text"); status != 200 {
			t.Fatalf("the key before regenerating: %d", status)
		}

		m := regenerate(t, gw, "/key/regenerate", `{"key":"`+old+`"}`)
		first := m["key"].(string)
		if first == old || m["key_alias"] != "ci" || m["team_id"] != "team-a" || m["blocked"] != false {
			t.Fatalf("regenerated key = %v", m)
		}
		status, body := callAs(t, gw, old, "fx-test_simple_text")
		if status != 401 || !strings.Contains(errMessage(body), "no such key") {
			t.Fatalf("the old secret after regenerating: %d %v, want 401", status, body)
		}
		if status, _ := callAs(t, gw, first, "fx-test_simple_text"); status != 200 {
			t.Fatalf("the new secret: %d", status)
		}
		if _, body := listAs(t, gw, first); !slices.Contains(toolsOf(body), "fx-test_simple_text") ||
			slices.ContainsFunc(toolsOf(body), func(s string) bool { return strings.HasPrefix(s, "other-") }) {
			t.Fatalf("the new secret's tools: %v, want the fx server's only", toolsOf(body))
		}

		// LiteLLM's path form, by token, with an update; then by secret with no body.
		m = regenerate(t, gw, "/key/"+sha256Hex(first)+"/regenerate", `{"key_alias":"ci-2","metadata":{"app":"ci","n":2}}`)
		second := m["key"].(string)
		if md, _ := m["metadata"].(map[string]any); m["key_alias"] != "ci-2" || m["team_id"] != "team-a" || md["n"] != 2.0 {
			t.Fatalf("regenerate with changes = %v", m)
		}
		third := regenerate(t, gw, "/key/"+second+"/regenerate", "")["key"].(string)
		for _, retired := range []string{first, second} {
			if status, _ := callAs(t, gw, retired, "fx-test_simple_text"); status != 401 {
				t.Fatalf("a retired secret: %d, want 401", status)
			}
		}
		_, info := manage(t, http.MethodGet, gw+"/key/info?key="+third, testKey, "")
		if in, _ := info["info"].(map[string]any); in["key_alias"] != "ci-2" {
			t.Fatalf("/key/info of the newest secret = %v", info)
		}

		// A blocked key stays blocked under its new secret.
		if status, m := manage(t, http.MethodPost, gw+"/key/block", testKey, `{"key":"`+third+`"}`); status != 200 {
			t.Fatalf("/key/block = %d %v", status, m)
		}
		m = regenerate(t, gw, "/key/regenerate", `{"key":"`+third+`"}`)
		if m["blocked"] != true {
			t.Fatalf("regenerating a blocked key unblocked it: %v", m)
		}
		status, body = callAs(t, gw, m["key"].(string), "fx-test_simple_text")
		if status != 401 || !strings.Contains(errMessage(body), "blocked") {
			t.Fatalf("the blocked key's new secret: %d %v, want 401 saying blocked", status, body)
		}
	})
}

// TestKeyRegenerateRefusesBadInput: a missing key is 404, bad bodies are 400 naming the field,
// only the master key may regenerate, a secret in the path never comes back in a message, and
// nothing refused changes the key.
func TestKeyRegenerateRefusesBadInput(t *testing.T) {
	forEachStore(t, func(t *testing.T, st storeBackend) {
		gw := startGatewayWithStore(t, st, "general_settings:\n  master_key: "+testKey+"\n")
		key := generateKey(t, gw, `{"key_alias":"a"}`)
		generateKey(t, gw, `{"key_alias":"taken"}`)
		ref := `"key":"` + key + `"`
		tests := []struct {
			name, caller, path, body string
			status                   int
			want                     string
		}{
			{"missing key", testKey, "/key/regenerate", `{"key":"sk-nope"}`, 404, "not found"},
			{"missing key in the path", testKey, "/key/sk-nope/regenerate", ``, 404, "not found"},
			{"no key", testKey, "/key/regenerate", `{}`, 400, "key: required"},
			{"empty body", testKey, "/key/regenerate", ``, 400, "want a JSON object"},
			{"malformed", testKey, "/key/regenerate", `{` + ref, 400, "malformed JSON"},
			{"unknown field", testKey, "/key/regenerate", `{` + ref + `,"models":[]}`, 400, `unknown field "models"`},
			{"field case", testKey, "/key/regenerate", `{"KEY":"` + key + `"}`, 400, `unknown field "KEY"`},
			{"caller-chosen secret", testKey, "/key/regenerate", `{` + ref + `,"new_key":"sk-mine"}`, 400, "new_key: not accepted"},
			{"master key rotation", testKey, "/key/regenerate", `{` + ref + `,"new_master_key":"sk-m"}`, 400, "general_settings.master_key"},
			{"not a key", testKey, "/key/regenerate", `{"key":"abc"}`, 400, "want a key (sk-...) or its token"},
			{"not a key in the path", testKey, "/key/abc/regenerate", `{}`, 400, "want a key (sk-...) or its token"},
			{"path and body differ", testKey, "/key/" + key + "/regenerate", `{"key":"sk-other"}`, 400, "different keys"},
			{"duplicate alias", testKey, "/key/regenerate", `{` + ref + `,"key_alias":"taken"}`, 400, "key_alias already in use"},
			{"bad duration", testKey, "/key/regenerate", `{` + ref + `,"duration":"soon"}`, 400, "duration"},
			{"no credential", "", "/key/regenerate", `{` + ref + `}`, 401, "missing credential"},
			{"a key without a user may not regenerate itself", key, "/key/" + key + "/regenerate", ``, 403, "your role does not allow you to change this key"},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				status, m := manage(t, http.MethodPost, gw+tt.path, tt.caller, tt.body)
				e, _ := m["error"].(map[string]any)
				msg := fmt.Sprint(e["message"])
				if status != tt.status || e["code"] != fmt.Sprint(tt.status) || !strings.Contains(msg, tt.want) {
					t.Fatalf("= %d %v, want %d with %q", status, m, tt.status, tt.want)
				}
				if strings.Contains(msg, key[3:]) {
					t.Fatalf("the message shows the secret: %q", msg)
				}
			})
		}
		// Nothing above changed the key: its secret and alias are as generated.
		_, info := manage(t, http.MethodGet, gw+"/key/info?key="+key, testKey, "")
		if in, _ := info["info"].(map[string]any); in["key_alias"] != "a" {
			t.Fatalf("a refused regenerate changed the key: %v", info)
		}
	})
}
