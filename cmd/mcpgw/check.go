package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/mcpgw/mcpgw/internal/app"
	"github.com/mcpgw/mcpgw/internal/config"
	"github.com/mcpgw/mcpgw/internal/identity"
)

// runCheck validates a config file and prints every problem as "FILE:LINE: SEVERITY: MSG"
// (or "FILE: SEVERITY: MSG" when no line applies), then a summary line. Exit 1 on any error,
// else 0. Beyond the file itself it applies what serve checks at start (the master key, the
// environment, every upstream's settings) and that each stdio command can be found, so a
// config check passes is one serve starts with.
func runCheck(args []string, stdout, stderr io.Writer, lookupEnv func(string) (string, bool)) int {
	fs := newFlagSet("check", stderr)
	path := fs.String("config", "", "config file to validate (required)")
	if code := parseFlags(fs, args, stderr); code >= 0 {
		return code
	}
	if *path == "" {
		fmt.Fprintln(stderr, "mcpgw check: --config is required")
		fs.Usage()
		return exitUsage
	}
	cfg, problems, err := config.Load(*path, app.ConfigOptions(lookupEnv))
	if err != nil && problems == nil {
		fmt.Fprintf(stdout, "%s: error: %v\n", *path, err)
		return exitError
	}
	if cfg != nil {
		problems = append(problems, startProblems(cfg, lookupEnv)...)
		// By line, as Load sorts its own; problems without a line come last.
		slices.SortStableFunc(problems, func(a, b config.Problem) int {
			return cmp.Compare(lineKey(a.Line), lineKey(b.Line))
		})
	}
	var errs, warns int
	for _, p := range problems {
		if p.Severity == config.SeverityError {
			errs++
		} else {
			warns++
		}
		if p.Line > 0 {
			fmt.Fprintf(stdout, "%s:%d: %s: %s\n", *path, p.Line, p.Severity, p.Msg)
		} else {
			fmt.Fprintf(stdout, "%s: %s: %s\n", *path, p.Severity, p.Msg)
		}
	}
	summary := fmt.Sprintf("%s: %s, %s", *path, plural(errs, "error"), plural(warns, "warning"))
	if cfg != nil {
		summary += fmt.Sprintf("; %s", plural(len(cfg.Servers), "server"))
	}
	fmt.Fprintln(stdout, summary)
	if errs > 0 {
		return exitError
	}
	return exitOK
}

// startProblems are the errors serve would stop at for a config that loads: the master key
// rule (identity's own, with LITELLM_DANGEROUSLY_PERMIT_WEAK_OR_UNSET_MASTER_KEY), stdio
// commands that cannot be found, and anything else building the gateway refuses (serve's own
// wiring, run without starting anything).
func startProblems(cfg *config.Config, lookupEnv func(string) (string, bool)) []config.Problem {
	var out []config.Problem
	bad := func(line int, msg string) {
		out = append(out, config.Problem{Line: line, Severity: config.SeverityError, Msg: msg})
	}
	env, err := app.ReadEnv(lookupEnv)
	if err != nil {
		bad(0, err.Error())
		return out
	}
	if _, err := identity.New(identity.Config{MasterKey: cfg.General.MasterKey.Reveal(),
		CustomAuthURL: cfg.General.CustomAuth, PermitWeak: env.PermitWeak}); err != nil {
		bad(cfg.General.MasterKeyLine, strings.TrimPrefix(err.Error(), "identity: "))
	}
	for _, s := range cfg.Servers {
		if s.Command == "" || s.Transport != config.TransportStdio {
			continue
		}
		if err := findCommand(s.Command, lookupEnv); err != nil {
			bad(s.CommandLine, fmt.Sprintf("mcp_servers.%s.command: %v", s.Name, err))
		}
	}
	if len(out) > 0 {
		return out
	}
	a, err := app.New(cfg, app.WithLookupEnv(lookupEnv))
	if err != nil {
		bad(0, err.Error())
		return out
	}
	_ = a.Close(context.Background())
	return out
}

// findCommand reports whether a stdio server's command can be started as serve would start
// it: a name with a slash is a path (relative to the working directory), any other name is
// looked up in PATH. The error names only the command, which is the operator's own text.
func findCommand(command string, lookupEnv func(string) (string, bool)) error {
	if strings.ContainsRune(command, '/') {
		return executable(command)
	}
	path, _ := lookupEnv("PATH")
	for _, dir := range filepath.SplitList(path) {
		if dir == "" {
			dir = "."
		}
		if executable(filepath.Join(dir, command)) == nil {
			return nil
		}
	}
	return fmt.Errorf("%q is not found in PATH; install it or give its full path", command)
}

// executable reports whether path is an existing regular file someone may execute.
func executable(path string) error {
	st, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%q does not exist", path)
	case err != nil:
		return fmt.Errorf("%q cannot be inspected: %v", path, errors.Unwrap(err))
	case st.IsDir():
		return fmt.Errorf("%q is a directory", path)
	case st.Mode().Perm()&0o111 == 0:
		return fmt.Errorf("%q is not executable", path)
	}
	return nil
}

// lineKey orders problems by line, those without one (0) last.
func lineKey(line int) int {
	if line <= 0 {
		return int(^uint(0) >> 1)
	}
	return line
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
