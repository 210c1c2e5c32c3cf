package admit

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestHostAllowed(t *testing.T) {
	loop := &net.TCPAddr{IP: net.ParseIP("127.0.0.1"), Port: 4000}
	public := &net.TCPAddr{IP: net.ParseIP("10.1.2.3"), Port: 4000}
	cases := []struct {
		name   string
		local  net.Addr
		host   string
		origin string
		want   bool
	}{
		{"loopback listener, localhost", loop, "localhost:4000", "", true},
		{"loopback listener, 127.0.0.1", loop, "127.0.0.1:4000", "", true},
		{"loopback listener, [::1]", loop, "[::1]:4000", "", true},
		{"loopback listener, rebinding host", loop, "evil.example.com", "", false},
		{"loopback listener, rebinding origin and host", loop, "evil.example.com", "http://evil.example.com", false},
		{"loopback, origin matches", loop, "localhost:4000", "http://localhost:4000", true},
		{"loopback, origin 127 vs localhost", loop, "localhost:4000", "http://127.0.0.1:4000", true},
		{"loopback, foreign origin", loop, "localhost:4000", "http://evil.example.com", false},
		// Another program on a loopback port is another origin: a page it
		// serves must not drive the gateway from the browser.
		{"loopback, other local port", loop, "localhost:4000", "http://localhost:3000", false},
		{"loopback, other local port by address", loop, "localhost:4000", "http://127.0.0.1:3000", false},
		{"loopback, default port vs explicit", loop, "localhost:4000", "http://localhost", false},
		{"loopback, ::1 same port", loop, "127.0.0.1:4000", "http://[::1]:4000", true},
		{"loopback, implicit port 80 both", loop, "localhost", "http://127.0.0.1:80", true},
		{"public listener, any host", public, "gw.example.com", "", true},
		{"public listener, same origin", public, "gw.example.com", "https://gw.example.com", true},
		{"public listener, foreign origin", public, "gw.example.com", "https://evil.example.com", false},
		{"malformed origin", public, "gw.example.com", "::nonsense", false},
		{"opaque null origin", public, "gw.example.com", "null", false},
		{"non-http origin", public, "gw.example.com", "file://gw.example.com", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodPost, "/mcp", nil)
			r.Host = tc.host
			if tc.origin != "" {
				r.Header.Set("Origin", tc.origin)
			}
			r = r.WithContext(context.WithValue(r.Context(), http.LocalAddrContextKey, tc.local))
			if got := NewHostGuard(nil, nil).Allowed(r); got != tc.want {
				t.Fatalf("hostAllowed = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestHostGuardAllowlist: behind a reverse proxy the gateway may listen on
// loopback and see the public name; only the configured names get through.
func TestHostGuardAllowlist(t *testing.T) {
	loop := &net.TCPAddr{IP: net.ParseIP("127.0.0.1"), Port: 4000}
	g := NewHostGuard([]string{"gw.example.com", "*.corp.example"}, []string{"https://app.example.com"})
	cases := []struct {
		name, host, origin string
		want               bool
	}{
		{"allowed host", "gw.example.com", "", true},
		{"allowed host with port", "GW.example.com:443", "", true},
		{"wildcard subdomain", "a.corp.example", "", true},
		{"wildcard deep subdomain", "a.b.corp.example", "", true},
		{"wildcard is not the bare domain", "corp.example", "", false},
		{"wildcard suffix trick", "evilcorp.example", "", false},
		{"other host", "evil.example.com", "", false},
		{"allowed host, own origin", "gw.example.com", "https://gw.example.com", true},
		{"proxy rewrote host, origin is an allowed host", "127.0.0.1:4000", "https://gw.example.com", true},
		{"allowed origin", "gw.example.com", "https://app.example.com", true},
		{"allowed origin, other scheme", "gw.example.com", "http://app.example.com", false},
		{"foreign origin", "gw.example.com", "https://evil.example.com", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodPost, "/mcp-rest/tools/call", nil)
			r.Host = tc.host
			if tc.origin != "" {
				r.Header.Set("Origin", tc.origin)
			}
			r = r.WithContext(context.WithValue(r.Context(), http.LocalAddrContextKey, loop))
			if got := g.Allowed(r); got != tc.want {
				t.Fatalf("Allowed = %v, want %v", got, tc.want)
			}
		})
	}
}

// FuzzHostGuard: any Host and Origin a stranger sends is decided without a
// panic, and a foreign Origin on a loopback listener is never allowed.
func FuzzHostGuard(f *testing.F) {
	for _, s := range [][2]string{{"localhost:4000", ""}, {"evil.example", "http://evil.example"}, {"[::1]:80", "http://[::1]"},
		{"gw.example.com", "https://a.corp.example"}, {"", "null"}, {"a:b:c", "::"}, {"x", "http://%zz"}} {
		f.Add(s[0], s[1])
	}
	g := NewHostGuard([]string{"gw.example.com", "*.corp.example"}, []string{"https://app.example.com"})
	loop := &net.TCPAddr{IP: net.ParseIP("127.0.0.1"), Port: 4000}
	f.Fuzz(func(t *testing.T, host, origin string) {
		r := httptest.NewRequest(http.MethodPost, "/mcp", nil)
		r.Host = host
		if origin != "" {
			r.Header.Set("Origin", origin)
		}
		r = r.WithContext(context.WithValue(r.Context(), http.LocalAddrContextKey, loop))
		if g.Allowed(r) && origin == "http://evil.example" {
			t.Fatalf("Host %q with a foreign Origin allowed", host)
		}
	})
}
