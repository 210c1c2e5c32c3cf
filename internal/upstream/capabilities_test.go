package upstream

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/mcpgw/mcpgw/internal/allocstest"
)

func TestCapabilitiesBySet(t *testing.T) {
	h := Handler(func(context.Context, json.RawMessage) (json.RawMessage, error) { return nil, nil })
	cases := []struct {
		in        *Interactions
		offer     Offer
		wantJSON  string
		wantKey   string
		modernSet int
	}{
		{nil, Offer{}, `{}`, "", 0},
		{&Interactions{Progress: func(json.RawMessage) {}}, Offer{}, `{}`, "", 0},
		{&Interactions{Elicit: h}, Offer{}, `{"elicitation":{"form":{},"url":{}}}`, "e", capElicit},
		{&Interactions{Sample: h}, Offer{Roots: true}, `{"roots":{},"sampling":{}}`, "rs", capSample},
		{nil, Offer{Elicitation: true, Sampling: true, Roots: true}, `{"elicitation":{"form":{},"url":{}},"roots":{},"sampling":{}}`, "ers", 0},
		{&Interactions{Elicit: h, Roots: h, Sample: h}, Offer{}, `{"elicitation":{"form":{},"url":{}},"roots":{},"sampling":{}}`, "ers", capElicit | capRoots | capSample},
	}
	for _, tc := range cases {
		caps, key := tc.in.capabilities(tc.offer)
		if string(caps) != tc.wantJSON || key != tc.wantKey {
			t.Errorf("capabilities(%+v) = %s %q, want %s %q", tc.offer, caps, key, tc.wantJSON, tc.wantKey)
		}
		if !json.Valid(caps) {
			t.Errorf("capabilities %s is not JSON", caps)
		}
		// A modern request's _meta tells what the call itself can answer,
		// never the session's offer.
		if got := tc.in.capBits(Offer{}); got != tc.modernSet {
			t.Errorf("capBits = %d, want %d", got, tc.modernSet)
		}
	}
	in := &Interactions{Elicit: h}
	if n := allocstest.Least(100, func() { _, _ = in.capabilities(Offer{Roots: true}) }); n != 0 {
		t.Errorf("capabilities allocates %v times per call", n)
	}
}
