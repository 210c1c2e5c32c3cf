package gateway

import (
	"context"
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/mcpgw/mcpgw/internal/catalog"
	"github.com/mcpgw/mcpgw/internal/fakemcp"
	"github.com/mcpgw/mcpgw/internal/fault"
	"github.com/mcpgw/mcpgw/internal/identity"
	"github.com/mcpgw/mcpgw/internal/jsonrpc"
	"github.com/mcpgw/mcpgw/internal/mcp"
	"github.com/mcpgw/mcpgw/internal/policy"
	"github.com/mcpgw/mcpgw/internal/seal"
	"github.com/mcpgw/mcpgw/internal/upstream"
	"github.com/mcpgw/mcpgw/internal/upstream/auth"
)

// upSpec is one upstream of a test gateway.
type upSpec struct {
	name string
	fake *fakemcp.Server
	// server carries the gateway.Server settings (ExtraHeaders, Delegate);
	// Name and Client are filled in.
	server Server
	// policy carries the policy.Server settings; Name is filled in.
	policy policy.Server
	auth   auth.PolicyConfig
	// url, when set, replaces the fake's URL (a test server in front of it).
	url string
}

var testInfo = mcp.Implementation{Name: "mcpgw", Version: "test"}

// newTestGateway builds a gateway over ups; cfg's Servers, Policy and
// Catalog are filled in.
func newTestGateway(t *testing.T, cfg Config, ups ...upSpec) *Gateway {
	t.Helper()
	var (
		cats []*catalog.Server
		pols []policy.Server
	)
	for _, u := range ups {
		url := u.fake.URL()
		if u.url != "" {
			url = u.url
		}
		ucfg := upstream.Config{Name: u.name, URL: url, ProtocolVersion: "2026-07-28", Auth: u.auth,
			RequestTimeout: 10 * time.Second, ListTimeout: 10 * time.Second}
		if cfg.ListTimeout > 0 {
			ucfg.ListTimeout = cfg.ListTimeout // as cmd/mcpgw wires LITELLM_MCP_TOOL_LISTING_TIMEOUT
		}
		if u.fake.Legacy() {
			ucfg.ProtocolVersion = "2025-11-25"
		}
		c, err := upstream.New(ucfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close(context.Background()) })
		s := u.server
		s.Name, s.Client = u.name, c
		cfg.Servers = append(cfg.Servers, &s)
		cats = append(cats, &catalog.Server{Name: u.name, Client: c})
		p := u.policy
		p.Name = u.name
		pols = append(pols, p)
	}
	sealer, err := seal.New("gateway-test-salt-key-0123456789abcdef", catalog.SealPurpose)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Policy = policy.New(pols, policy.Options{})
	cfg.Catalog = catalog.New(catalog.Config{Servers: cats, Sealer: sealer, Logger: cfg.Logger})
	if cfg.Info.Name == "" {
		cfg.Info = testInfo
	}
	if cfg.Advertised == nil {
		cfg.Advertised = []string{mcp.V20260728, mcp.V20251125}
	}
	return New(cfg)
}

var master = &identity.Caller{IsMaster: true, KeyHash: "hash-master", UserID: identity.MasterUserID, Role: identity.RoleProxyAdmin}

// do runs one operation for the master caller unless op names a caller,
// and encodes its outcome for op's surface.
func do(t *testing.T, g *Gateway, op Operation) answered {
	t.Helper()
	if op.Caller == nil {
		op.Caller = master
	}
	return answer(op, g.Do(context.Background(), op))
}

// answered is an outcome as the caller's surface answers it (fault.Encode):
// what the tests assert on.
type answered struct {
	Outcome
	Result    json.RawMessage
	Err       *jsonrpc.Error
	Status    int
	Challenge string
	Detail    string
}

