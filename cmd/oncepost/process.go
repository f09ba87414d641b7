package main

import (
	"errors"
	"syscall"
)

// processAlive reports whether a process with pid exists on this host
// (signal 0 checks existence and permission without delivering anything;
// EPERM means it exists but belongs to another user).
func processAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
