package app

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/mcpgw/mcpgw/internal/fault"
	"github.com/mcpgw/mcpgw/internal/identity"
	"github.com/mcpgw/mcpgw/internal/limits"
)

func n64(n int64) *int64 { return &n }

// testRoutes resolves github's name, alias and id, and slack's name.
var testRoutes = map[string]string{"github": "github", "gh": "github", "github-id": "github", "slack": "slack"}

func newCallerLimits(now *time.Time) *callerLimits {
	return &callerLimits{gate: newSharedGate(nil, "", limits.RedisOptions{}), rpms: &rpms{},
		resolve: func(ref string) (string, bool) { s, ok := testRoutes[ref]; return s, ok },
		log:     slog.New(slog.DiscardHandler), now: func() time.Time { return *now }}
}

// The rules of the key and team limits on tool calls: which limit holds,
// whose counter it uses and what a refusal says.
func TestCallerLimitRules(t *testing.T) {
	key := func(hash, team string, own, teams identity.Limits) *identity.Caller {
		return &identity.Caller{KeyHash: hash, TeamID: team, KeyLimits: own, TeamLimits: teams}
	}
	for _, tc := range []struct {
		name string
		// calls are made in order: caller, server; want is how many of the
		// calls are admitted, in order (true admitted).
		calls   []*identity.Caller
		servers []string
		want    []bool
		refusal string // the last refusal's message
	}{
		{name: "no limits admit everything",
			calls: []*identity.Caller{key("k1", "", identity.Limits{}, identity.Limits{}), key("k1", "", identity.Limits{}, identity.Limits{}), key("k1", "", identity.Limits{}, identity.Limits{})},
			want:  []bool{true, true, true}},
		{name: "key rpm_limit",
			calls:   []*identity.Caller{key("k1", "", identity.Limits{RPM: n64(2)}, identity.Limits{}), key("k1", "", identity.Limits{RPM: n64(2)}, identity.Limits{}), key("k1", "", identity.Limits{RPM: n64(2)}, identity.Limits{})},
			want:    []bool{true, true, false},
			refusal: "request limit reached for this key (rpm_limit 2 per minute)"},
		{name: "the key's rpm_limit wins over its team's, larger or smaller",
			calls: []*identity.Caller{key("k1", "t", identity.Limits{RPM: n64(3)}, identity.Limits{RPM: n64(1)}), key("k1", "t", identity.Limits{RPM: n64(3)}, identity.Limits{RPM: n64(1)}),
				key("k2", "t", identity.Limits{RPM: n64(1)}, identity.Limits{RPM: n64(5)}), key("k2", "t", identity.Limits{RPM: n64(1)}, identity.Limits{RPM: n64(5)})},
			want:    []bool{true, true, true, false},
			refusal: "request limit reached for this key (rpm_limit 1 per minute)"},
		{name: "a team's members share the team's rpm_limit",
			calls:   []*identity.Caller{key("k1", "t", identity.Limits{}, identity.Limits{RPM: n64(2)}), key("k2", "t", identity.Limits{}, identity.Limits{RPM: n64(2)}), key("k3", "t", identity.Limits{}, identity.Limits{RPM: n64(2)})},
			want:    []bool{true, true, false},
			refusal: `request limit reached for team "t" (rpm_limit 2 per minute)`},
		{name: "other teams do not share",
			calls: []*identity.Caller{key("k1", "t", identity.Limits{}, identity.Limits{RPM: n64(1)}), key("k2", "u", identity.Limits{}, identity.Limits{RPM: n64(1)})},
			want:  []bool{true, true}},
		{name: "rpm_limit 0 admits no call",
			calls:   []*identity.Caller{key("k1", "", identity.Limits{RPM: n64(0)}, identity.Limits{})},
			want:    []bool{false},
			refusal: "request limit reached for this key (rpm_limit 0 per minute)"},
		{name: "mcp_rpm_limit by name holds for that server only",
			calls:   []*identity.Caller{key("k1", "", identity.Limits{ServerRPM: map[string]int64{"github": 1}}, identity.Limits{}), key("k1", "", identity.Limits{ServerRPM: map[string]int64{"github": 1}}, identity.Limits{}), key("k1", "", identity.Limits{ServerRPM: map[string]int64{"github": 1}}, identity.Limits{})},
			servers: []string{"github", "slack", "github"},
			want:    []bool{true, true, false},
			refusal: "request limit reached for this key on server github (mcp_rpm_limit 1 per minute)"},
		{name: "mcp_rpm_limit by alias",
			calls:   []*identity.Caller{key("k1", "", identity.Limits{ServerRPM: map[string]int64{"gh": 1}}, identity.Limits{}), key("k1", "", identity.Limits{ServerRPM: map[string]int64{"gh": 1}}, identity.Limits{})},
			servers: []string{"github", "github"},
			want:    []bool{true, false}},
		{name: "mcp_rpm_limit by id, the smallest entry naming the server holds",
			calls:   []*identity.Caller{key("k1", "", identity.Limits{ServerRPM: map[string]int64{"github-id": 1, "github": 5}}, identity.Limits{}), key("k1", "", identity.Limits{ServerRPM: map[string]int64{"github-id": 1, "github": 5}}, identity.Limits{})},
			servers: []string{"github", "github"},
			want:    []bool{true, false}},
		{name: "an entry naming no server limits nothing",
			calls:   []*identity.Caller{key("k1", "", identity.Limits{ServerRPM: map[string]int64{"nope": 0}}, identity.Limits{}), key("k1", "", identity.Limits{ServerRPM: map[string]int64{"nope": 0}}, identity.Limits{})},
			servers: []string{"github", "github"},
			want:    []bool{true, true}},
		{name: "the key's mcp_rpm_limit for a server wins over its team's",
			calls:   []*identity.Caller{key("k1", "t", identity.Limits{ServerRPM: map[string]int64{"github": 2}}, identity.Limits{ServerRPM: map[string]int64{"gh": 1}}), key("k1", "t", identity.Limits{ServerRPM: map[string]int64{"github": 2}}, identity.Limits{ServerRPM: map[string]int64{"gh": 1}})},
			servers: []string{"github", "github"},
			want:    []bool{true, true}},
		{name: "the team's mcp_rpm_limit holds for a server the key has no entry for, shared",
			calls:   []*identity.Caller{key("k1", "t", identity.Limits{ServerRPM: map[string]int64{"slack": 9}}, identity.Limits{ServerRPM: map[string]int64{"github": 1}}), key("k2", "t", identity.Limits{}, identity.Limits{ServerRPM: map[string]int64{"github": 1}})},
			servers: []string{"github", "github"},
			want:    []bool{true, false},
			refusal: `request limit reached for team "t" on server github (mcp_rpm_limit 1 per minute)`},
		{name: "a team limit without a team id is no limit",
			calls: []*identity.Caller{key("k1", "", identity.Limits{}, identity.Limits{RPM: n64(0)})},
			want:  []bool{true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			now := time.Now()
			c := newCallerLimits(&now)
			var last *fault.Fault
			for i, caller := range tc.calls {
				server := "github"
				if tc.servers != nil {
					server = tc.servers[i]
				}
				_, release, f := c.admit(context.Background(), caller, server)
				if got := f == nil; got != tc.want[i] {
					t.Fatalf("call %d to %s: admitted %v (%v), want %v", i+1, server, got, f, tc.want[i])
				}
				if f != nil {
					last = f
					if f.Class != fault.LimitExceeded || f.RetryAfter <= 0 || f.RetryAfter > time.Minute || f.Limit == nil || f.Limit.Kind != fault.KindRequests {
						t.Fatalf("refusal %+v", f)
					}
					if strings.Contains(f.Message, caller.KeyHash) {
						t.Fatalf("the refusal names the key: %q", f.Message)
					}
					continue
				}
				release()
			}
			if tc.refusal != "" && (last == nil || last.Message != tc.refusal) {
				t.Fatalf("refusal %v, want %q", last, tc.refusal)
			}
		})
	}
}

