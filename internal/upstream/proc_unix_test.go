//go:build unix

package upstream

import "syscall"

func processAlive(pid int) error { return syscall.Kill(pid, 0) }
