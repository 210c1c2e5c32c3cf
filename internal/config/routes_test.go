package config

import "testing"

// TestRoutesPrecedence: a later server's server_id or alias must never take
// over an earlier (or later) server's name; a name wins, then an id, then an
// alias, and among equals the earlier server.
func TestRoutesPrecedence(t *testing.T) {
	srv := func(name, id, alias string) Server { return Server{Name: name, ServerID: id, Alias: alias} }
	cases := []struct {
		name    string
		servers []Server
		key     string
		want    string // "" means no route
	}{
		{"name", []Server{srv("x", "x", "")}, "x", "x"},
		{"id", []Server{srv("x", "xid", "")}, "xid", "x"},
		{"alias", []Server{srv("x", "x", "ex")}, "ex", "x"},
		{"unknown", []Server{srv("x", "x", "")}, "y", ""},
		{"empty alias is no route", []Server{srv("x", "x", "")}, "", ""},
		{"later id does not shadow earlier name", []Server{srv("x", "x", ""), srv("y", "x", "")}, "x", "x"},
		{"earlier id does not shadow later name", []Server{srv("y", "x", ""), srv("x", "x2", "")}, "x", "x"},
		{"later alias does not shadow earlier name", []Server{srv("x", "x", ""), srv("y", "y", "x")}, "x", "x"},
		{"earlier alias does not shadow later name", []Server{srv("y", "y", "x"), srv("x", "x", "")}, "x", "x"},
		{"alias does not shadow an id", []Server{srv("a", "k", ""), srv("b", "b", "k")}, "k", "a"},
		{"alias does not shadow a later id", []Server{srv("b", "b", "k"), srv("a", "k", "")}, "k", "a"},
		{"same alias: earlier wins", []Server{srv("a", "a", "k"), srv("b", "b", "k")}, "k", "a"},
		{"same id: earlier wins", []Server{srv("a", "k", ""), srv("b", "k", "")}, "k", "a"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := Routes(tc.servers)[tc.key]
			if tc.want == "" {
				if ok {
					t.Fatalf("Routes[%q] = %q, want no route", tc.key, got)
				}
				return
			}
			if got != tc.want {
				t.Fatalf("Routes[%q] = %q, want %q", tc.key, got, tc.want)
			}
			cfg := &Config{Servers: tc.servers}
			if s, ok := cfg.Server(tc.key); !ok || s.Name != tc.want {
				t.Fatalf("Config.Server(%q) = %v, %v; want %q", tc.key, s, ok, tc.want)
			}
		})
	}
}
