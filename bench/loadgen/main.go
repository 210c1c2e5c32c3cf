// Command loadgen is the load generator and report writer of bench/run.sh.
//
// Subcommands:
//
//	loadgen call     closed-loop tools/call load: C workers for D seconds, one JSON line out
//	loadgen list     closed-loop tools/list (following nextCursor), one JSON line out
//	loadgen sessions opens N idle legacy sessions on the gateway and reads its VmRSS
//	loadgen ports    prints N free loopback TCP ports
//	loadgen wait     waits until a loopback TCP address accepts connections
//	loadgen report   turns the JSON lines (and the seal benchmark output) into the table
//
// Every answer is validated (HTTP 200 and the expected content); failures are
// counted as errors and never enter the latency figures. Only loopback
// addresses are accepted.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

const (
	modernVersion = "2026-07-28"
	legacyVersion = "2025-11-25"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: loadgen call|list|sessions|ports|wait|report [flags]")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "call":
		err = runLoad(os.Args[2:], "call")
	case "list":
		err = runLoad(os.Args[2:], "list")
	case "sessions":
		err = runSessions(os.Args[2:])
	case "ports":
		err = runPorts(os.Args[2:])
	case "wait":
		err = runWait(os.Args[2:])
	case "report":
		err = runReport(os.Args[2:])
	default:
		err = fmt.Errorf("unknown subcommand %q", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "loadgen:", err)
		os.Exit(1)
	}
}

// Result is one measurement, written as one JSON line.
type Result struct {
	Kind      string  `json:"kind"`             // call, list, sessions
	Era       string  `json:"era,omitempty"`    // modern or legacy (call)
	Target    string  `json:"target,omitempty"` // direct or gateway
	Upstreams int     `json:"upstreams,omitempty"`
	Procs     int     `json:"fixture_procs,omitempty"`
	Round     int     `json:"round,omitempty"`
	C         int     `json:"c,omitempty"`
	Seconds   float64 `json:"seconds,omitempty"`
	Requests  int     `json:"requests"`
	Errors    int     `json:"errors"`
	RPS       float64 `json:"rps"`
	P50       float64 `json:"p50_ms"`
	P90       float64 `json:"p90_ms"`
	P99       float64 `json:"p99_ms"`
	Max       float64 `json:"max_ms"`
	Items     int     `json:"items,omitempty"` // tools per full listing (list)
	Pages     int     `json:"pages,omitempty"` // pages per full listing (list)
	// sessions
	Sessions     int    `json:"sessions,omitempty"`
	RSSBaseKB    int64  `json:"rss_base_kb,omitempty"`
	RSSSessKB    int64  `json:"rss_sessions_kb,omitempty"`
	RSSStreamsKB int64  `json:"rss_streams_kb,omitempty"`
	FirstError   string `json:"first_error,omitempty"`
	// CPUPerReq is CPU time (user+system) per measured request, in µs, of
	// each process named with -cpu, and of the load generator itself.
	CPUPerReq map[string]float64 `json:"cpu_us_per_req,omitempty"`
	// OpensPerReq is the host's TCP active opens (connections dialed, by
	// any process: /proc/net/snmp) per measured request.
	OpensPerReq float64 `json:"tcp_opens_per_req"`
}

func emit(r Result, out string) error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	fmt.Println(string(b))
	if out == "" {
		return nil
	}
	f, err := os.OpenFile(out, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = f.Write(append(b, '\n'))
	return err
}

// loopback refuses any URL whose host is not a loopback address.
func loopback(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return err
	}
	h := u.Hostname()
	if h == "localhost" {
		return nil
	}
	ip := net.ParseIP(h)
	if ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("%s: only loopback addresses are allowed", raw)
	}
	return nil
}

func newClient(conns int) *http.Client {
	return &http.Client{
		Timeout: 15 * time.Second,
		Transport: &http.Transport{
			Proxy:               nil,
			DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
			MaxIdleConns:        conns + 8,
			MaxIdleConnsPerHost: conns + 8,
			IdleConnTimeout:     90 * time.Second,
			DisableCompression:  true,
		},
	}
}

// target is one MCP endpoint and how to talk to it.
type target struct {
	client *http.Client
	url    string
	key    string
}

