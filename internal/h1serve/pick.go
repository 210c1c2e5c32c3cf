package h1serve

import (
	"context"
	"net"
	"net/http"
)

// Env names the environment variable that picks the downstream server:
// unset or "h1serve" for this package's, "stdlib" for net/http's.
const Env = "MCPGW_HTTP_SERVER"

// Runner is what serving needs of an HTTP server; *http.Server and
// *Server both are one.
type Runner interface {
	Serve(net.Listener) error
	Shutdown(context.Context) error
	Close() error
}

// Pick returns the server choice (Env's value) names, built from std's
// handler and settings, and its name: "stdlib" or "h1serve"; "" for a
// choice it does not know, for which this package's server is returned.
// It fails when this package's server is picked and std sets a field it
// does not support (FromStd).
func Pick(std *http.Server, choice string) (Runner, string, error) {
	name := ""
	switch choice {
	case "stdlib":
		return std, "stdlib", nil
	case "", "h1serve":
		name = "h1serve"
	}
	srv, err := FromStd(std)
	if err != nil {
		return nil, "", err
	}
	return srv, name, nil
}
