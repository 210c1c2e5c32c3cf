// Command revproxy is the reference of bench/peers.sh: a plain
// net/http/httputil.ReverseProxy in front of one upstream, the cost of one
// HTTP hop with no MCP work at all. It listens on a loopback address only,
// pools upstream connections as the gateway's upstream client does (64 idle
// per host) and flushes streamed answers at once.
//
//	revproxy -listen 127.0.0.1:PORT -target http://127.0.0.1:PORT
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/signal"
	"syscall"
	"time"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:0", "loopback address to serve on")
	target := flag.String("target", "", "upstream base URL (loopback)")
	flag.Parse()
	if err := run(*listen, *target); err != nil {
		fmt.Fprintln(os.Stderr, "revproxy:", err)
		os.Exit(1)
	}
}

func run(listen, target string) error {
	u, err := url.Parse(target)
	if err != nil || u.Host == "" {
		return fmt.Errorf("-target %q is not a URL", target)
	}
	for _, hostport := range []string{listen, u.Host} {
		host, _, err := net.SplitHostPort(hostport)
		if ip := net.ParseIP(host); err != nil || ip == nil || !ip.IsLoopback() {
			return fmt.Errorf("%s: only loopback addresses are allowed", hostport)
		}
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost, tr.MaxIdleConns = 64, 256
	rp := &httputil.ReverseProxy{
		Rewrite:       func(r *httputil.ProxyRequest) { r.SetURL(u); r.Out.Host = r.In.Host },
		Transport:     tr,
		FlushInterval: -1, // SSE answers go out as they come
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: rp, ReadHeaderTimeout: 10 * time.Second}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
