package identity

import (
	"strings"
	"testing"
)

func TestWeakKeyReason(t *testing.T) {
	tests := []struct {
		key  string
		weak bool
	}{
		{"", true},
		{"x9-qk", true},
		{"sk-1234", true},
		{"sk-12345", true},
		{"sk-master", true},
		{"sk-test", true},
		{"SK-1234", true},
		{"sk-your-master-key-here", true},
		{"sk-litellm-master-key", true},
		{"sk-1234567890abcdef", true},
		{"fifteen-chars-x", true}, // 15
		{"sk-1234567890123456", true},
		{"1234567890123456789", true},
		{"aaaaaaaaaaaaaaaaaaaaaaaa", true},
		{"sk-abababababababababab", true},
		{"sk-quickstart-please-change", false},
		{"sixteen-chars-xy", false},
		{"sk-Zq8vT2mW9pL4rX7n", false},
		{"correct horse battery staple", false},
		{"ключ-доступа-шлюза", false}, // counted in characters, not bytes
	}
	for _, tt := range tests {
		t.Run(tt.key, func(t *testing.T) {
			reason := WeakKeyReason(tt.key)
			if (reason != "") != tt.weak {
				t.Fatalf("WeakKeyReason(%q) = %q, want weak=%v", tt.key, reason, tt.weak)
			}
			_, err := New(Config{MasterKey: tt.key})
			if tt.weak {
				if err == nil {
					t.Fatal("New accepted a weak key")
				}
				if !strings.Contains(err.Error(), PermitWeakEnv) {
					t.Errorf("error %q does not name %s", err, PermitWeakEnv)
				}
				if tt.key != "" && strings.Contains(err.Error(), tt.key) {
					t.Errorf("error %q echoes the key", err)
				}
				if _, err := New(Config{MasterKey: tt.key, PermitWeak: true}); err != nil {
					t.Errorf("New with PermitWeak: %v", err)
				}
			} else if err != nil {
				t.Errorf("New refused a strong key: %v", err)
			}
		})
	}
}

func TestNewRejectsBadCustomAuth(t *testing.T) {
	for _, u := range []string{"mymodule.auth_fn", "ftp://example.com/x", "http:///path-only", "/relative", "https://[::1"} {
		_, err := New(Config{MasterKey: strongKey, CustomAuthURL: u})
		if err == nil {
			t.Errorf("New accepted custom_auth %q", u)
		} else if strings.Contains(err.Error(), u) {
			t.Errorf("error %q echoes the URL", err)
		}
	}
}