// A refused call is allowed again once its window slid: Retry-After is
// honoured.
func TestCallerLimitRetryAfter(t *testing.T) {
	now := time.Now()
	c := newCallerLimits(&now)
	caller := &identity.Caller{KeyHash: "k", KeyLimits: identity.Limits{RPM: n64(1)}}
	if _, _, f := c.admit(context.Background(), caller, "github"); f != nil {
		t.Fatal(f)
	}
	now = now.Add(20 * time.Second)
	_, _, f := c.admit(context.Background(), caller, "github")
	if f == nil || f.RetryAfter != 40*time.Second {
		t.Fatalf("over the limit: %+v, want a RetryAfter of 40s", f)
	}
	now = now.Add(f.RetryAfter)
	if _, _, f := c.admit(context.Background(), caller, "github"); f != nil {
		t.Fatalf("after RetryAfter: %v", f)
	}
}

// max_parallel_requests: the key's own wins over its team's, the team's is
// shared by its keys, a place is given back when the call ends, and a call
// refused by a rate after taking a place gives it back.
func TestCallerParallelLimit(t *testing.T) {
	now := time.Now()
	c := newCallerLimits(&now)
	ctx := context.Background()
	team := identity.Limits{MaxParallel: n64(2)}
	k1 := &identity.Caller{KeyHash: "k1", TeamID: "t", TeamLimits: team}
	k2 := &identity.Caller{KeyHash: "k2", TeamID: "t", TeamLimits: team}
	own := &identity.Caller{KeyHash: "k3", TeamID: "t", TeamLimits: team, KeyLimits: identity.Limits{MaxParallel: n64(1)}}
	_, r1, f1 := c.admit(ctx, k1, "github")
	_, r2, f2 := c.admit(ctx, k2, "github")
	if f1 != nil || f2 != nil {
		t.Fatalf("within the team's limit: %v %v", f1, f2)
	}
	_, _, f := c.admit(ctx, k1, "github")
	if f == nil || f.Limit == nil || f.Limit.Kind != fault.KindParallel || f.Message != `parallel request limit reached for team "t" (max_parallel_requests 2)` {
		t.Fatalf("third in flight for the team: %+v", f)
	}
	_, r3, f3 := c.admit(ctx, own, "github")
	if f3 != nil {
		t.Fatalf("a key with its own limit shares the team's: %v", f3)
	}
	if _, _, f := c.admit(ctx, own, "github"); f == nil || f.Message != "parallel request limit reached for this key (max_parallel_requests 1)" {
		t.Fatalf("second in flight for the key: %+v", f)
	}
	r1()
	if _, r, f := c.admit(ctx, k2, "github"); f != nil {
		t.Fatalf("after a release: %v", f)
	} else {
		r()
	}
	r2()
	r3()
	for _, k := range []*identity.Caller{k1, k2, own} {
		if _, r, f := c.admit(ctx, k, "github"); f != nil {
			t.Fatalf("places left after every release: %v", f)
		} else {
			defer r()
		}
	}
	// A call refused by its rate gives its place back.
	rated := &identity.Caller{KeyHash: "k4", KeyLimits: identity.Limits{MaxParallel: n64(1), RPM: n64(0)}}
	if _, _, f := c.admit(ctx, rated, "github"); f == nil || f.Limit.Kind != fault.KindRequests {
		t.Fatalf("rpm 0: %+v", f)
	}
	rated.KeyLimits.RPM = nil
	if _, r, f := c.admit(ctx, rated, "github"); f != nil {
		t.Fatalf("a call refused by its rate kept its place: %v", f)
	} else {
		r()
	}
}

// When the counter cannot decide, the call goes ahead.
func TestCallerLimitsFailOpen(t *testing.T) {
	now := time.Now()
	c := newCallerLimits(&now)
	c.gate = failing{}
	caller := &identity.Caller{KeyHash: "k", KeyLimits: identity.Limits{RPM: n64(1)}}
	for range 3 {
		if _, _, f := c.admit(context.Background(), caller, "github"); f != nil {
			t.Fatal(f)
		}
	}
}
