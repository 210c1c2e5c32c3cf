package front

import (
	"encoding/json"
	"errors"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcpgw/mcpgw/internal/store"
)

func TestDecodeGenerate(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	nk, err := decodeGenerate([]byte(`{"key_alias":"a","duration":"30d","user_id":"u","team_id":"t",
		"organization_id":"o","metadata":{ "x" : 1 },"rpm_limit":5,"max_parallel_requests":2,"mcp_rpm_limit":{"fx":3},
		"object_permission":{"mcp_servers":["fx",""],"mcp_access_groups":[],"mcp_tool_permissions":{"fx":["t1"],"y":[]},
		"mcp_toolsets":[],"blocked_tools":null}}`), now)
	if err != nil {
		t.Fatal(err)
	}
	if nk.Alias != "a" || nk.UserID != "u" || nk.TeamID != "t" || nk.OrganizationID != "o" ||
		string(nk.Metadata) != `{"x":1}` || *nk.RPMLimit != 5 || *nk.MaxParallelRequests != 2 || nk.MCPRPMLimit["fx"] != 3 ||
		!nk.Expires.Equal(now.Add(30*24*time.Hour)) || len(nk.Permission.MCPServers) != 1 ||
		nk.Permission.MCPAccessGroups != nil || len(nk.Permission.MCPToolPermissions) != 1 ||
		nk.Permission.MCPToolsets != nil || nk.Permission.BlockedTools != nil {
		t.Fatalf("decoded %+v", nk)
	}
	// Toolsets are refused, never stored: the gateway has no toolset registry to enforce them.
	_, err = decodeGenerate([]byte(`{"object_permission":{"mcp_toolsets":["x"]}}`), now)
	var br *badRequest
	if !errors.As(err, &br) || !strings.Contains(err.Error(), "not supported") {
		t.Errorf("object_permission.mcp_toolsets set: %v, want a 400 saying it is not supported", err)
	}
	// blocked_tools is enforced, so it is kept.
	nk, err = decodeGenerate([]byte(`{"object_permission":{"blocked_tools":["fx-rm","drop",""]}}`), now)
	if err != nil || !slices.Equal(nk.Permission.BlockedTools, []string{"fx-rm", "drop"}) {
		t.Errorf("blocked_tools: %v %q", err, nk.Permission.BlockedTools)
	}
	for _, d := range []struct {
		in   string
		want time.Duration
	}{{"1s", time.Second}, {"15m", 15 * time.Minute}, {"1h", time.Hour}, {"2w", 14 * 24 * time.Hour}, {"1mo", 30 * 24 * time.Hour}} {
		if got, err := parseDuration(d.in); err != nil || got != d.want {
			t.Errorf("parseDuration(%q) = %v, %v", d.in, got, err)
		}
	}
	for _, bad := range []string{"", "0d", "-1d", "+1d", "1", "d", "1y", "1.5h", "99999999999999d", " 1d"} {
		if _, err := parseDuration(bad); err == nil {
			t.Errorf("parseDuration(%q) accepted", bad)
		}
	}
}

func TestTokenOf(t *testing.T) {
	if got, _ := tokenOf("key", "sk-abc"); got != store.Hash("sk-abc") {
		t.Fatal("an sk- key is not hashed")
	}
	tok := store.Hash("sk-abc")
	if got, _ := tokenOf("key", tok); got != tok {
		t.Fatal("a token is not taken as is")
	}
	for _, bad := range []string{"abc", strings.ToUpper(tok), tok[:63] + "g"} {
		if _, err := tokenOf("key", bad); err == nil {
			t.Errorf("tokenOf(%q) accepted", bad)
		}
	}
}

// checkDecoded asserts what every decoder promises: an error is a badRequest with a message,
// and a success is within the documented bounds.
func checkDecoded(t *testing.T, err error) {
	t.Helper()
	var br *badRequest
	if err != nil && (!errors.As(err, &br) || br.msg == "") {
		t.Fatalf("error %v (%T) is not a badRequest", err, err)
	}
}

