package main

import (
	"fmt"
	"io"

	"github.com/mcpgw/mcpgw/internal/config"
)

// runCheck validates a config file and prints every problem as "FILE:LINE: SEVERITY: MSG",
// then a summary line. Exit 1 on any error, else 0.
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
	cfg, problems, err := config.Load(*path, configOptions(lookupEnv))
	if err != nil && problems == nil {
		fmt.Fprintf(stdout, "%s: error: %v\n", *path, err)
		return exitError
	}
	var errs, warns int
	for _, p := range problems {
		if p.Severity == config.SeverityError {
			errs++
		} else {
			warns++
		}
		fmt.Fprintf(stdout, "%s:%d: %s: %s\n", *path, p.Line, p.Severity, p.Msg)
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

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
