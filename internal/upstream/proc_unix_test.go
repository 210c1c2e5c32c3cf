//go:build unix

package upstream

import "syscall"

func processAlive(pid int) error { return syscall.Kill(pid, 0) }

func killProcess(pid int) { _ = syscall.Kill(pid, syscall.SIGKILL) }
