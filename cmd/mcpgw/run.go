package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"runtime/debug"
	"strings"
)

// version is the release version, set with -ldflags "-X main.version=v1.2.3"; when empty it
// comes from the module's build info, else "dev". It is the one package-level variable, as
// -ldflags requires.
var version string

// Exit codes.
const (
	exitOK    = 0
	exitError = 1 // the command failed (bad config, server error)
	exitUsage = 2 // the command line was wrong
)

const usageText = `usage:
  mcpgw serve --config FILE [--host HOST] [--port PORT] [--log-level LEVEL] [--data-dir DIR]
  mcpgw check --config FILE
  mcpgw key create|list|revoke [flags]   (mcpgw key help for the flags)
  mcpgw version
`

// run executes the command line args (without the program name) and returns the exit code.
// ctx ends serve; lookupEnv stands for os.LookupEnv.
func run(ctx context.Context, args []string, stdout, stderr io.Writer, lookupEnv func(string) (string, bool)) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usageText)
		return exitUsage
	}
	switch args[0] {
	case "serve":
		return runServe(ctx, args[1:], stderr, lookupEnv)
	case "check":
		return runCheck(args[1:], stdout, stderr, lookupEnv)
	case "key":
		return runKey(ctx, args[1:], stdout, stderr, lookupEnv)
	case "version", "--version", "-version":
		fmt.Fprintf(stdout, "mcpgw %s\n", buildVersion())
		return exitOK
	case "help", "-h", "-help", "--help":
		fmt.Fprint(stdout, usageText)
		return exitOK
	}
	fmt.Fprintf(stderr, "mcpgw: unknown command %q\n%s", args[0], usageText)
	return exitUsage
}

// buildVersion returns the version to report.
func buildVersion() string {
	if version != "" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}

// newFlagSet returns a flag set for one subcommand whose errors and usage go to stderr.
func newFlagSet(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("mcpgw "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	return fs
}

// parseFlags parses args; it returns the exit code to stop with, or -1 to go on.
func parseFlags(fs *flag.FlagSet, args []string, stderr io.Writer) int {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "%s: unexpected argument %q\n", fs.Name(), fs.Arg(0))
		return exitUsage
	}
	return -1
}

// parseLevel maps a --log-level / LOG_LEVEL word to a slog level.
func parseLevel(s string) (slog.Level, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "debug":
		return slog.LevelDebug, nil
	case "", "info":
		return slog.LevelInfo, nil
	case "warn", "warning":
		return slog.LevelWarn, nil
	case "error":
		return slog.LevelError, nil
	}
	return 0, fmt.Errorf("unknown log level %q (want debug, info, warn or error)", s)
}
