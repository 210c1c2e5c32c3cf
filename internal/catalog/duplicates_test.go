package catalog

import (
	"crypto/sha256"
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/mcpgw/mcpgw/internal/fakemcp"
	"github.com/mcpgw/mcpgw/internal/mcp"
)

// The same resource URI from three servers is listed once, as the first
// server (in order) lists it, which is also the one reads go to; the
// operator is warned once per URI, with the servers named and without the
// parts of the URI that carry credentials.
func TestDuplicateResourceURIsListedOnceWarnedOnce(t *testing.T) {
	const secretURI = "https://user:PASSWORD@files.example/report?token=SECRET-TOKEN"
	item := func(server, uri string) json.RawMessage {
		b, _ := json.Marshal(map[string]string{"uri": uri, "name": server})
		return b
	}
	var ups []upSpec
	for _, name := range []string{"a", "b", "c"} {
		items := []json.RawMessage{item(name, secretURI), item(name, "file:///"+name)}
		if name != "a" {
			items = append(items, item(name, "file:///bc"))
		}
		ups = append(ups, upSpec{name: name, fake: fakemcp.New(t, fakemcp.Opts{Legacy: name == "b", Lists: map[string][]json.RawMessage{mcp.MethodResourcesList: items}})})
	}
	var logs fakemcp.LogBuffer
	cat := newTestCatalog(t, Config{Logger: logs.Logger()}, ups...)
	q := Query{Servers: []string{"a", "b", "c"}, Binding: "x"}
	for round := range 3 {
		l := mustList(t, cat, q, mcp.MethodResourcesList, "")
		got := make([]string, 0, len(l.items))
		for _, it := range l.items {
			got = append(got, it["uri"].(string)+"@"+it["name"].(string))
		}
		want := secretURI + "@a,file:///a@a,file:///b@b,file:///bc@b,file:///c@c"
		if strings.Join(got, ",") != want {
			t.Fatalf("round %d: resources = %v, want %s", round, got, want)
		}
		if !jsonEqual(t, l.outcomes, `{"a":{"status":"ok","count":2},"b":{"status":"ok","count":2},"c":{"status":"ok","count":1}}`) {
			t.Fatalf("outcomes = %v", l.outcomes)
		}
	}
	if owner, _ := cat.ResourceOwner(t.Context(), q, secretURI); owner != "a" {
		t.Fatalf("reads go to %q, want a", owner)
	}
	var warns []map[string]any
	for _, r := range logs.Records(t) {
		if r["level"] == "ERROR" {
			t.Fatalf("a duplicate is not an error: %v", r)
		}
		if r["level"] == "WARN" && strings.Contains(r["msg"].(string), "several upstreams") {
			warns = append(warns, r)
		}
	}
	if len(warns) != 2 {
		t.Fatalf("want one warning per duplicate URI over three listings, got %d:\n%s", len(warns), logs.String())
	}
	for _, w := range warns {
		switch w["served_by"] {
		case "a":
			if !jsonEqual(t, w["ignored"], `["b","c"]`) || w["uri"] != "https://files.example/report?…" || w["uri_sha256"] == "" {
				t.Errorf("warning %v", w)
			}
		case "b":
			if !jsonEqual(t, w["ignored"], `["c"]`) || w["uri"] != "file:///bc" {
				t.Errorf("warning %v", w)
			}
		default:
			t.Errorf("warning %v", w)
		}
	}
	if s := logs.String(); strings.Contains(s, "SECRET-TOKEN") || strings.Contains(s, "PASSWORD") {
		t.Fatalf("a credential in a URI reached the log:\n%s", s)
	}
}

// The record of URIs already warned about is bounded: it starts over when
// full.
func TestWarnedURIsBounded(t *testing.T) {
	var w warnedURIs
	digest := func(i int) [sha256.Size]byte { return sha256.Sum256([]byte(strconv.Itoa(i))) }
	for i := range maxWarnedURIs + 10 {
		if !w.first(digest(i)) {
			t.Fatalf("URI %d reported as warned already", i)
		}
		if len(w.seen) > maxWarnedURIs {
			t.Fatalf("record holds %d > %d", len(w.seen), maxWarnedURIs)
		}
	}
	if w.first(digest(maxWarnedURIs + 9)) {
		t.Fatal("a recent URI was warned about twice")
	}
}
