// Command soak runs the gateway binary as a child process and attacks it with
// what a stranger (an unauthenticated caller, or a hostile upstream) can make
// it hold, measuring the process before, at the peak of and after each attack:
// VmRSS, VmHWM and fds from /proc, goroutines and heap from the debug address
// a binary built with -tags soakdebug serves.
//
// Usage:
//
//	soak [-only a,b] [-bin path] [-out file.md] [-wait 75s] [-fixture path]
//	soak stdio-server -mode env|garbage   (used by the scenarios as a stdio upstream)
//
// Every connection goes to 127.0.0.1; every loop is bounded in count and
// time; a gateway that dies or passes -rss-limit is recorded as the result.
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/mcpgw/mcpgw/internal/benchfig"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "stdio-server" {
		os.Exit(runStdioServer(os.Args[2:]))
	}
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "soak:", err)
		os.Exit(1)
	}
}

// harness holds what every scenario shares.
type harness struct {
	repo       string
	bin        string
	self       string
	fixture    string
	tmp        string
	wait       time.Duration
	rssLimitKB int64
	key        string
	salt       string
	// loadAtStart is the load average when the run began: other work on
	// the machine skews every figure.
	loadAtStart string
}

func run() error {
	only := flag.String("only", "", "comma-separated scenarios to run (default all): "+strings.Join(scenarioNames(), ","))
	bin := flag.String("bin", "", "gateway binary (default: build ./cmd/mcpgw with -tags soakdebug)")
	out := flag.String("out", "", "also write the markdown table to this file")
	wait := flag.Duration("wait", 75*time.Second, "how long the trickle and idle-connection checks wait for the gateway to cut them")
	fixture := flag.String("fixture", "", "go-sdk everything-server (default $MCPGW_GO_FIXTURE or .tools/bin/everything-server)")
	repo := flag.String("repo", ".", "repository root (to build the gateway and find the fixture)")
	rssLimit := flag.Float64("rss-limit", 4, "kill the gateway when its VmRSS passes this many GiB")
	flag.Parse()

	h := &harness{repo: *repo, wait: *wait, rssLimitKB: int64(*rssLimit * (1 << 20)), loadAtStart: benchfig.LoadAverage()}
	var err error
	if h.self, err = os.Executable(); err != nil {
		return err
	}
	if h.tmp, err = os.MkdirTemp("", "mcpgw-soak-"); err != nil {
		return err
	}
	defer os.RemoveAll(h.tmp)
	h.key, h.salt = "sk-soak-"+randHex(16), randHex(32)
	selected, err := pick(*only)
	if err != nil {
		return err
	}
	if h.bin = *bin; h.bin == "" {
		h.bin = filepath.Join(h.tmp, "mcpgw")
		logf("building the gateway with -tags soakdebug")
		cmd := exec.Command("go", "build", "-tags", "soakdebug", "-o", h.bin, "./cmd/mcpgw")
		cmd.Dir, cmd.Stdout, cmd.Stderr = h.repo, os.Stderr, os.Stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("go build: %w", err)
		}
	}
	h.fixture = findFixture(*fixture, h.repo)

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	start := time.Now()
	var results []*result
	for _, s := range selected {
		if ctx.Err() != nil {
			break
		}
		logf("scenario %s: %s", s.name, s.title)
		r := h.runScenario(ctx, s)
		logf("scenario %s: %s in %.0f s", s.name, r.outcome, r.seconds)
		results = append(results, r)
	}
	table := renderTable(results, h, time.Since(start))
	fmt.Print(table)
	if *out != "" {
		return os.WriteFile(*out, []byte(table), 0o644)
	}
	return ctx.Err()
}

func pick(only string) ([]scenario, error) {
	all := scenarios()
	if only == "" {
		return all, nil
	}
	var out []scenario
	for _, name := range strings.Split(only, ",") {
		name = strings.TrimSpace(name)
		found := false
		for _, s := range all {
			if s.name == name {
				out = append(out, s)
				found = true
			}
		}
		if !found {
			return nil, fmt.Errorf("unknown scenario %q (have %s)", name, strings.Join(scenarioNames(), ", "))
		}
	}
	return out, nil
}

func scenarioNames() []string {
	var names []string
	for _, s := range scenarios() {
		names = append(names, s.name)
	}
	return names
}

// findFixture returns the go-sdk fixture binary, or "" when there is none
// (or the one named by the flag does not exist).
func findFixture(flagValue, repo string) string {
	candidates := []string{flagValue}
	if flagValue == "" {
		candidates = []string{os.Getenv("MCPGW_GO_FIXTURE"), filepath.Join(repo, ".tools", "bin", "everything-server")}
	}
	for _, p := range candidates {
		if p == "" {
			continue
		}
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			abs, _ := filepath.Abs(p)
			return abs
		}
	}
	return ""
}

var errNoFixture = errors.New("needs the go-sdk fixture: -fixture, $MCPGW_GO_FIXTURE or .tools/bin/everything-server (bash scripts/test.sh installs it)")

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "soak %s: %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
}
