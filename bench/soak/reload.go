package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Reload soak: its load and its rewrites.
const (
	reloadCallers  = 10 // tools/call at once against the unchanged server
	reloadRewrites = 50 // config file rewrites, one in ten invalid
	reloadStreams  = 4  // legacy GET streams held on the unchanged server
)

// reloadState is what one rewrite of the config file says; keep never
// changes.
type reloadState struct {
	otherURL, otherDesc int
	extra, invalid      bool
}

func (s reloadState) yaml(key, keep, other, extra string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "general_settings:\n  master_key: %s\nmcp_servers:\n  keep:\n    url: %s\n", key, keep)
	fmt.Fprintf(&b, "  other:\n    url: %s?v=%d\n    description: revision %d\n", other, s.otherURL, s.otherDesc)
	if s.extra {
		fmt.Fprintf(&b, "  extra:\n    url: %s\n", extra)
	}
	if s.invalid {
		b.WriteString("  broken:\n    url: http://127.0.0.1:1/mcp\n    transport: carrier-pigeon\n")
	}
	return b.String()
}

// next is rewrite i (1-based): every tenth, offset by five, is invalid;
// the others change other's url, its description, add or remove extra.
func (s reloadState) next(i int) reloadState {
	n := s
	n.invalid = i%10 == 5
	if n.invalid {
		return n
	}
	switch i % 3 {
	case 0:
		n.otherURL = i
	case 1:
		n.otherDesc = i
	case 2:
		n.extra = !s.extra
	}
	return n
}

// reloadSoak runs tools/call at C=10 against a server whose config never
// changes, with legacy GET streams held on it, while the config file is
// rewritten 50 times (each rewrite also signalled with SIGHUP); it reports
// the calls lost, the reloads applied and refused, and whether the streams
// lasted.
func reloadSoak(ctx context.Context, h *harness, r *result) error {
	var urls [3]string
	for i := range urls {
		u, stop, err := h.startFixture(true)
		if err != nil {
			return err
		}
		defer stop()
		urls[i] = u
	}
	keep, other, extra := urls[0], urls[1], urls[2]
	state := reloadState{}
	g, err := h.startGateway(r, state.yaml(h.key, keep, other, extra))
	if err != nil {
		return err
	}
	cfgPath := filepath.Join(h.tmp, r.name, "config.yaml")
	h.listTools(ctx, g)
	r.begin(h, g)
	var streams []*net.TCPConn
	for i := range reloadStreams {
		c, err := openScopedLegacyGET(ctx, h, g, "/keep/mcp", i)
		if err != nil {
			return fmt.Errorf("legacy stream: %w", err)
		}
		defer c.Close()
		streams = append(streams, c)
	}

	load := startReloadLoad(ctx, h, g)
	start := time.Now()
	applied, refused, gen := 0, 0, int64(1)
	for i := 1; i <= reloadRewrites && ctx.Err() == nil; i++ {
		state = state.next(i)
		if err := writeRenamed(cfgPath, state.yaml(h.key, keep, other, extra)); err != nil {
			load.stop()
			return err
		}
		_ = g.cmd.Process.Signal(syscall.SIGHUP)
		if state.invalid {
			if waitConfig(ctx, g, func(n int64, lastErr string) bool { return lastErr != "" && n == gen }) {
				refused++
			}
			continue
		}
		gen++
		if waitConfig(ctx, g, func(n int64, lastErr string) bool { return n == gen && lastErr == "" }) {
			applied++
		}
	}
	took := time.Since(start)
	load.stop()
	r.endPeak()
	r.note("%d rewrites in %.1f s (one in ten invalid): %d applied, %d invalid refused with the config unchanged",
		reloadRewrites, took.Seconds(), applied, refused)
	r.note("tools/call to the unchanged server at C=%d: %d answered, **%d lost**", reloadCallers, load.ok.Load(), load.lost.Load())
	if load.firstLost != "" {
		r.note("first lost: %s", clip(load.firstLost, 120))
	}
	open := 0
	for _, s := range streams {
		if streamOpen(s) {
			open++
		}
	}
	r.note("legacy GET streams on the unchanged server still open: %d of %d", open, len(streams))
	cut(streams)
	r.settle(ctx, 2*time.Second)
	return nil
}

