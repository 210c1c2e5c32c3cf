package main

// Readings from /proc: memory and CPU time of a process, and the host's TCP connection count.

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// vmRSS reads a process's resident set size in KiB from /proc/<pid>/status.
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

// cpuProc names what one -cpu label measures: a process, or (children) the
// live descendants of a process, e.g. the stdio children a proxy started.
type cpuProc struct {
	pid      int
	children bool
}

// parseCPU reads -cpu: label=pid or label=children:pid pairs; the load
// generator itself is always added as "loadgen".
func parseCPU(spec string) (map[string]cpuProc, error) {
	m := map[string]cpuProc{"loadgen": {pid: os.Getpid()}}
	for _, kv := range strings.Split(spec, ",") {
		if strings.TrimSpace(kv) == "" {
			continue
		}
		k, v, ok := strings.Cut(kv, "=")
		v, children := strings.CutPrefix(v, "children:")
		pid, err := strconv.Atoi(v)
		if !ok || err != nil || pid <= 0 {
			return nil, fmt.Errorf("-cpu: %q is not label=pid or label=children:pid", kv)
		}
		m[k] = cpuProc{pid: pid, children: children}
	}
	return m, nil
}

// cpuTimes reads utime+stime of each process from /proc/<pid>/stat, or for
// a children entry the CPU of the process's descendants: the live ones'
// (each with the children it reaped) and those the process itself reaped
// (cutime+cstime), so a child that lives for one request, as a proxy that
// spawns one per request runs it, counts once it has ended. A label whose
// process cannot be read is left out.
func cpuTimes(procs map[string]cpuProc) map[string]time.Duration {
	out := map[string]time.Duration{}
	for k, p := range procs {
		own, reaped, ok := procCPU(p.pid)
		if !ok {
			continue
		}
		if !p.children {
			out[k] = own
			continue
		}
		sum := reaped
		for _, c := range descendants(p.pid) {
			if own, reaped, ok := procCPU(c); ok {
				sum += own + reaped
			}
		}
		out[k] = sum
	}
	return out
}

// procCPU is one process's utime+stime (own) and the cutime+cstime of the
// children it has waited for (reaped).
func procCPU(pid int) (own, reaped time.Duration, ok bool) {
	const tick = 10 * time.Millisecond // USER_HZ is 100 on Linux
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, 0, false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, 0, false
	}
	f := strings.Fields(s[i+1:]) // f[0] is field 3 (state); utime is field 14, stime 15, cutime 16, cstime 17
	if len(f) < 15 {
		return 0, 0, false
	}
	var v [4]int64
	for j := range v {
		if v[j], err = strconv.ParseInt(f[11+j], 10, 64); err != nil {
			return 0, 0, false
		}
	}
	return time.Duration(v[0]+v[1]) * tick, time.Duration(v[2]+v[3]) * tick, true
}

// descendants lists a process's live descendants, from
// /proc/<pid>/task/*/children (each thread's children), depth first.
func descendants(pid int) []int {
	var out []int
	stack := []int{pid}
	for len(stack) > 0 && len(out) < 4096 {
		p := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		tasks, _ := filepath.Glob("/proc/" + strconv.Itoa(p) + "/task/*/children")
		for _, t := range tasks {
			b, err := os.ReadFile(t)
			if err != nil {
				continue
			}
			for _, f := range strings.Fields(string(b)) {
				if c, err := strconv.Atoi(f); err == nil && !slices.Contains(out, c) {
					out = append(out, c)
					stack = append(stack, c)
				}
			}
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
