package main

import (
	"os"
	"os/exec"
	"testing"
	"time"
)

// TestChildrenCPUCountsEndedChildren: a child that burns CPU and ends inside
// the window counts for a children entry (a proxy that spawns a child per
// request), and not for the process's own entry.
func TestChildrenCPUCountsEndedChildren(t *testing.T) {
	procs := map[string]cpuProc{"kids": {pid: os.Getpid(), children: true}, "self": {pid: os.Getpid()}}
	before := cpuTimes(procs)
	start := time.Now()
	cmd := exec.Command("sh", "-c", "i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	burnt := cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	if burnt < 100*time.Millisecond { // a lower figure would be within a few 10 ms ticks of nothing
		t.Fatalf("the child burnt only %v in %v: make its loop longer", burnt, time.Since(start))
	}
	after := cpuTimes(procs)
	kids := after["kids"] - before["kids"]
	if kids < burnt-20*time.Millisecond || kids > burnt+20*time.Millisecond {
		t.Fatalf("children CPU moved by %v; the ended child burnt %v", kids, burnt)
	}
	if self := after["self"] - before["self"]; self > burnt/2 {
		t.Fatalf("the process's own CPU moved by %v while its child burnt %v", self, burnt)
	}
}