func (t *target) post(ctx context.Context, body []byte, hdr map[string]string, buf *bytes.Buffer) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if t.key != "" {
		req.Header.Set("Authorization", "Bearer "+t.key)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := t.client.Do(req)
	if err != nil {
		return nil, err
	}
	buf.Reset()
	_, err = io.Copy(buf, resp.Body)
	resp.Body.Close()
	return resp, err
}

// message returns the JSON-RPC message of an answer: the body itself, or
// the last "data:" line of an SSE body that carries a result or an error.
func message(body []byte, contentType string) []byte {
	if !strings.HasPrefix(contentType, "text/event-stream") {
		return body
	}
	var last []byte
	for line := range bytes.Lines(body) {
		line = bytes.TrimRight(line, "\r\n")
		if d, ok := bytes.CutPrefix(line, []byte("data:")); ok {
			d = bytes.TrimSpace(d)
			if bytes.Contains(d, []byte(`"result"`)) || bytes.Contains(d, []byte(`"error"`)) {
				last = d
			}
		}
	}
	return last
}

// session opens a legacy session: initialize, then notifications/initialized.
func (t *target) session(ctx context.Context) (string, error) {
	var buf bytes.Buffer
	init := []byte(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"` + legacyVersion +
		`","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}`)
	resp, err := t.post(ctx, init, nil, &buf)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("initialize: HTTP %d: %.200s", resp.StatusCode, buf.Bytes())
	}
	sid := resp.Header.Get("Mcp-Session-Id")
	if sid == "" {
		return "", errors.New("initialize: no Mcp-Session-Id")
	}
	msg := message(buf.Bytes(), resp.Header.Get("Content-Type"))
	if !bytes.Contains(msg, []byte(`"protocolVersion"`)) {
		return "", fmt.Errorf("initialize: unexpected answer %.200s", buf.Bytes())
	}
	resp, err = t.post(ctx, []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`),
		map[string]string{"Mcp-Session-Id": sid, "MCP-Protocol-Version": legacyVersion}, &buf)
	if err != nil {
		return "", err
	}
	if resp.StatusCode/100 != 2 {
		return "", fmt.Errorf("notifications/initialized: HTTP %d", resp.StatusCode)
	}
	return sid, nil
}

func modernMeta() string {
	return `"_meta":{"io.modelcontextprotocol/protocolVersion":"` + modernVersion +
		`","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"bench","version":"1"}}`
}

// runLoad runs the closed loop of the call and list subcommands.
func runLoad(args []string, kind string) error {
	fs := flag.NewFlagSet(kind, flag.ContinueOnError)
	u := fs.String("url", "", "MCP endpoint (loopback only)")
	key := fs.String("key", "", "bearer token, if any")
	era := fs.String("era", "modern", "modern (2026-07-28, no session) or legacy (2025-11-25 session per worker); call only")
	tool := fs.String("tool", "test_simple_text", "tool name (call)")
	expect := fs.String("expect", "This is a simple text response for testing.", "text every call answer must contain (call)")
	minItems := fs.Int("min-tools", 1, "tools every full listing must hold at least (list)")
	c := fs.Int("c", 10, "concurrent workers")
	d := fs.Duration("d", 5*time.Second, "measured duration")
	warm := fs.Duration("warmup", 500*time.Millisecond, "unmeasured warm-up before the measured duration")
	targetName := fs.String("target", "", "label: direct or gateway")
	round := fs.Int("round", 0, "label: round number")
	upstreams := fs.Int("upstreams", 0, "label: configured upstreams (list)")
	procs := fs.Int("procs", 0, "label: fixture processes behind them (list)")
	out := fs.String("out", "", "also append the JSON line to this file")
	cpu := fs.String("cpu", "", "label=pid,… processes whose CPU time per request is reported")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := loopback(*u); err != nil {
		return err
	}
	procsCPU, err := parseCPU(*cpu)
	if err != nil {
		return err
	}
	if *c < 1 || *d <= 0 {
		return errors.New("-c must be ≥ 1 and -d > 0")
	}
	if kind == "list" && *era != "modern" {
		return errors.New("list is modern only")
	}
	t := &target{client: newClient(*c), url: *u, key: *key}
	ctx := context.Background()

	// Per-worker request function; legacy workers open their session first.
	type doer func(ctx context.Context, buf *bytes.Buffer, n int) (items, pages int, err error)
	makeDoer := func() (doer, error) {
		switch {
		case kind == "call" && *era == "modern":
			body := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":` + strconv.Quote(*tool) +
				`,"arguments":{},` + modernMeta() + `}}`)
			hdr := map[string]string{"MCP-Protocol-Version": modernVersion, "Mcp-Method": "tools/call", "Mcp-Name": *tool}
			return func(ctx context.Context, buf *bytes.Buffer, _ int) (int, int, error) {
				resp, err := t.post(ctx, body, hdr, buf)
				return 0, 0, checkCall(resp, err, buf, *expect)
			}, nil
		case kind == "call" && *era == "legacy":
			sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			sid, err := t.session(sctx)
			if err != nil {
				return nil, err
			}
			hdr := map[string]string{"MCP-Protocol-Version": legacyVersion, "Mcp-Session-Id": sid}
			pre := []byte(`{"jsonrpc":"2.0","id":`)
			post := []byte(`,"method":"tools/call","params":{"name":` + strconv.Quote(*tool) + `,"arguments":{}}}`)
			body := make([]byte, 0, len(pre)+len(post)+20)
			return func(ctx context.Context, buf *bytes.Buffer, n int) (int, int, error) {
				body = append(strconv.AppendInt(append(body[:0], pre...), int64(n+1), 10), post...)
				resp, err := t.post(ctx, body, hdr, buf)
				return 0, 0, checkCall(resp, err, buf, *expect)
			}, nil
		case kind == "list":
			hdr := map[string]string{"MCP-Protocol-Version": modernVersion, "Mcp-Method": "tools/list"}
			return func(ctx context.Context, buf *bytes.Buffer, _ int) (int, int, error) {
				return listAll(ctx, t, hdr, buf, *minItems)
			}, nil
		}
		return nil, fmt.Errorf("unknown era %q", *era)
	}

	type workerOut struct {
		lat   []time.Duration
		errs  int
		first error
		items int
		pages int
	}
	outs := make([]workerOut, *c)
	doers := make([]doer, *c)
	for i := range doers {
		var err error
		if doers[i], err = makeDoer(); err != nil {
			return fmt.Errorf("worker %d setup: %w", i, err)
		}
	}
	start := time.Now().Add(*warm)
	end := start.Add(*d)
	cpu0 := make(chan map[string]time.Duration, 1)
	opens0 := make(chan int64, 1)
	time.AfterFunc(time.Until(start), func() { opens0 <- activeOpens(); cpu0 <- cpuTimes(procsCPU) })
	var wg sync.WaitGroup
	for i := 0; i < *c; i++ {
		wg.Add(1)
		go func(w *workerOut, do doer) {
			defer wg.Done()
			var buf bytes.Buffer
			w.lat = make([]time.Duration, 0, 1<<14)
			for n := 0; ; n++ {
				t0 := time.Now()
				if !t0.Before(end) {
					return
				}
				rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
				items, pages, err := do(rctx, &buf, n)
				cancel()
				if t0.Before(start) {
					continue // warm-up
				}
				if err != nil {
					w.errs++
					if w.first == nil {
						w.first = err
					}
					continue
				}
				w.lat = append(w.lat, time.Since(t0))
				w.items, w.pages = items, pages
			}
		}(&outs[i], doers[i])
	}
	wg.Wait()
	cpu1 := cpuTimes(procsCPU)
	opens1 := activeOpens()

	r := Result{Kind: kind, Target: *targetName, Round: *round, C: *c, Seconds: d.Seconds(), Upstreams: *upstreams, Procs: *procs}
	if kind == "call" {
		r.Era = *era
	}
	var all []time.Duration
	for _, w := range outs {
		all = append(all, w.lat...)
		r.Errors += w.errs
		if w.first != nil && r.FirstError == "" {
			r.FirstError = clip(w.first.Error())
		}
		if w.items > 0 {
			r.Items, r.Pages = w.items, w.pages
		}
	}
	slices.Sort(all)
	if o0 := <-opens0; o0 >= 0 && opens1 >= 0 && len(all)+r.Errors > 0 {
		r.OpensPerReq = round3(float64(opens1-o0) / float64(len(all)+r.Errors))
	}
	if before := <-cpu0; len(all)+r.Errors > 0 {
		r.CPUPerReq = map[string]float64{}
		for k, v := range cpu1 {
			if b, ok := before[k]; ok {
				r.CPUPerReq[k] = round2(float64(v-b) / float64(time.Microsecond) / float64(len(all)+r.Errors))
			}
		}
	}
	r.Requests = len(all)
	r.RPS = round2(float64(len(all)) / d.Seconds())
	r.P50, r.P90, r.P99 = pct(all, 50), pct(all, 90), pct(all, 99)
	if len(all) > 0 {
		r.Max = ms(all[len(all)-1])
	}
	if err := emit(r, *out); err != nil {
		return err
	}
	if r.Errors > 0 {
		fmt.Fprintf(os.Stderr, "loadgen: %d errors; first: %s\n", r.Errors, r.FirstError)
	}
	if r.Requests == 0 {
		return errors.New("no request succeeded")
	}
	return nil
}

