package identity

import (
	"context"
	"errors"
	"net/http/httptest"
	"testing"
)

// TestSessionCheckDecidesInProcessRequests: a context carrying a session check is decided by
// that check alone, whatever credential the request carries (the master key included), and
// its refusal is the answer; without one the credential decides as before.
func TestSessionCheckDecidesInProcessRequests(t *testing.T) {
	const master = "sk-a-strong-master-key-for-tests-9"
	a, err := New(Config{MasterKey: master})
	if err != nil {
		t.Fatal(err)
	}
	r := httptest.NewRequest("GET", "/key/list", nil)
	r.Header.Set("Authorization", "Bearer "+master)
	ok := WithSession(context.Background(), func(context.Context) (*Caller, error) {
		return &Caller{UserID: "alice", Role: RoleProxyAdmin}, nil
	})
	if c, err := a.Authenticate(ok, r, "x"); err != nil || c.UserID != "alice" || c.IsMaster {
		t.Fatalf("with a session check: %+v %v", c, err)
	}
	ended := WithSession(context.Background(), func(context.Context) (*Caller, error) {
		return nil, &Error{Status: 401, Message: "the UI session has ended"}
	})
	var e *Error
	if c, err := a.Authenticate(ended, r, "x"); c != nil || !errors.As(err, &e) || e.Status != 401 {
		t.Fatalf("a refusing session check: %+v %v", c, err)
	}
	if c, err := a.Authenticate(WithSession(context.Background(), func(context.Context) (*Caller, error) { return nil, nil }), r, "x"); c != nil || err == nil {
		t.Fatalf("a session check answering nothing: %+v %v", c, err)
	}
	if c, err := a.Authenticate(context.Background(), r, "x"); err != nil || !c.IsMaster {
		t.Fatalf("without a session check the master key: %+v %v", c, err)
	}
}

// TestClaimRuleIsTheJWTRule: claims verified elsewhere map as a JWT caller's do: the admin
// scope makes the proxy admin, the user's stored role counts, and a role not allowed is 403.
func TestClaimRuleIsTheJWTRule(t *testing.T) {
	levels := func(_ context.Context, userID, _, _, _ string) (StoredKey, error) {
		if userID == "boss" {
			return StoredKey{Role: RoleProxyAdmin}, nil
		}
		return StoredKey{}, nil
	}
	rule := NewClaimRule(JWTConfig{AdminScope: "litellm_proxy_admin", Levels: levels})
	ctx := context.Background()
	if c, err := rule.Caller(ctx, map[string]any{"sub": "x", "scope": "openid litellm_proxy_admin"}); err != nil || c.Role != RoleProxyAdmin {
		t.Fatalf("admin scope: %+v %v", c, err)
	}
	if c, err := rule.Caller(ctx, map[string]any{"sub": "boss"}); err != nil || c.Role != RoleProxyAdmin || c.UserID != "boss" {
		t.Fatalf("stored proxy_admin user: %+v %v", c, err)
	}
	if c, err := rule.Caller(ctx, map[string]any{"sub": "pat"}); err != nil || c.Role != RoleInternalUser {
		t.Fatalf("plain user: %+v %v", c, err)
	}
	gated := NewClaimRule(JWTConfig{UserRolesField: "roles", UserAllowedRoles: []string{"ops"}, Levels: levels})
	var e *Error
	if _, err := gated.Caller(ctx, map[string]any{"sub": "boss", "roles": []any{"dev"}}); !errors.As(err, &e) || e.Status != 403 {
		t.Fatalf("a role not allowed: %v", err)
	}
}
