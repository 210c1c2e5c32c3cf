package h1serve

import (
	"net/http"
	"testing"
	"time"
)

// TestPick: each choice gets its server, built from the standard server's
// handler and settings, and an unknown one this package's, named "".
func TestPick(t *testing.T) {
	h := http.NotFoundHandler()
	std := &http.Server{Handler: h, ReadHeaderTimeout: 3 * time.Second, IdleTimeout: 7 * time.Second, MaxHeaderBytes: 1234}
	for _, c := range []struct{ choice, name string }{{"", "h1serve"}, {"h1serve", "h1serve"}, {"stdlib", "stdlib"}, {"nginx", ""}} {
		srv, name := Pick(std, c.choice)
		if name != c.name {
			t.Errorf("Pick(%q) named %q, want %q", c.choice, name, c.name)
		}
		switch s := srv.(type) {
		case *http.Server:
			if c.choice != "stdlib" || s != std {
				t.Errorf("Pick(%q) = net/http's server", c.choice)
			}
		case *Server:
			if c.choice == "stdlib" || s.ReadHeaderTimeout != 3*time.Second || s.IdleTimeout != 7*time.Second || s.MaxHeaderBytes != 1234 || s.Handler == nil {
				t.Errorf("Pick(%q) = %+v", c.choice, s)
			}
		default:
			t.Errorf("Pick(%q) = %T", c.choice, srv)
		}
	}
}
