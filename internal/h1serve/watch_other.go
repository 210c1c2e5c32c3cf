//go:build !linux

package h1serve

import "errors"

// watcher has no implementation here: connections fall back to a
// background read per request (conn.startBackgroundRead).
type watcher struct{}

func newWatcher(*Server) (*watcher, error) {
	return nil, errors.New("no shared disconnect watcher on this system")
}

func (*watcher) add(*conn, uint64) bool { return false }
func (*watcher) unregister(*conn)       {}
func (*watcher) stop()                  {}
