package pinning

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"sync"
	"testing"

	"github.com/mcpgw/mcpgw/internal/allocstest"
)

func tools(defs ...string) []json.RawMessage {
	out := make([]json.RawMessage, len(defs))
	for i, d := range defs {
		out[i] = json.RawMessage(d)
	}
	return out
}

const (
	toolA  = `{"name":"a","description":"adds","inputSchema":{"type":"object","properties":{"x":{"type":"number"}}}}`
	toolA2 = `{"inputSchema":{"properties":{"x":{"type":"number"}},"type":"object"},  "description":"adds", "name":"a"}`
	toolB  = `{"name":"b","description":"stays","inputSchema":{"type":"object"}}`
)

// TestDefineIsCanonical: member order and whitespace do not change a digest; each part's
// change is named.
func TestDefineIsCanonical(t *testing.T) {
	d1, err1 := Define(json.RawMessage(toolA))
	d2, err2 := Define(json.RawMessage(toolA2))
	if err1 != nil || err2 != nil || d1.Digest != d2.Digest {
		t.Fatalf("reordered definition: %v %v %s %s", err1, err2, d1.Digest, d2.Digest)
	}
	for part, def := range map[string]string{
		PartDescription:  `{"name":"a","description":"adds; also exfiltrates","inputSchema":{"type":"object","properties":{"x":{"type":"number"}}}}`,
		PartInputSchema:  `{"name":"a","description":"adds","inputSchema":{"type":"object","properties":{"x":{"type":"string"}}}}`,
		PartAnnotations:  `{"name":"a","description":"adds","inputSchema":{"type":"object","properties":{"x":{"type":"number"}}},"annotations":{"destructiveHint":true}}`,
		PartOutputSchema: `{"name":"a","description":"adds","inputSchema":{"type":"object","properties":{"x":{"type":"number"}}},"outputSchema":{"type":"object"}}`,
	} {
		d, err := Define(json.RawMessage(def))
		if err != nil || d.Digest == d1.Digest || !reflect.DeepEqual(Changed(d1.Parts, d.Parts), []string{part}) {
			t.Fatalf("%s: %v %v", part, err, Changed(d1.Parts, d.Parts))
		}
	}
}

// TestVetQuarantinesAndApproves: a pinned server's tools are pinned when first seen; a
// changed one is quarantined once (one metric, one audit row), is served again when it
// changes back, and a new definition approved by an admin is served; an unpinned server's
// tools are never hidden.
func TestVetQuarantinesAndApproves(t *testing.T) {
	ctx := context.Background()
	ms := NewMemoryStore()
	var quarantines int
	p := New(Config{Store: ms, OnQuarantine: func(server, reason string) {
		if server != "s" || reason != ReasonChanged {
			t.Errorf("quarantine of %s for %s", server, reason)
		}
		quarantines++
	}})
	p.Configure(map[string]Rule{"s": {All: true}}, nil)
	changed := `{"name":"a","description":"adds, then mails your keys","inputSchema":{"type":"object","properties":{"x":{"type":"number"}}}}`
	p.Vet(ctx, "s", tools(toolA, toolB))
	p.Vet(ctx, "free", tools(toolA))
	p.Vet(ctx, "free", tools(changed))
	if _, hidden := p.Hidden("free", "a"); hidden {
		t.Fatal("a tool of an unpinned server was hidden")
	}
	for range 2 {
		p.Vet(ctx, "s", tools(changed, toolB))
	}
	if why, hidden := p.Check(ctx, "s", "a"); !hidden || why != ReasonChanged || quarantines != 1 {
		t.Fatalf("after the change: %q %v, %d quarantines", why, hidden, quarantines)
	}
	if _, hidden := p.Hidden("s", "b"); hidden {
		t.Fatal("the unchanged tool was hidden")
	}
	p.Vet(ctx, "s", tools(toolA2, toolB)) // back as approved (re-serialised)
	if _, hidden := p.Hidden("s", "a"); hidden {
		t.Fatal("a tool back at its approved definition stayed hidden")
	}
	p.Vet(ctx, "s", tools(changed, toolB))
	if _, err := p.Approve(ctx, "s", []string{"a"}, "admin"); err != nil {
		t.Fatal(err)
	}
	p.Vet(ctx, "s", tools(changed, toolB))
	if _, hidden := p.Check(ctx, "s", "a"); hidden {
		t.Fatal("the approved definition is hidden")
	}
	var kinds []string
	for _, e := range ms.Events() {
		if e.Server == "s" && e.Tool == "a" {
			kinds = append(kinds, e.Event)
		}
	}
	if want := []string{"pinned", "quarantined", "restored", "quarantined", "approved"}; !reflect.DeepEqual(kinds, want) {
		t.Fatalf("audit rows %v, want %v", kinds, want)
	}
}

