package app

import (
	"errors"
	"fmt"
	"os"
)

// ensureDataDir creates dir (0700) when missing and checks it is a directory
// the gateway can write in.
func ensureDataDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("data dir %s: cannot be created: %w", dir, unwrapPath(err))
	}
	if err := probeDataDir(dir); err != nil {
		return fmt.Errorf("data dir %s: %w", dir, err)
	}
	return nil
}

// probeDataDir reports whether a file can be created in dir, as "not
// writable: <why>" (without the path, which the caller names when it must).
func probeDataDir(dir string) error {
	f, err := os.CreateTemp(dir, ".probe-*")
	if err != nil {
		return fmt.Errorf("not writable: %w", unwrapPath(err))
	}
	name := f.Name()
	cerr := f.Close()
	rerr := os.Remove(name)
	if err := errors.Join(cerr, rerr); err != nil {
		return fmt.Errorf("not writable: %w", unwrapPath(err))
	}
	return nil
}

// unwrapPath drops a *PathError's path (the probe file's random name) and
// keeps its cause.
func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