// answer encodes out for op's surface, as the front does.
func answer(op Operation, out Outcome) answered {
	a := answered{Outcome: out, Result: out.Result, Status: http.StatusOK}
	if out.Fault != nil {
		enc := fault.Encode(op.Surface, op.Method, out.Fault)
		a.Result, a.Err, a.Status, a.Challenge, a.Detail = enc.Result, enc.Err, enc.Status, enc.Challenge, enc.Detail
	}
	return a
}

// era is the surface of a modern or a legacy caller.
func era(modern bool) fault.Surface {
	if modern {
		return fault.Modern
	}
	return fault.Legacy
}

// creds are the credentials the front passes for a caller's header: all of
// it but the gateway key (and Authorization when it carried the key), and the
// caller's bearer token when it may be forwarded.
func creds(h http.Header, keyInAuth bool) Credentials {
	bearer := ""
	if tok, ok := strings.CutPrefix(h.Get("Authorization"), "Bearer "); ok && !keyInAuth {
		bearer = strings.TrimSpace(tok)
	}
	return NewCredentials(h, keyInAuth, bearer)
}

func wantError(t *testing.T, out answered, code int64, status int) {
	t.Helper()
	if out.Err == nil {
		t.Fatalf("want error %d, got result %.300s", code, out.Result)
	}
	if out.Err.Code != code || out.Status != status {
		t.Fatalf("error = %d %q (status %d), want %d (status %d)", out.Err.Code, out.Err.Message, out.Status, code, status)
	}
}

func wantResult(t *testing.T, out answered) map[string]any {
	t.Helper()
	if out.Err != nil {
		t.Fatalf("unexpected error %d %q (status %d)", out.Err.Code, out.Err.Message, out.Status)
	}
	var m map[string]any
	if err := json.Unmarshal(out.Result, &m); err != nil {
		t.Fatalf("result is not an object: %v: %s", err, out.Result)
	}
	return m
}

// itemNames lists the name member of every item of a list result.
func itemNames(t *testing.T, res map[string]any, key string) []string {
	t.Helper()
	items, ok := res[key].([]any)
	if !ok {
		t.Fatalf("result has no %s array: %v", key, res)
	}
	out := make([]string, 0, len(items))
	for _, it := range items {
		name, _ := it.(map[string]any)["name"].(string)
		out = append(out, name)
	}
	return out
}

// jsonEqual compares a value (or raw JSON) with the JSON text want.
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

// paramsOf decodes a recorded request's params.
func paramsOf(t *testing.T, r fakemcp.Request) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.Params, &m); err != nil {
		t.Fatalf("%s params: %v: %s", r.Method, err, r.Params)
	}
	return m
}

// echo answers with {"content":[{"type":"text","text":"<server>"}],"echo":<params>}.
func echo(server string) fakemcp.Handler {
	return func(p json.RawMessage) (json.RawMessage, *jsonrpc.Error) {
		b := []byte(`{"resultType":"complete","content":[{"type":"text","text":` + string(jsonrpc.AppendString(nil, server)) + `}],"echo":`)
		b = append(b, p...)
		return append(b, '}'), nil
	}
}

func header(kv ...string) http.Header {
	h := http.Header{}
	for i := 0; i+1 < len(kv); i += 2 {
		h.Add(kv[i], kv[i+1])
	}
	return h
}

// listenRaw serves a listen for a filter as a caller sent it, as the front
// does: ParseFilter first (its refusal is a 400), then ListenFilter.
func listenRaw(g *Gateway, ctx context.Context, op Operation, raw json.RawMessage, ack func(json.RawMessage), emit func(string, json.RawMessage)) answered {
	want, perr := ParseFilter(raw)
	if perr != nil {
		return answered{Err: perr, Status: http.StatusBadRequest}
	}
	return answer(op, g.ListenFilter(ctx, op, want, Listener{Ack: func(h json.RawMessage) bool { ack(h); return true }, Emit: func(m string, p json.RawMessage, _ time.Time) bool { emit(m, p); return true }}))
}
