//go:build unix

package sandbox

import (
	"os"
	"syscall"
)

// lockFile takes an exclusive advisory lock on f without waiting; it is
// released when f is closed, or when the process dies.
func lockFile(f *os.File) error {
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		return &os.PathError{Op: "flock", Path: f.Name(), Err: err}
	}
	return nil
}