// reloadLoad is the reload soak's callers.
type reloadLoad struct {
	ok, lost  atomic.Int64
	once      sync.Once
	firstLost string // set once; read after stop
	stop      func() // ends the calls and waits for the callers
}

// startReloadLoad calls keep-test_simple_text with reloadCallers callers
// until stop, counting the answers and the calls lost.
func startReloadLoad(ctx context.Context, h *harness, g *gateway) *reloadLoad {
	lctx, cancel := context.WithCancel(ctx)
	l := &reloadLoad{}
	var wg sync.WaitGroup
	c := newClient(reloadCallers)
	for range reloadCallers {
		wg.Go(func() {
			for lctx.Err() == nil {
				a := h.callTool(lctx, g, c, "keep-test_simple_text", `{}`, nil)
				switch {
				case a.ok():
					l.ok.Add(1)
				case lctx.Err() == nil:
					l.lost.Add(1)
					l.once.Do(func() { l.firstLost = fmt.Sprintf("HTTP %d %s", a.status, failure(a)) })
				}
			}
		})
	}
	l.stop = func() { cancel(); wg.Wait(); c.CloseIdleConnections() }
	return l
}

// openScopedLegacyGET opens a legacy session on path and then its GET stream.
func openScopedLegacyGET(ctx context.Context, h *harness, g *gateway, path string, i int) (*net.TCPConn, error) {
	auth := map[string]string{"Authorization": "Bearer " + h.key}
	a := post(ctx, g.client, g.url+path, auth,
		fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":%q,"capabilities":{},"clientInfo":{"name":"soak-%d","version":"1"}}}`, legacyVersion, i))
	sid := a.hdr.Get("Mcp-Session-Id")
	if a.err != nil || a.status != 200 || sid == "" {
		return nil, fmt.Errorf("initialize: HTTP %d %v", a.status, a.err)
	}
	hdr := map[string]string{"Authorization": "Bearer " + h.key, "Mcp-Session-Id": sid, "MCP-Protocol-Version": legacyVersion}
	if a := post(ctx, g.client, g.url+path, hdr, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); a.status != 202 {
		return nil, fmt.Errorf("notifications/initialized: HTTP %d %v", a.status, a.err)
	}
	hdr["Accept"] = "text/event-stream"
	return openStream(g.addr, rawRequest("GET", g.addr, path, hdr, ""))
}

// streamOpen reports whether the gateway has not closed c: a read that
// times out (nothing to read) or reads something is open; EOF is not.
func streamOpen(c *net.TCPConn) bool {
	_ = c.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
	buf := make([]byte, 4096)
	for {
		_, err := c.Read(buf)
		var ne net.Error
		switch {
		case err == nil:
			continue // drain what the stream carried
		case errors.As(err, &ne) && ne.Timeout():
			return true
		default:
			return false
		}
	}
}

// writeRenamed replaces path's content as editors do: a new file renamed
// over it.
func writeRenamed(path, content string) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(content), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// waitConfig polls readiness's config detail until ok holds (true) or 10 s
// pass (false).
func waitConfig(ctx context.Context, g *gateway, ok func(gen int64, lastErr string) bool) bool {
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline) && ctx.Err() == nil; time.Sleep(20 * time.Millisecond) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, g.url+"/health/readiness", nil)
		resp, err := g.client.Do(req)
		if err != nil {
			continue
		}
		var body struct {
			Config struct {
				Generation      int64  `json:"generation"`
				LastReloadError string `json:"last_reload_error"`
			} `json:"config"`
		}
		err = json.NewDecoder(resp.Body).Decode(&body)
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if err == nil && ok(body.Config.Generation, body.Config.LastReloadError) {
			return true
		}
	}
	return false
}