func FuzzDecodeGenerate(f *testing.F) {
	for _, s := range []string{`{}`, `{"key_alias":"a","duration":"1h"}`, `{"metadata":{"a":[1,2]}}`,
		`{"object_permission":{"mcp_tool_permissions":{"s":["t"]}}}`, `{"mcp_rpm_limit":{"s":1}}`, `{"rpm_limit":1e3}`,
		`{"key_alias":null}`, `[1]`, `{"a":1}`, `{} x`} {
		f.Add([]byte(s))
	}
	now := time.Unix(0, 0)
	f.Fuzz(func(t *testing.T, body []byte) {
		nk, err := decodeGenerate(body, now)
		checkDecoded(t, err)
		if err != nil {
			return
		}
		if len(nk.Alias) > maxIDLen || len(nk.Metadata) > maxMetadataBytes || len(nk.Permission.MCPServers) > maxListLen ||
			(nk.RPMLimit != nil && *nk.RPMLimit < 0) || (nk.Expires != nil && !nk.Expires.After(now)) {
			t.Fatalf("out of bounds: %+v", nk)
		}
		if nk.Metadata != nil && !json.Valid(nk.Metadata) {
			t.Fatalf("metadata %q is not JSON", nk.Metadata)
		}
		if _, err := json.Marshal(nk.Permission); err != nil {
			t.Fatal(err)
		}
	})
}

func FuzzDecodeKeyRefs(f *testing.F) {
	for _, s := range []string{`{"key":"sk-a"}`, `{"key":"sk-a","key_alias":"x","duration":null}`, `{"keys":["sk-a","sk-a"]}`, `{"key":""}`, `{"keys":null}`, `{`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		tok, err := decodeKeyRef(body)
		checkDecoded(t, err)
		if err == nil && len(tok) != 64 {
			t.Fatalf("token %q", tok)
		}
		if tok, change, err := decodeUpdate(body, time.Unix(0, 0)); err == nil {
			var k store.Key
			change(&k)
			if len(tok) != 64 || len(k.Alias) > maxIDLen {
				t.Fatalf("update: %q %+v", tok, k)
			}
		} else {
			checkDecoded(t, err)
		}
		toks, err := decodeDelete(body)
		checkDecoded(t, err)
		if err == nil && (len(toks) == 0 || len(toks) > maxListLen) {
			t.Fatalf("tokens %v", toks)
		}
	})
}

func FuzzDecodeRegenerate(f *testing.F) {
	for _, s := range []struct{ body, path string }{{`{"key":"sk-a"}`, ""}, {``, "sk-a"}, {`{}`, store.Hash("sk-a")},
		{`{"key":"sk-a","key_alias":"x","duration":"1d","metadata":{"a":1}}`, ""}, {`{"key":"sk-a"}`, "sk-b"},
		{`{"key":"sk-a","new_key":"sk-b"}`, ""}, {`{"new_master_key":null,"key":"sk-a"}`, ""}, {`{"key":null}`, ""}, {`[`, "x"}} {
		f.Add([]byte(s.body), s.path)
	}
	f.Fuzz(func(t *testing.T, body []byte, path string) {
		tok, change, err := decodeRegenerate(body, path, time.Unix(0, 0))
		checkDecoded(t, err)
		if err != nil {
			return
		}
		k := store.Key{Token: "x"}
		change(&k)
		if len(tok) != 64 || len(k.Alias) > maxIDLen || k.Token != "x" {
			t.Fatalf("regenerate: %q %+v", tok, k)
		}
		if path != "" {
			if want, _ := tokenOf("key", path); tok != want {
				t.Fatalf("token %q is not the path's key %q", tok, path)
			}
		}
	})
}

// /key/list pages 10 keys by default (LiteLLM's default), up to 100 when asked.
func TestDecodeListPages(t *testing.T) {
	for _, tc := range []struct {
		query          string
		offset, limit  int
		page           int
		full, wantFail bool
	}{
		{"", 0, 10, 1, false, false},
		{"page=3", 20, 10, 3, false, false},
		{"page=2&size=100", 100, 100, 2, false, false},
		{"return_full_object=true", 0, 10, 1, true, false},
		{"size=101", 0, 0, 0, false, true},
		{"size=1&size=2", 0, 0, 0, false, true},
		{"team=x", 0, 0, 0, false, true},
	} {
		q, _ := url.ParseQuery(tc.query)
		lq, page, full, err := decodeList(q)
		if (err != nil) != tc.wantFail {
			t.Errorf("%q: err %v", tc.query, err)
			continue
		}
		if !tc.wantFail && (lq.Offset != tc.offset || lq.Limit != tc.limit || page != tc.page || full != tc.full) {
			t.Errorf("%q: offset %d limit %d page %d full %v", tc.query, lq.Offset, lq.Limit, page, full)
		}
	}
}