// checkCall validates one tools/call answer.
func checkCall(resp *http.Response, err error, buf *bytes.Buffer, expect string) error {
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("HTTP %d: %.200s", resp.StatusCode, buf.Bytes())
	}
	msg := message(buf.Bytes(), resp.Header.Get("Content-Type"))
	if !bytes.Contains(msg, []byte(expect)) || bytes.Contains(msg, []byte(`"isError":true`)) {
		return fmt.Errorf("unexpected answer: %.200s", buf.Bytes())
	}
	return nil
}

// listAll fetches one full tools/list, following nextCursor.
func listAll(ctx context.Context, t *target, hdr map[string]string, buf *bytes.Buffer, minItems int) (items, pages int, err error) {
	cursor := ""
	for pages < 100 {
		params := `{` + modernMeta() + `}`
		if cursor != "" {
			params = `{"cursor":` + strconv.Quote(cursor) + `,` + modernMeta() + `}`
		}
		body := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":` + params + `}`)
		resp, err := t.post(ctx, body, hdr, buf)
		if err != nil {
			return 0, 0, err
		}
		if resp.StatusCode != http.StatusOK {
			return 0, 0, fmt.Errorf("HTTP %d: %.200s", resp.StatusCode, buf.Bytes())
		}
		var m struct {
			Result *struct {
				Tools []struct {
					Name string `json:"name"`
				} `json:"tools"`
				NextCursor string `json:"nextCursor"`
			} `json:"result"`
		}
		if err := json.Unmarshal(message(buf.Bytes(), resp.Header.Get("Content-Type")), &m); err != nil || m.Result == nil {
			return 0, 0, fmt.Errorf("unexpected answer: %.200s", buf.Bytes())
		}
		pages++
		items += len(m.Result.Tools)
		if m.Result.NextCursor == "" {
			if items < minItems {
				return 0, 0, fmt.Errorf("listed %d tools, want ≥ %d", items, minItems)
			}
			return items, pages, nil
		}
		cursor = m.Result.NextCursor
	}
	return 0, 0, errors.New("more than 100 pages")
}

