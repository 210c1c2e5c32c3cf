package app

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
)

// The guard refuses link-local, unspecified and multicast addresses always,
// loopback and private ones unless allowed, and public ones never.
func TestOutboundGuardRefusal(t *testing.T) {
	for _, tc := range []struct {
		ip              string
		strict, relaxed bool // refused without / with allowPrivate
	}{
		{"8.8.8.8", false, false},
		{"2606:4700::1111", false, false},
		{"127.0.0.1", true, false},
		{"::1", true, false},
		{"10.1.2.3", true, false},
		{"192.168.1.1", true, false},
		{"172.16.0.1", true, false},
		{"100.64.0.1", true, false},
		{"fd00::1", true, false},
		{"::ffff:127.0.0.1", true, false},
		{"169.254.169.254", true, true},
		{"::ffff:169.254.169.254", true, true},
		{"fe80::1", true, true},
		{"0.0.0.0", true, true},
		{"224.0.0.1", true, true},
	} {
		ip := netip.MustParseAddr(tc.ip)
		if got := (outboundGuard{}).refusal(ip) != ""; got != tc.strict {
			t.Errorf("%s strict: refused=%v, want %v", tc.ip, got, tc.strict)
		}
		if got := (outboundGuard{allowPrivate: true}).refusal(ip) != ""; got != tc.relaxed {
			t.Errorf("%s relaxed: refused=%v, want %v", tc.ip, got, tc.relaxed)
		}
	}
}

// The guarded client refuses at dial time, whatever name led there, so a
// name that resolved elsewhere when checked (DNS rebinding) still cannot
// reach a loopback server; allowed, it connects.
func TestOutboundGuardDials(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer srv.Close()
	url := strings.Replace(srv.URL, "127.0.0.1", "localhost", 1)
	c := outboundGuard{}.client()
	defer c.CloseIdleConnections()
	if _, err := c.Get(url); err == nil || !strings.Contains(err.Error(), errRefusedAddress.Error()) {
		t.Fatalf("strict dial to %s: %v, want the guard's refusal", url, err)
	}
	if why := (outboundGuard{}).check(context.Background(), url); !strings.Contains(why, "loopback") {
		t.Fatalf("strict check of %s: %q", url, why)
	}
	ok := outboundGuard{allowPrivate: true}.client()
	defer ok.CloseIdleConnections()
	resp, err := ok.Get(url)
	if err != nil {
		t.Fatalf("relaxed dial: %v", err)
	}
	resp.Body.Close()
}
