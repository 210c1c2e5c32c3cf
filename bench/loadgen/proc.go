package main

// Readings from /proc: memory and CPU time of a process, and the host's TCP connection count.

import (
	"errors"
	"fmt"
	"os"
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
