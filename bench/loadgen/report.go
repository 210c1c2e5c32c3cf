package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/mcpgw/mcpgw/internal/benchfig"
)

// Markers delimit the generated part of the "## Gateway (issue 4)" section of
// docs/benchmarks.md; --write-docs replaces what lies between them.
const (
	docsHeading = "## Gateway (issue 4)"
	beginMarker = "<!-- bench/run.sh: generated table, begin -->"
	endMarker   = "<!-- bench/run.sh: generated table, end -->"
)

// runReport prints the table built from the JSON lines of one run, and with
// -docs writes it into that file.
func runReport(args []string) error {
	fs := flag.NewFlagSet("report", flag.ContinueOnError)
	in := fs.String("in", "", "JSON lines written by call/list/sessions -out")
	sealOut := fs.String("seal", "", "output of go test -bench ./internal/seal")
	docs := fs.String("docs", "", "update this markdown file (docs/benchmarks.md)")
	date := fs.String("date", "", "run date")
	machine := fs.String("machine", "", "machine description")
	goVersion := fs.String("go", "", "go version")
	commit := fs.String("commit", "", "commit measured")
	settings := fs.String("settings", "", "run settings (C, D, rounds)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	rs, err := readResults(*in)
	if err != nil {
		return err
	}
	var seal []string
	if *sealOut != "" {
		if seal, err = sealRows(*sealOut); err != nil {
			return err
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Run %s on %s, %s, commit %s; %s.\n\n", *date, *machine, *goVersion, *commit, *settings)
	callTable(&b, rs)
	listTable(&b, rs)
	sessionTable(&b, rs)
	if len(seal) > 0 {
		b.WriteString("**(d) Sealing and opening a token** (`go test -run='^$' -bench=. ./internal/seal`, 200-byte payload):\n\n")
		b.WriteString("| benchmark | time/op | throughput | bytes/op | allocs/op |\n|---|---|---|---|---|\n")
		for _, r := range seal {
			b.WriteString(r + "\n")
		}
		b.WriteString("\n")
	}
	table := strings.TrimRight(b.String(), "\n") + "\n"
	fmt.Print(table)
	if *docs != "" {
		return writeDocs(*docs, table)
	}
	return nil
}

func readResults(path string) ([]Result, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var rs []Result
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if strings.TrimSpace(sc.Text()) == "" {
			continue
		}
		var r Result
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		rs = append(rs, r)
	}
	return rs, sc.Err()
}

// agg is the per-metric median over the rounds of one configuration.
type agg struct {
	n                        int
	rps, p50, p90, p99, maxv float64
	errors, requests         int
	items, pages             int
	cpu                      map[string]float64 // median µs per request
	opens                    float64            // median TCP active opens per request
}

func aggregate(rs []Result, keep func(Result) bool) (agg, bool) {
	var a agg
	var rps, p50, p90, p99, mx, opens []float64
	cpu := map[string][]float64{}
	for _, r := range rs {
		if !keep(r) {
			continue
		}
		a.n++
		rps, p50, p90, p99, mx = append(rps, r.RPS), append(p50, r.P50), append(p90, r.P90), append(p99, r.P99), append(mx, r.Max)
		a.errors += r.Errors
		a.requests += r.Requests
		a.items, a.pages = r.Items, r.Pages
		opens = append(opens, r.OpensPerReq)
		for k, v := range r.CPUPerReq {
			cpu[k] = append(cpu[k], v)
		}
	}
	a.opens = benchfig.Median(opens)
	a.cpu = map[string]float64{}
	for k, v := range cpu {
		a.cpu[k] = benchfig.Median(v)
	}
	a.rps, a.p50, a.p90, a.p99, a.maxv = benchfig.Median(rps), benchfig.Median(p50), benchfig.Median(p90), benchfig.Median(p99), benchfig.Median(mx)
	return a, a.n > 0
}

func f0(v float64) string { return strconv.FormatFloat(v, 'f', 0, 64) }
func f2(v float64) string { return strconv.FormatFloat(v, 'f', 2, 64) }

func callTable(b *strings.Builder, rs []Result) {
	type key struct {
		era string
		c   int
	}
	var keys []key
	for _, r := range rs {
		if r.Kind == "call" && !slices.Contains(keys, key{r.Era, r.C}) {
			keys = append(keys, key{r.Era, r.C})
		}
	}
	if len(keys) == 0 {
		return
	}
	slices.SortStableFunc(keys, func(x, y key) int {
		if x.era != y.era {
			return strings.Compare(y.era, x.era) // modern first
		}
		return y.c - x.c
	})
	b.WriteString("**(a) tools/call, direct vs through the gateway** (medians over rounds; latency in ms):\n\n")
	b.WriteString("| upstream | C | direct req/s | gateway req/s | ratio | direct p50 | gateway p50 | added p50 | direct p99 | gateway p99 | added p99 | errors |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	type verdict struct {
		c           int
		ratio, addP float64
	}
	var modern []verdict
	var cpuRows []string
	for _, k := range keys {
		d, ok1 := aggregate(rs, func(r Result) bool { return r.Kind == "call" && r.Era == k.era && r.C == k.c && r.Target == "direct" })
		g, ok2 := aggregate(rs, func(r Result) bool { return r.Kind == "call" && r.Era == k.era && r.C == k.c && r.Target == "gateway" })
		if !ok1 || !ok2 {
			continue
		}
		name := "2026-07-28 stateless"
		if k.era == "legacy" {
			name = "2025-11-25 sessionful"
		}
		ratio := g.rps / d.rps
		fmt.Fprintf(b, "| %s | %d | %s | %s | %s | %s | %s | %+.2f | %s | %s | %+.2f | %d / %d |\n",
			name, k.c, f0(d.rps), f0(g.rps), f2(ratio), f2(d.p50), f2(g.p50), g.p50-d.p50, f2(d.p99), f2(g.p99), g.p99-d.p99,
			d.errors+g.errors, d.requests+g.requests)
		if k.era == "modern" {
			modern = append(modern, verdict{k.c, ratio, g.p50 - d.p50})
		}
		if len(d.cpu) > 0 && len(g.cpu) > 0 {
			cpuRows = append(cpuRows, fmt.Sprintf("| %s | %d | %s | %s | %s | %s | %s | %s | %s | %s | %s |", name, k.c,
				f0(d.cpu["upstream"]), f0(d.cpu["loadgen"]), f0(d.cpu["upstream"]+d.cpu["loadgen"]+d.cpu["gateway"]),
				f0(g.cpu["upstream"]), f0(g.cpu["gateway"]), f0(g.cpu["loadgen"]), f0(g.cpu["upstream"]+g.cpu["gateway"]+g.cpu["loadgen"]),
				f2(d.opens), f2(g.opens)))
		}
	}
	b.WriteString("\n")
	if len(cpuRows) > 0 {
		b.WriteString("CPU time (user + system) per call in µs, from /proc/<pid>/stat, and TCP connections opened per call on the host (/proc/net/snmp ActiveOpens), over the measured window (medians over rounds):\n\n")
		b.WriteString("| upstream | C | direct: fixture | direct: loadgen | direct: total | via gateway: fixture | via gateway: gateway | via gateway: loadgen | via gateway: total | TCP opens/call direct | TCP opens/call via gateway |\n")
		b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|\n")
		for _, r := range cpuRows {
			b.WriteString(r + "\n")
		}
		b.WriteString("\n")
	}
	for _, v := range modern {
		met := func(ok bool) string {
			if ok {
				return "met"
			}
			return "**missed**"
		}
		fmt.Fprintf(b, "Target (issue 4, stateless upstream), C=%d: gateway/direct requests/s %.2f (≥ 0.80: %s); added p50 %.2f ms (≤ 1 ms: %s).\n",
			v.c, v.ratio, met(v.ratio >= 0.8), v.addP, met(v.addP <= 1))
	}
	b.WriteString("\n")
}

func listTable(b *strings.Builder, rs []Result) {
	var ns []int
	for _, r := range rs {
		if r.Kind == "list" && r.Target == "gateway" && !slices.Contains(ns, r.Upstreams) {
			ns = append(ns, r.Upstreams)
		}
	}
	slices.Sort(ns)
	if len(ns) == 0 {
		return
	}
	b.WriteString("**(b) tools/list, full listing through the gateway** (sequential, C=1; latency in ms):\n\n")
	b.WriteString("| configured upstreams | fixture processes | tools | pages | p50 | p90 | p99 | listings/s | CPU ms/listing: gateway | CPU ms/listing: fixtures | TCP opens/listing | errors |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	row := func(label string, a agg, procs int) {
		gw := "—"
		if v, ok := a.cpu["gateway"]; ok {
			gw = f2(v / 1000)
		}
		fx := a.cpu["upstream1"] + a.cpu["upstream2"] + a.cpu["upstream3"]
		fmt.Fprintf(b, "| %s | %d | %d | %d | %s | %s | %s | %s | %s | %s | %s | %d / %d |\n",
			label, procs, a.items, a.pages, f2(a.p50), f2(a.p90), f2(a.p99), f0(a.rps), gw, f2(fx/1000), f2(a.opens), a.errors, a.requests)
	}
	if d, ok := aggregate(rs, func(r Result) bool { return r.Kind == "list" && r.Target == "direct" }); ok {
		procs := 1
		row("direct to one fixture (no gateway)", d, procs)
	}
	for _, n := range ns {
		var procs int
		a, _ := aggregate(rs, func(r Result) bool {
			if r.Kind == "list" && r.Target == "gateway" && r.Upstreams == n {
				procs = r.Procs
				return true
			}
			return false
		})
		row(strconv.Itoa(n), a, procs)
	}
	b.WriteString("\n")
}

func sessionTable(b *strings.Builder, rs []Result) {
	for _, r := range rs {
		if r.Kind != "sessions" {
			continue
		}
		mb := func(kb int64) string { return strconv.FormatFloat(float64(kb)/1024, 'f', 1, 64) }
		per := func(kb int64) string {
			return strconv.FormatFloat(float64(kb-r.RSSBaseKB)*1024/float64(r.Sessions)/1024, 'f', 2, 64)
		}
		fmt.Fprintf(b, "**(c) Gateway RSS with %d idle legacy sessions** (VmRSS of the gateway process):\n\n", r.Sessions)
		b.WriteString("| state | VmRSS | added per session |\n|---|---|---|\n")
		fmt.Fprintf(b, "| started, upstream connected, no session | %s MB | — |\n", mb(r.RSSBaseKB))
		fmt.Fprintf(b, "| + %d sessions (initialize + notifications/initialized; opened at %s/s) | %s MB | %s KB |\n",
			r.Sessions, f0(r.RPS), mb(r.RSSSessKB), per(r.RSSSessKB))
		if r.RSSStreamsKB > 0 {
			fmt.Fprintf(b, "| + each session's GET stream held open (%d connections) | %s MB | %s KB |\n",
				r.Sessions, mb(r.RSSStreamsKB), per(r.RSSStreamsKB))
		}
		b.WriteString("\n")
	}
}

var benchLine = regexp.MustCompile(`^(Benchmark\S+?)(?:-\d+)?\s+\d+\s+([\d.]+) ns/op(?:\s+([\d.]+) MB/s)?(?:\s+(\d+) B/op)?(?:\s+(\d+) allocs/op)?`)

func sealRows(path string) ([]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var rows []string
	for line := range strings.Lines(string(b)) {
		m := benchLine.FindStringSubmatch(strings.TrimSpace(line))
		if m == nil {
			continue
		}
		tp := "—"
		if m[3] != "" {
			tp = m[3] + " MB/s"
		}
		rows = append(rows, fmt.Sprintf("| %s | %s ns | %s | %s B | %s |", m[1], m[2], tp, m[4], m[5]))
	}
	if len(rows) == 0 {
		return nil, errors.New(path + ": no benchmark lines")
	}
	return rows, nil
}

// writeDocs replaces the generated table in the docs section, creating the
// section (heading and markers) at the end of the file when it is missing.
func writeDocs(path, table string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	doc := string(b)
	block := beginMarker + "\n\n" + table + "\n" + endMarker
	h := strings.Index(doc, "\n"+docsHeading+"\n")
	if h < 0 {
		doc = strings.TrimRight(doc, "\n") + "\n\n" + docsHeading + "\n\n" + block + "\n"
		return os.WriteFile(path, []byte(doc), 0o644)
	}
	i := strings.Index(doc[h:], beginMarker)
	j := strings.Index(doc[h:], endMarker)
	if i < 0 || j < i {
		return fmt.Errorf("%s: section %q has no %q … %q markers", path, docsHeading, beginMarker, endMarker)
	}
	i, j = h+i, h+j+len(endMarker)
	doc = doc[:i] + block + doc[j:]
	return os.WriteFile(path, []byte(doc), 0o644)
}
