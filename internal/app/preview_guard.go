package app

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"syscall"
	"time"
)

// cgnat is the shared address space (RFC 6598), private in all but name.
var cgnat = netip.MustParsePrefix("100.64.0.0/10")

// outboundGuard decides which addresses a server preview may connect to.
// Link-local (cloud metadata services live there), unspecified and
// multicast addresses are always refused; loopback and private ones unless
// allowPrivate.
type outboundGuard struct{ allowPrivate bool }

// refusal says why ip may not be connected to; empty when it may.
func (g outboundGuard) refusal(ip netip.Addr) string {
	ip = ip.Unmap()
	switch {
	case ip.IsUnspecified(), ip.IsMulticast(), ip.IsLinkLocalMulticast(), ip.IsInterfaceLocalMulticast():
		return "an unspecified or multicast address"
	case ip.IsLinkLocalUnicast():
		return "a link-local address"
	case g.allowPrivate:
		return ""
	case ip.IsLoopback():
		return "a loopback address"
	case ip.IsPrivate(), cgnat.Contains(ip):
		return "a private address"
	}
	return ""
}

// errRefusedAddress is the dialer's refusal.
var errRefusedAddress = errors.New("the preview may not connect to this address")

// control is the dialer's check of the address it is about to connect
// to, after name resolution, so a name that resolves differently at dial
// time (DNS rebinding) is still checked.
func (g outboundGuard) control(_, address string, _ syscall.RawConn) error {
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		return errRefusedAddress
	}
	ip, err := netip.ParseAddr(host)
	if err != nil || g.refusal(ip) != "" {
		return errRefusedAddress
	}
	return nil
}

// client returns an HTTP client whose every connection goes through the
// guard, with no proxy (a proxy would connect on the preview's behalf) and
// no redirects followed beyond what the guard allows.
func (g outboundGuard) client() *http.Client {
	d := &net.Dialer{Timeout: 10 * time.Second, Control: g.control}
	return &http.Client{Transport: &http.Transport{
		DialContext:         d.DialContext,
		TLSHandshakeTimeout: 10 * time.Second,
		MaxIdleConnsPerHost: 2,
		IdleConnTimeout:     30 * time.Second,
	}}
}

// check resolves rawURL's host and says why the preview may not connect
// to it (naming the host, never the URL, which may carry credentials);
// empty when every address it resolves to is allowed or it does not
// resolve (the connection then fails on its own).
func (g outboundGuard) check(ctx context.Context, rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil || u.Hostname() == "" {
		return ""
	}
	host := u.Hostname()
	var addrs []netip.Addr
	if ip, err := netip.ParseAddr(host); err == nil {
		addrs = []netip.Addr{ip}
	} else {
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		addrs, _ = net.DefaultResolver.LookupNetIP(rctx, "ip", host)
	}
	for _, ip := range addrs {
		why := g.refusal(ip)
		if why == "" {
			continue
		}
		msg := "the preview may not connect to " + host + ": it is " + why
		if (outboundGuard{allowPrivate: true}).refusal(ip) == "" {
			msg += " (general_settings.mcp_preview_allow_private_networks allows loopback and private ones)"
		}
		return msg
	}
	return ""
}
