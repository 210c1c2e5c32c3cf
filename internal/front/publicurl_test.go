package front_test

import (
	"crypto/tls"
	"net/http/httptest"
	"net/netip"
	"testing"

	"github.com/mcpgw/mcpgw/internal/front"
)

func TestPublicURLBase(t *testing.T) {
	trusted := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}
	cases := []struct {
		name   string
		p      *front.PublicURL
		remote string
		tls    bool
		hdr    map[string]string
		want   string
	}{
		{name: "configured base wins", p: front.NewPublicURL("https://gw.example.com/base/", trusted), remote: "10.1.1.1:5",
			hdr: map[string]string{"X-Forwarded-Host": "evil.example"}, want: "https://gw.example.com/base"},
		{name: "own host", p: front.NewPublicURL("", nil), remote: "10.1.1.1:5", want: "http://gw.local:4000"},
		{name: "own tls", p: front.NewPublicURL("", nil), remote: "10.1.1.1:5", tls: true, want: "https://gw.local:4000"},
		{name: "nil derives", p: nil, remote: "10.1.1.1:5", want: "http://gw.local:4000"},
		{name: "untrusted forwarded ignored", p: front.NewPublicURL("", trusted), remote: "192.0.2.1:5",
			hdr: map[string]string{"X-Forwarded-Proto": "https", "X-Forwarded-Host": "evil.example"}, want: "http://gw.local:4000"},
		{name: "trusted forwarded", p: front.NewPublicURL("", trusted), remote: "10.2.3.4:5",
			hdr: map[string]string{"X-Forwarded-Proto": "https, http", "X-Forwarded-Host": "Pub.Example.com, inner"}, want: "https://pub.example.com"},
		{name: "trusted bad values ignored", p: front.NewPublicURL("", trusted), remote: "10.2.3.4:5",
			hdr: map[string]string{"X-Forwarded-Proto": "gopher", "X-Forwarded-Host": "a@b/c"}, want: "http://gw.local:4000"},
		{name: "trusted v4-mapped peer", p: front.NewPublicURL("", trusted), remote: "[::ffff:10.0.0.1]:5",
			hdr: map[string]string{"X-Forwarded-Proto": "https"}, want: "https://gw.local:4000"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", "http://gw.local:4000/mcp", nil)
			r.RemoteAddr = c.remote
			if c.tls {
				r.TLS = &tls.ConnectionState{}
			}
			for k, v := range c.hdr {
				r.Header.Set(k, v)
			}
			if got := c.p.Base(r); got != c.want {
				t.Fatalf("Base = %q, want %q", got, c.want)
			}
		})
	}
}