func ms(d time.Duration) float64 { return round3(float64(d) / float64(time.Millisecond)) }

// pct is the nearest-rank percentile of sorted latencies, in milliseconds.
func pct(sorted []time.Duration, p int) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := (len(sorted)*p + 99) / 100 // ceil(n·p/100)
	if i < 1 {
		i = 1
	}
	return ms(sorted[i-1])
}

func round2(f float64) float64 { return float64(int64(f*100+0.5)) / 100 }
func round3(f float64) float64 { return float64(int64(f*1000+0.5)) / 1000 }

func clip(s string) string {
	if len(s) > 300 {
		return s[:300] + "…"
	}
	return s
}

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
	ids := make([]string, *n)
	var next atomic.Int64
	var firstErr error
	var once sync.Once
	var wg sync.WaitGroup
	t0 := time.Now()
	for w := 0; w < *c; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= *n {
					return
				}
				id, err := t.session(ctx)
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
		return fmt.Errorf("opening sessions: %w", firstErr)
	}
	opened := time.Since(t0)
	r.Seconds = round3(opened.Seconds())
	r.RPS = round2(float64(*n) / opened.Seconds())
	time.Sleep(*settle)
	if r.RSSSessKB, err = vmRSS(*pid); err != nil {
		return err
	}
	if *streams {
		// One connection per stream, held open until the reading is taken.
		sc := &http.Client{Transport: &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 1, DisableCompression: true}}
		sctx, scancel := context.WithCancel(ctx)
		defer scancel()
		var bodies []io.Closer
		defer func() {
			for _, b := range bodies {
				b.Close()
			}
		}()
		for _, id := range ids {
			req, _ := http.NewRequestWithContext(sctx, http.MethodGet, *u, nil)
			req.Header.Set("Accept", "text/event-stream")
			req.Header.Set("Authorization", "Bearer "+*key)
			req.Header.Set("Mcp-Session-Id", id)
			req.Header.Set("MCP-Protocol-Version", legacyVersion)
			resp, err := sc.Do(req)
			if err != nil {
				return fmt.Errorf("GET stream: %w", err)
			}
			bodies = append(bodies, resp.Body)
			if resp.StatusCode != http.StatusOK {
				return fmt.Errorf("GET stream: HTTP %d", resp.StatusCode)
			}
			line, err := bufio.NewReader(resp.Body).ReadString('\n')
			if err != nil || !strings.HasPrefix(line, ":") {
				return fmt.Errorf("GET stream: first line %q, %v", line, err)
			}
		}
		time.Sleep(*settle)
		if r.RSSStreamsKB, err = vmRSS(*pid); err != nil {
			return err
		}
	}
	return emit(r, *out)
}

