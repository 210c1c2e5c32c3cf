package config_test

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/mcpgw/mcpgw/internal/config"
)

func TestPublicURLSettings(t *testing.T) {
	env := func(m map[string]string) func(string) (string, bool) {
		return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
	}
	cfg, probs, err := config.Parse([]byte("general_settings:\n  mcp_public_base_url: https://gw.example.com/x/\n  mcp_trusted_proxies: [10.0.0.0/8, 192.0.2.7]\n"),
		config.Options{LookupEnv: env(map[string]string{"PROXY_BASE_URL": "https://other.example"})})
	if err != nil {
		t.Fatalf("Parse: %v %v", err, probs)
	}
	p := cfg.General.Public
	if p.BaseURL != "https://gw.example.com/x" {
		t.Fatalf("BaseURL = %q", p.BaseURL)
	}
	want := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("192.0.2.7/32")}
	if len(p.TrustedProxies) != 2 || p.TrustedProxies[0] != want[0] || p.TrustedProxies[1] != want[1] {
		t.Fatalf("TrustedProxies = %v", p.TrustedProxies)
	}

	cfg, _, err = config.Parse([]byte("general_settings:\n  mcp_access_log: true\n"),
		config.Options{LookupEnv: env(map[string]string{"PROXY_BASE_URL": "https://other.example/"})})
	if err != nil || cfg.General.Public.BaseURL != "https://other.example" {
		t.Fatalf("PROXY_BASE_URL fallback: %v %+v", err, cfg)
	}

	for _, bad := range []string{
		"general_settings:\n  mcp_public_base_url: ftp://x\n",
		"general_settings:\n  mcp_public_base_url: https://x/?a=b\n",
		"general_settings:\n  mcp_trusted_proxies: [not-an-ip]\n",
	} {
		if _, probs, err := config.Parse([]byte(bad), config.Options{}); err == nil {
			t.Fatalf("%q accepted: %v", bad, probs)
		} else if len(probs) == 0 || !strings.Contains(probs[0].Msg, "mcp_") {
			t.Fatalf("%q: problems %v", bad, probs)
		}
	}
	if _, probs, err := config.Parse([]byte("general_settings:\n  mcp_access_log: true\n"),
		config.Options{LookupEnv: env(map[string]string{"PROXY_BASE_URL": "nope"})}); err == nil {
		t.Fatalf("bad PROXY_BASE_URL accepted: %v", probs)
	}
}
