package main

// The sessions subcommand: the gateway's memory with many idle legacy sessions.

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// runSessions opens N legacy sessions on the gateway and leaves them idle,
// reading the gateway's VmRSS before, after, and after each session also
// holds its standalone GET stream open.
func runSessions(args []string) error {
	fs := flag.NewFlagSet("sessions", flag.ContinueOnError)
	u := fs.String("url", "", "gateway MCP endpoint (loopback only)")
	key := fs.String("key", "", "bearer token")
	n := fs.Int("n", 1000, "sessions")
	c := fs.Int("c", 8, "concurrent openers")
	pid := fs.Int("pid", 0, "gateway process id (VmRSS is read from /proc/<pid>/status)")
	streams := fs.Bool("streams", true, "then open each session's GET stream and read VmRSS again")
	settle := fs.Duration("settle", time.Second, "wait before each reading")
	out := fs.String("out", "", "also append the JSON line to this file")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := loopback(*u); err != nil {
		return err
	}
	if *pid <= 0 {
		return errors.New("-pid is required")
	}
	r := Result{Kind: "sessions", Sessions: *n}
	var err error
	time.Sleep(*settle)
	if r.RSSBaseKB, err = vmRSS(*pid); err != nil {
		return err
	}
	t := &target{client: newClient(*c), url: *u, key: *key}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	t0 := time.Now()
	ids, err := openSessions(ctx, t, *n, *c)
	if err != nil {
		return fmt.Errorf("opening sessions: %w", err)
	}
	opened := time.Since(t0)
	r.Seconds = round3(opened.Seconds())
	r.RPS = round2(float64(*n) / opened.Seconds())
	time.Sleep(*settle)
	if r.RSSSessKB, err = vmRSS(*pid); err != nil {
		return err
	}
	if *streams {
		sctx, scancel := context.WithCancel(ctx)
		defer scancel()
		bodies, err := openStreams(sctx, *u, *key, ids)
		defer closeAll(bodies)
		if err != nil {
			return err
		}
		time.Sleep(*settle)
		if r.RSSStreamsKB, err = vmRSS(*pid); err != nil {
			return err
		}
	}
	return emit(r, *out)
}

// openSessions opens n legacy sessions with c concurrent openers and returns their ids, or the
// first error.
func openSessions(ctx context.Context, t *target, n, c int) ([]string, error) {
	ids := make([]string, n)
	var next atomic.Int64
	var firstErr error
	var once sync.Once
	var wg sync.WaitGroup
	for w := 0; w < c; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				id, err := t.session(ctx)
				if err == nil && id == "" {
					err = errors.New("initialize: no Mcp-Session-Id")
				}
				if err != nil {
					once.Do(func() { firstErr = err })
					return
				}
				ids[i] = id
			}
		}()
	}
	wg.Wait()
	if firstErr != nil {
		return nil, firstErr
	}
	return ids, nil
}

// openStreams opens each session's standalone GET stream, one connection per stream, and reads
// its first line; it returns the bodies opened so far, which the caller holds open and closes.
func openStreams(ctx context.Context, u, key string, ids []string) ([]io.Closer, error) {
	sc := &http.Client{Transport: &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 1, DisableCompression: true}}
	var bodies []io.Closer
	for _, id := range ids {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		req.Header.Set("Accept", "text/event-stream")
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Mcp-Session-Id", id)
		req.Header.Set("MCP-Protocol-Version", legacyVersion)
		resp, err := sc.Do(req)
		if err != nil {
			return bodies, fmt.Errorf("GET stream: %w", err)
		}
		bodies = append(bodies, resp.Body)
		if resp.StatusCode != http.StatusOK {
			return bodies, fmt.Errorf("GET stream: HTTP %d", resp.StatusCode)
		}
		line, err := bufio.NewReader(resp.Body).ReadString('\n')
		if err != nil || !strings.HasPrefix(line, ":") {
			return bodies, fmt.Errorf("GET stream: first line %q, %v", line, err)
		}
	}
	return bodies, nil
}

// closeAll closes every body.
func closeAll(bodies []io.Closer) {
	for _, b := range bodies {
		b.Close()
	}
}
