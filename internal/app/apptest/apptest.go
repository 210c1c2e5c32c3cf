// Package apptest serves an app.App in tests the way `mcpgw serve` does: on
// a loopback listener bounded by admit.LimitListener, with the server
// h1serve.Pick chooses (the gateway's own, or net/http's with
// MCPGW_HTTP_SERVER=stdlib). Only tests import it.
package apptest

import (
	"context"
	"net"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/mcpgw/mcpgw/internal/admit"
	"github.com/mcpgw/mcpgw/internal/app"
	"github.com/mcpgw/mcpgw/internal/h1serve"
)

// Serve serves a on a loopback port that takes at most maxConns
// connections (0: admit.DefaultMaxConnections), marks it started, and returns its base URL
// ("http://host:port") and stop, which drains a, closes the server, then
// closes a within 10 s. stop may be called more than once; it also runs
// when tb ends.
func Serve(tb testing.TB, a *app.App, maxConns int) (url string, stop func()) {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	url = "http://" + ln.Addr().String()
	ln = admit.LimitListener(ln, maxConns)
	srv, _, err := h1serve.Pick(a.Server(), os.Getenv(h1serve.Env))
	if err != nil {
		tb.Fatal(err)
	}
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = srv.Serve(ln)
	}()
	a.Start()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			a.Drain()
			_ = srv.Close()
			<-served
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_ = a.Close(ctx)
		})
	}
	tb.Cleanup(stop)
	return url, stop
}
