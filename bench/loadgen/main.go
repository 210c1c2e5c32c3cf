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
//	loadgen keyreport turns bench/storekey.sh's JSON lines into its table
//	loadgen peerreport turns bench/peers.sh's JSON lines into its side-by-side table
//
// Every answer is validated (HTTP 200 and the expected content); failures are
// counted as errors and never enter the latency figures. Only loopback
// addresses are accepted.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"
)

const (
	modernVersion = "2026-07-28"
	legacyVersion = "2025-11-25"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: loadgen call|list|sessions|ports|wait|report|keyreport|peerreport [flags]")
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
	case "keyreport":
		err = runKeyReport(os.Args[2:])
	case "peerreport":
		err = runPeerReport(os.Args[2:])
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
	// Load1 is the host's one-minute load average as the run ended.
	Load1 float64 `json:"load1,omitempty"`
}

// emit prints r as one JSON line and, when out is set, appends it to that file too.
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
