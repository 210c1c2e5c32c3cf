//go:build !linux

package h1serve

import "testing"

// failWatcher: there is no watcher to fail here.
func failWatcher(t *testing.T, _ *Server, _ string) {
	t.Skip("no disconnect watcher on this system")
}
