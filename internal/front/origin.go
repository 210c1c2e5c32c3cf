package front

import (
	"net"
	"net/http"
	"net/url"
	"strings"
)

// hostAllowed guards against DNS rebinding, as the transport spec asks: on a
// loopback listener only loopback Host names are served (a page on
// evil.example resolving to 127.0.0.1 is refused), and an Origin header, when
// a browser sends one, must name the host it is talking to.
func hostAllowed(r *http.Request) bool {
	if local, ok := r.Context().Value(http.LocalAddrContextKey).(*net.TCPAddr); ok && local.IP.IsLoopback() {
		if !loopbackName(hostOnly(r.Host)) {
			return false
		}
	}
	origin := r.Header.Get("Origin")
	if origin == "" {
		return true // not a browser
	}
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" {
		return false
	}
	if strings.EqualFold(u.Host, r.Host) {
		return true
	}
	return loopbackName(u.Hostname()) && loopbackName(hostOnly(r.Host))
}

func hostOnly(hostport string) string {
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		return h
	}
	return strings.Trim(hostport, "[]")
}

func loopbackName(h string) bool {
	if strings.EqualFold(h, "localhost") {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// refuseHost answers a request hostAllowed refused.
func refuseHost(w http.ResponseWriter) {
	writeRaw(w, http.StatusForbidden, []byte(`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Forbidden: Host or Origin header not allowed"}}`))
}
