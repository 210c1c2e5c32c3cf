//go:build unix

package bench

import (
	"syscall"
	"time"
)

// processCPU is this process's CPU time so far (user + system), or -1 when it cannot be read.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return -1
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
