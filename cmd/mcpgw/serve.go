package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/mcpgw/mcpgw/internal/admit"
	"github.com/mcpgw/mcpgw/internal/app"
	"github.com/mcpgw/mcpgw/internal/config"
	"github.com/mcpgw/mcpgw/internal/h1serve"
	"github.com/mcpgw/mcpgw/internal/panics"
)

// drainTimeout bounds graceful shutdown: in-flight requests get this long to finish.
const drainTimeout = 10 * time.Second

// serveFlags are serve's settings after flags and environment are combined.
type serveFlags struct {
	config, host, port, logLevel, dataDir string
}

// parseServeFlags reads serve's flags; HOST, PORT and LOG_LEVEL apply when their flag is absent.
func parseServeFlags(args []string, stderr io.Writer, lookupEnv func(string) (string, bool)) (serveFlags, int) {
	var f serveFlags
	fs := newFlagSet("serve", stderr)
	fs.StringVar(&f.config, "config", "", "config file (required)")
	fs.StringVar(&f.host, "host", "0.0.0.0", "address to listen on (env HOST)")
	fs.StringVar(&f.port, "port", "4000", "port to listen on; 0 picks a free port (env PORT)")
	fs.StringVar(&f.logLevel, "log-level", "info", "debug, info, warn or error (env LOG_LEVEL)")
	fs.StringVar(&f.dataDir, "data-dir", ".mcpgw", "directory for local state")
	if code := parseFlags(fs, args, stderr); code >= 0 {
		return f, code
	}
	set := map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { set[fl.Name] = true })
	for _, e := range []struct {
		flag, env string
		dst       *string
	}{{"host", "HOST", &f.host}, {"port", "PORT", &f.port}, {"log-level", "LOG_LEVEL", &f.logLevel}} {
		if v, ok := lookupEnv(e.env); ok && v != "" && !set[e.flag] {
			*e.dst = v
		}
	}
	if f.config == "" {
		fmt.Fprintln(stderr, "mcpgw serve: --config is required")
		fs.Usage()
		return f, exitUsage
	}
	if n, err := strconv.Atoi(f.port); err != nil || n < 0 || n > 65535 {
		fmt.Fprintf(stderr, "mcpgw serve: invalid port %q\n", f.port)
		return f, exitUsage
	}
	return f, -1
}

// runServe loads the config, serves HTTP until ctx ends, then drains and returns 0. SIGHUP
// reloads the config.
func runServe(ctx context.Context, args []string, stderr io.Writer, lookupEnv func(string) (string, bool)) int {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	return serveWith(ctx, args, stderr, lookupEnv, hup)
}

// serveWith is runServe with the reload signals read from hup.
func serveWith(ctx context.Context, args []string, stderr io.Writer, lookupEnv func(string) (string, bool), hup <-chan os.Signal) int {
	f, code := parseServeFlags(args, stderr, lookupEnv)
	if code >= 0 {
		return code
	}
	level, err := parseLevel(f.logLevel)
	if err != nil {
		fmt.Fprintf(stderr, "mcpgw serve: %v\n", err)
		return exitUsage
	}
	log := slog.New(slog.NewJSONHandler(stderr, &slog.HandlerOptions{Level: level}))

	cfg, problems, sum, err := app.LoadConfigFile(f.config, lookupEnv)
	for _, p := range problems {
		lvl := slog.LevelWarn
		if p.Severity == config.SeverityError {
			lvl = slog.LevelError
		}
		log.Log(ctx, lvl, "config problem", "file", f.config, "line", p.Line, "problem", p.Msg)
	}
	if err != nil {
		log.Error("config not loaded", "file", f.config, "error", err.Error())
		return exitError
	}
	a, err := app.New(cfg, app.WithLookupEnv(lookupEnv), app.WithLogger(log), app.WithVersion(buildVersion()), app.WithDataDir(f.dataDir),
		app.WithAccessLogWriter(stderr))
	if err != nil {
		log.Error("cannot start the gateway", "error", err.Error())
		return exitError
	}

	ln, err := net.Listen("tcp", net.JoinHostPort(f.host, f.port))
	if err != nil {
		log.Error("cannot listen", "error", err.Error())
		_ = a.Close(context.Background())
		return exitError
	}
	ln = admit.LimitListener(ln, cfg.General.HTTP.MaxConnections)
	choice, _ := lookupEnv(h1serve.Env)
	srv, kind, err := h1serve.Pick(a.Server(), choice)
	if err != nil {
		log.Error("cannot serve HTTP", "error", err.Error())
		_ = ln.Close()
		_ = a.Close(context.Background())
		return exitError
	}
	if kind == "" {
		log.Warn("unknown "+h1serve.Env+"; serving with the built-in server", "value", choice)
		kind = "h1serve"
	}
	served := make(chan error, 1)
	panics.Go(log, "serving HTTP", func() { served <- srv.Serve(ln) }, func() { served <- errors.New("the HTTP server panicked") })
	a.Start()
	stopReload := startReloading(a, f.config, sum, lookupEnv, log, hup)
	log.Info("listening", "addr", ln.Addr().String(), "version", buildVersion(), "config", f.config,
		"servers", len(cfg.Servers), "data_dir", f.dataDir, "http_server", kind)

	select {
	case err := <-served:
		log.Error("server failed", "error", err.Error())
		stopReload()
		_ = a.Close(context.Background())
		return exitError
	case <-ctx.Done():
	}
	stopReload()
	log.Info("shutting down", "drain_timeout", drainTimeout.String())
	sctx, cancel := context.WithTimeout(context.Background(), drainTimeout)
	defer cancel()
	a.Drain() // long-lived downstream streams end first, so the drain can finish
	if err := srv.Shutdown(sctx); err != nil {
		log.Warn("drain did not finish; closing remaining connections", "error", err.Error())
		_ = srv.Close()
	}
	<-served
	_ = a.Close(sctx)
	log.Info("stopped")
	return exitOK
}

// startReloading reloads a's config file on every signal from hup and on every change the
// directory watch sees (when it cannot start, signals still reload). The returned func stops
// both and waits for a reload that is running.
func startReloading(a *app.App, path string, loaded app.ConfigSum, lookupEnv func(string) (string, bool),
	log *slog.Logger, hup <-chan os.Signal) func() {
	r := app.NewReloader(a, path, app.ReloadOptions{LookupEnv: lookupEnv, Loaded: loaded})
	if err := r.Watch(); err != nil {
		log.Warn("config file changes are not watched; reload with SIGHUP", "file", path, "error", err.Error())
	}
	done := make(chan struct{})
	ended := make(chan struct{})
	panics.Go(log, "reading reload signals", func() {
		defer close(ended)
		for {
			select {
			case <-done:
				return
			case <-hup:
				log.Info("reload signal received", "file", path)
				r.Trigger()
			}
		}
	}, nil)
	return func() {
		close(done)
		<-ended
		r.Close()
	}
}