func vmRSS(pid int) (int64, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, err
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			f := strings.Fields(v)
			if len(f) >= 1 {
				return strconv.ParseInt(f[0], 10, 64)
			}
		}
	}
	return 0, errors.New("no VmRSS in /proc/" + strconv.Itoa(pid) + "/status")
}

// parseCPU reads -cpu: label=pid pairs; the load generator itself is
// always added as "loadgen".
func parseCPU(spec string) (map[string]int, error) {
	m := map[string]int{"loadgen": os.Getpid()}
	for _, kv := range strings.Split(spec, ",") {
		if strings.TrimSpace(kv) == "" {
			continue
		}
		k, v, ok := strings.Cut(kv, "=")
		pid, err := strconv.Atoi(v)
		if !ok || err != nil || pid <= 0 {
			return nil, fmt.Errorf("-cpu: %q is not label=pid", kv)
		}
		m[k] = pid
	}
	return m, nil
}

// cpuTimes reads utime+stime of each process from /proc/<pid>/stat.
func cpuTimes(procs map[string]int) map[string]time.Duration {
	const tick = 10 * time.Millisecond // USER_HZ is 100 on Linux
	out := map[string]time.Duration{}
	for k, pid := range procs {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			continue
		}
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:]) // f[0] is field 3 (state); utime is field 14, stime 15
		if len(f) < 13 {
			continue
		}
		ut, err1 := strconv.ParseInt(f[11], 10, 64)
		st, err2 := strconv.ParseInt(f[12], 10, 64)
		if err1 == nil && err2 == nil {
			out[k] = time.Duration(ut+st) * tick
		}
	}
	return out
}

// activeOpens is the host's TCP ActiveOpens counter, or -1.
func activeOpens() int64 {
	b, err := os.ReadFile("/proc/net/snmp")
	if err != nil {
		return -1
	}
	var names []string
	for line := range strings.Lines(string(b)) {
		f := strings.Fields(line)
		if len(f) == 0 || f[0] != "Tcp:" {
			continue
		}
		if names == nil {
			names = f
			continue
		}
		for i, n := range names {
			if n == "ActiveOpens" && i < len(f) {
				v, err := strconv.ParseInt(f[i], 10, 64)
				if err == nil {
					return v
				}
			}
		}
	}
	return -1
}

// runPorts prints n distinct free loopback ports.
func runPorts(args []string) error {
	fs := flag.NewFlagSet("ports", flag.ContinueOnError)
	n := fs.Int("n", 1, "how many")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var lns []net.Listener
	var ports []string
	for i := 0; i < *n; i++ {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return err
		}
		lns = append(lns, ln)
		ports = append(ports, strconv.Itoa(ln.Addr().(*net.TCPAddr).Port))
	}
	for _, ln := range lns {
		ln.Close()
	}
	fmt.Println(strings.Join(ports, " "))
	return nil
}

// runWait waits until addr accepts TCP connections.
func runWait(args []string) error {
	fs := flag.NewFlagSet("wait", flag.ContinueOnError)
	addr := fs.String("addr", "", "host:port (loopback)")
	timeout := fs.Duration("timeout", 15*time.Second, "give up after")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := loopback("http://" + *addr); err != nil {
		return err
	}
	deadline := time.Now().Add(*timeout)
	for {
		conn, err := net.DialTimeout("tcp", *addr, time.Second)
		if err == nil {
			conn.Close()
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not accepting connections after %s: %v", *addr, *timeout, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