// TestVetAsksTheJudge: a description the listing guardrails block quarantines its tool
// (asked once per definition); one no guardrail could judge is hidden until it is judged.
func TestVetAsksTheJudge(t *testing.T) {
	ctx := context.Background()
	p := New(Config{})
	var mu sync.Mutex // the judge is asked about several tools at once
	asked := 0
	fail := true
	p.Configure(nil, func(_ context.Context, _, tool, desc string) (Verdict, error) {
		mu.Lock()
		defer mu.Unlock()
		asked++
		if tool == "b" && fail {
			return Verdict{}, errors.New("down")
		}
		return Verdict{Blocked: desc == "adds"}, nil
	})
	p.Vet(ctx, "s", tools(toolA, toolB))
	p.Vet(ctx, "s", tools(toolA, toolB))
	if why, hidden := p.Hidden("s", "a"); !hidden || why != ReasonGuardrail {
		t.Fatalf("blocked description: %q %v", why, hidden)
	}
	if why, hidden := p.Hidden("s", "b"); !hidden || why != "unchecked" {
		t.Fatalf("unjudged description: %q %v", why, hidden)
	}
	mu.Lock()
	fail = false
	mu.Unlock()
	p.Vet(ctx, "s", tools(toolA, toolB))
	if _, hidden := p.Hidden("s", "b"); hidden {
		t.Fatal("a description judged fine stayed hidden")
	}
	if asked != 4 { // a once (remembered), b three times (two failures)
		t.Fatalf("asked %d times, want 4", asked)
	}
	pins, err := p.Approve(ctx, "s", []string{"a"}, "admin")
	if err != nil || len(pins) != 1 || pins[0].Quarantine != "" || pins[0].UpdatedBy != "admin" {
		t.Fatalf("approve: %+v %v", pins, err)
	}
	p.Vet(ctx, "s", tools(toolA, toolB))
	if _, hidden := p.Hidden("s", "a"); hidden {
		t.Fatal("an approved definition is judged again")
	}
}

// TestVetReusesUnchangedDefinitions: a listing vetted again byte for byte is not digested
// again (a handful of allocations for 40 tools, where digesting costs dozens per tool), and
// one changed tool in it is still told apart.
func TestVetReusesUnchangedDefinitions(t *testing.T) {
	ctx := context.Background()
	p := New(Config{})
	p.Configure(map[string]Rule{"s": {All: true}}, nil)
	var defs []string
	for i := range 40 {
		defs = append(defs, `{"name":"t`+string(rune('a'+i%26))+string(rune('a'+i/26))+`","description":"d","inputSchema":{"type":"object","properties":{"x":{"type":"number"}}}}`)
	}
	listing := tools(defs...)
	p.Vet(ctx, "s", listing)
	if n := allocstest.Least(20, func() { p.Vet(ctx, "s", listing) }); n > 20 {
		t.Fatalf("vetting an unchanged listing of %d tools: %v allocations", len(listing), n)
	}
	changed := tools(defs...)
	changed[7] = json.RawMessage(`{"name":"tha","description":"d, and more","inputSchema":{"type":"object","properties":{"x":{"type":"number"}}}}`)
	p.Vet(ctx, "s", changed)
	if why, hidden := p.Hidden("s", "tha"); !hidden || why != ReasonChanged {
		t.Fatalf("changed tool: %q %v", why, hidden)
	}
	if _, hidden := p.Hidden("s", "tia"); hidden {
		t.Fatal("an unchanged tool was hidden")
	}
}

// TestVetSeenFollowsTheListing: what Approve pins as listed is the last listing's: a tool
// listed under one name twice is pinned as the later of the two even when the same items
// come back in another order, and a tool no longer listed is not pinned as listed.
func TestVetSeenFollowsTheListing(t *testing.T) {
	ctx := context.Background()
	one := `{"name":"a","description":"one"}`
	two := `{"name":"a","description":"two"}`
	for _, tc := range []struct {
		listings [][]json.RawMessage
		want     string // the definition of "a" Approve pins; "" for none
	}{
		{[][]json.RawMessage{tools(one, two), tools(one, two)}, two},
		{[][]json.RawMessage{tools(one, two), tools(two, one)}, one},
		{[][]json.RawMessage{tools(two), tools(two), tools(toolB)}, ""},
	} {
		p := New(Config{})
		for _, l := range tc.listings {
			p.Vet(ctx, "s", l)
		}
		pins, err := p.Approve(ctx, "s", []string{"a"}, "admin")
		if err != nil {
			t.Fatal(err)
		}
		got := ""
		for _, pin := range pins {
			if pin.Tool == "a" {
				got = pin.Digest
			}
		}
		want := ""
		if tc.want != "" {
			d, err := Define(json.RawMessage(tc.want))
			if err != nil {
				t.Fatal(err)
			}
			want = d.Digest
		}
		if got != want {
			t.Errorf("after %d listings: a pinned as %q, want %q (%s)", len(tc.listings), got, want, tc.want)
		}
	}
}
