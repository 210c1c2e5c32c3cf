package h1serve

import (
	"crypto/tls"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestPick: each choice gets its server, built from the standard server's
// handler and settings, and an unknown one this package's, named "".
func TestPick(t *testing.T) {
	h := http.NotFoundHandler()
	std := &http.Server{Handler: h, ReadHeaderTimeout: 3 * time.Second, IdleTimeout: 7 * time.Second, MaxHeaderBytes: 1234}
	for _, c := range []struct{ choice, name string }{{"", "h1serve"}, {"h1serve", "h1serve"}, {"stdlib", "stdlib"}, {"nginx", ""}} {
		srv, name, err := Pick(std, c.choice)
		if err != nil {
			t.Fatalf("Pick(%q): %v", c.choice, err)
		}
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

// TestFromStdRefusesWhatItDoesNotHonour: every field FromStd carries over
// is carried; any other field set is an error naming it (and Pick's for
// this package's server), not a setting silently dropped. net/http's own
// server is picked whatever it sets.
func TestFromStdRefusesWhatItDoesNotHonour(t *testing.T) {
	h := http.NotFoundHandler()
	full := &http.Server{Handler: h, ReadHeaderTimeout: time.Second, WriteTimeout: 2 * time.Second,
		IdleTimeout: 3 * time.Second, MaxHeaderBytes: 4, ErrorLog: nil}
	s, err := FromStd(full)
	if err != nil {
		t.Fatal(err)
	}
	if s.Handler == nil || s.ReadHeaderTimeout != time.Second || s.WriteTimeout != 2*time.Second || s.IdleTimeout != 3*time.Second || s.MaxHeaderBytes != 4 {
		t.Errorf("FromStd = %+v", s)
	}
	for name, set := range map[string]func(*http.Server){
		"ReadTimeout":                  func(s *http.Server) { s.ReadTimeout = time.Second },
		"TLSConfig":                    func(s *http.Server) { s.TLSConfig = &tls.Config{} },
		"ConnState":                    func(s *http.Server) { s.ConnState = func(net.Conn, http.ConnState) {} },
		"Addr":                         func(s *http.Server) { s.Addr = ":80" },
		"DisableGeneralOptionsHandler": func(s *http.Server) { s.DisableGeneralOptionsHandler = true },
	} {
		std := &http.Server{Handler: h}
		set(std)
		if _, err := FromStd(std); err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("FromStd with %s set: %v, want an error naming it", name, err)
		}
		if _, _, err := Pick(std, "h1serve"); err == nil {
			t.Errorf("Pick of h1serve with %s set: no error", name)
		}
		if srv, _, err := Pick(std, "stdlib"); err != nil || srv != std {
			t.Errorf("Pick of stdlib with %s set: %v, %v", name, srv, err)
		}
	}
}
