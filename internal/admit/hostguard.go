package admit

import (
	"net"
	"net/http"
	"net/url"
	"strings"
)

// HostGuard guards every route against DNS rebinding, as the transport spec
// asks: on a loopback listener only loopback Host names (and the configured
// extra hosts) are served, so a page on evil.example resolving to 127.0.0.1
// is refused; an Origin header, when a browser sends one, must name the host
// it is talking to, a configured extra host, or a configured origin.
type HostGuard struct {
	hosts   []string // lower-case names; "*.example.com" matches subdomains
	origins []string // lower-case scheme://host[:port]
}

// NewHostGuard returns a guard that also admits the given hosts (names, or
// "*.suffix" wildcards) and browser origins (scheme://host[:port]).
func NewHostGuard(hosts, origins []string) *HostGuard {
	g := &HostGuard{}
	for _, h := range hosts {
		g.hosts = append(g.hosts, strings.ToLower(strings.Trim(strings.TrimSpace(h), "[]")))
	}
	for _, o := range origins {
		g.origins = append(g.origins, strings.ToLower(strings.TrimRight(strings.TrimSpace(o), "/")))
	}
	return g
}

// Wrap returns next behind the guard: a refused request gets 403 and never
// reaches next.
func (g *HostGuard) Wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !g.Allowed(r) {
			refuse(w, http.StatusForbidden, forbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// Allowed reports whether r passes the guard.
func (g *HostGuard) Allowed(r *http.Request) bool {
	host := hostOnly(r.Host)
	if local, ok := r.Context().Value(http.LocalAddrContextKey).(*net.TCPAddr); ok && local.IP.IsLoopback() {
		if !loopbackName(host) && !g.knownHost(host) {
			return false
		}
	}
	origin := r.Header.Get("Origin")
	if origin == "" {
		return true // not a browser
	}
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return false
	}
	switch {
	case strings.EqualFold(u.Host, r.Host):
		return true
	case loopbackName(u.Hostname()) && loopbackName(host) && effectivePort(u.Scheme, u.Port()) == effectivePort(requestScheme(r), portOnly(r.Host)):
		// localhost, 127.0.0.1 and ::1 name the same listener; another
		// loopback port is another program.
		return true
	case g.knownHost(strings.ToLower(u.Hostname())):
		return true
	}
	want := strings.ToLower(u.Scheme + "://" + u.Host)
	for _, o := range g.origins {
		if o == want {
			return true
		}
	}
	return false
}

// knownHost reports whether host (lower-case, no port) is a configured extra host.
func (g *HostGuard) knownHost(host string) bool {
	host = strings.ToLower(host)
	for _, h := range g.hosts {
		if suffix, ok := strings.CutPrefix(h, "*"); ok {
			if strings.HasSuffix(host, suffix) && len(host) > len(suffix) {
				return true
			}
			continue
		}
		if h == host {
			return true
		}
	}
	return false
}

func hostOnly(hostport string) string {
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		return h
	}
	return strings.Trim(hostport, "[]")
}

// portOnly returns the port of host:port, or "" when there is none.
func portOnly(hostport string) string {
	if _, p, err := net.SplitHostPort(hostport); err == nil {
		return p
	}
	return ""
}

// requestScheme is the scheme r arrived with.
func requestScheme(r *http.Request) string {
	if r.TLS != nil {
		return "https"
	}
	return "http"
}

// effectivePort is port, or the scheme's default when port is empty.
func effectivePort(scheme, port string) string {
	if port != "" {
		return port
	}
	if scheme == "https" {
		return "443"
	}
	return "80"
}

func loopbackName(h string) bool {
	if strings.EqualFold(h, "localhost") {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}
