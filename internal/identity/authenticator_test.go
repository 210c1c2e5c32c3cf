package identity

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"

	"github.com/mcpgw/mcpgw/internal/allocstest"
)

const strongKey = "sk-Zq8vT2mW9pL4rX7nKd3"

func hashOf(k string) string { d := sha256.Sum256([]byte(k)); return hex.EncodeToString(d[:]) }

func request(headers map[string]string) *http.Request {
	r := httptest.NewRequest(http.MethodPost, "/mcp", nil)
	for k, v := range headers {
		r.Header.Set(k, v)
	}
	return r
}

func authErr(t *testing.T, err error) *Error {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v (%T) is not *Error", err, err)
	}
	return e
}

func TestMasterKey(t *testing.T) {
	a, err := New(Config{MasterKey: strongKey})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name      string
		headers   map[string]string
		status    int // 0 = admitted as master
		challenge string
	}{
		{"authorization", map[string]string{"Authorization": "Bearer " + strongKey}, 0, ""},
		{"x-litellm-api-key", map[string]string{"x-litellm-api-key": strongKey}, 0, ""},
		{"x-litellm-api-key bearer", map[string]string{"x-litellm-api-key": "Bearer " + strongKey}, 0, ""},
		{"api key wins over wrong authorization", map[string]string{"x-litellm-api-key": strongKey, "Authorization": "Bearer nope"}, 0, ""},
		{"missing", nil, 401, "Bearer"},
		{"basic is not a credential", map[string]string{"Authorization": "Basic " + strongKey}, 401, "Bearer"},
		{"wrong", map[string]string{"Authorization": "Bearer sk-wrong"}, 401, `Bearer error="invalid_token"`},
		{"prefix of master", map[string]string{"Authorization": "Bearer " + strongKey[:len(strongKey)-1]}, 401, `Bearer error="invalid_token"`},
		{"master plus suffix", map[string]string{"Authorization": "Bearer " + strongKey + "x"}, 401, `Bearer error="invalid_token"`},
		{"case differs", map[string]string{"Authorization": "Bearer SK-ZQ8VT2MW9PL4RX7NKD3"}, 401, `Bearer error="invalid_token"`},
		{"wrong api key, master in authorization", map[string]string{"x-litellm-api-key": "sk-wrong", "Authorization": "Bearer " + strongKey}, 401, `Bearer error="invalid_token"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := a.Authenticate(context.Background(), request(tt.headers), "tools/list")
			if tt.status == 0 {
				if err != nil {
					t.Fatalf("Authenticate: %v", err)
				}
				want := Caller{KeyHash: hashOf(strongKey), UserID: MasterUserID, Role: RoleProxyAdmin, IsMaster: true}
				if c.KeyHash != want.KeyHash || c.UserID != want.UserID || c.Role != want.Role || !c.IsMaster ||
					c.Servers != nil || c.AccessGroups != nil || c.ToolPermissions != nil {
					t.Errorf("caller = %+v, want %+v", c, want)
				}
				return
			}
			if c != nil {
				t.Fatalf("caller %+v admitted", c)
			}
			e := authErr(t, err)
			if e.Status != tt.status || e.Challenge != tt.challenge {
				t.Errorf("error = %+v, want status %d challenge %q", e, tt.status, tt.challenge)
			}
		})
	}
}

func TestOpenGateway(t *testing.T) {
	if _, err := New(Config{}); err == nil {
		t.Fatal("New accepted an unset master key without PermitWeak")
	}
	a, err := New(Config{PermitWeak: true})
	if err != nil {
		t.Fatal(err)
	}
	c, err := a.Authenticate(context.Background(), request(nil), "tools/list")
	if err != nil || !c.IsMaster || c.Role != RoleProxyAdmin || c.KeyHash != "" {
		t.Fatalf("open gateway, no credential: %+v, %v", c, err)
	}
	c, err = a.Authenticate(context.Background(), request(map[string]string{"Authorization": "Bearer anything"}), "tools/list")
	if err != nil || !c.IsMaster || c.KeyHash != hashOf("anything") {
		t.Fatalf("open gateway, some credential: %+v, %v", c, err)
	}
}

func TestWeakKeyPermittedStillAuthenticates(t *testing.T) {
	a, err := New(Config{MasterKey: "sk-1234", PermitWeak: true})
	if err != nil {
		t.Fatal(err)
	}
	if c, err := a.Authenticate(context.Background(), request(map[string]string{"Authorization": "Bearer sk-1234"}), "m"); err != nil || !c.IsMaster {
		t.Fatalf("weak master: %+v, %v", c, err)
	}
	_, err = a.Authenticate(context.Background(), request(map[string]string{"Authorization": "Bearer sk-12345"}), "m")
	if e := authErr(t, err); e.Status != 401 {
		t.Fatalf("wrong key: %+v", e)
	}
}

func TestBinding(t *testing.T) {
	base := Caller{UserID: "u", TeamID: "t", OrgID: "o", EndUserID: "e", KeyHash: "k", Role: "r"}
	b := base.Binding()
	if b != base.Binding() {
		t.Fatal("Binding is not stable")
	}
	same := base
	same.Role, same.Servers, same.IsMaster = "other", []string{"x"}, true
	if same.Binding() != b {
		t.Error("Binding depends on role or permissions; it should name only who the caller is")
	}
	variants := []Caller{
		{UserID: "U", TeamID: "t", OrgID: "o", EndUserID: "e", KeyHash: "k"},
		{UserID: "u", TeamID: "T", OrgID: "o", EndUserID: "e", KeyHash: "k"},
		{UserID: "u", TeamID: "t", OrgID: "O", EndUserID: "e", KeyHash: "k"},
		{UserID: "u", TeamID: "t", OrgID: "o", EndUserID: "E", KeyHash: "k"},
		{UserID: "u", TeamID: "t", OrgID: "o", EndUserID: "e", KeyHash: "K"},
		// Field boundaries cannot be shifted by quoting tricks.
		{UserID: `u";t="t`, OrgID: "o", EndUserID: "e", KeyHash: "k"},
		{UserID: "ut", OrgID: "o", EndUserID: "e", KeyHash: "k"},
	}
	seen := map[string]int{b: -1}
	for i, v := range variants {
		got := v.Binding()
		if j, dup := seen[got]; dup {
			t.Errorf("variant %d has the same binding as %d: %s", i, j, got)
		}
		seen[got] = i
	}
	var nilCaller *Caller
	if nilCaller.Binding() == b {
		t.Error("nil caller binding collides")
	}
}

// TestBindingFormat: a binding is the same string it always was (sealed session ids and
// tokens carry it, so a change would end them all): each field strconv.Quote'd.
func TestBindingFormat(t *testing.T) {
	for _, v := range []string{"", "plain-id", `a"b`, `a\b`, "tab\there", "é", "\x7f", "\x00", "sk-🔑"} {
		c := Caller{UserID: v, TeamID: "t", OrgID: v, EndUserID: "e", KeyHash: v + "k"}
		want := "v1;u=" + strconv.Quote(v) + ";t=" + strconv.Quote("t") + ";o=" + strconv.Quote(v) +
			";e=" + strconv.Quote("e") + ";k=" + strconv.Quote(v+"k")
		if got := c.Binding(); got != want {
			t.Errorf("Binding(%q) = %s, want %s", v, got, want)
		}
	}
	c := Caller{UserID: "u", TeamID: "t", OrgID: "o", EndUserID: "e", KeyHash: "0123456789abcdef"}
	if n := allocstest.Least(100, func() { _ = c.Binding() }); n > 1 {
		t.Errorf("Binding allocates %v times, want 1", n)
	}
}
