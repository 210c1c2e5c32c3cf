package app

import (
	"errors"
	"fmt"
	"path/filepath"

	"github.com/fsnotify/fsnotify"

	"github.com/mcpgw/mcpgw/internal/panics"
)

// configMapData is the symlink Kubernetes swaps to update a mounted
// ConfigMap: the file is a symlink through it into a timestamped directory.
const configMapData = "..data"

// Watch starts watching the config file's directory (not the file: editors
// replace it by renaming a new one over it, and Kubernetes swaps the
// ..data symlink), scheduling a reload on every event that names the file
// or ..data. A change to the same bytes as the last attempt applies
// nothing. The watch ends at Close. When it cannot start (such as at the
// inotify limit) the error says why; Reload and Trigger keep working.
func (r *Reloader) Watch() error {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return fmt.Errorf("watching the config file: %w", err)
	}
	dir, base := filepath.Split(r.path)
	if dir == "" {
		dir = "."
	}
	if err := w.Add(dir); err != nil {
		_ = w.Close()
		return fmt.Errorf("watching the config file's directory: %w", err)
	}
	r.pmu.Lock()
	if r.ctx.Err() != nil || r.watch != nil {
		r.pmu.Unlock()
		_ = w.Close()
		return errors.New("watching the config file: the reloader is closed or already watching")
	}
	r.watch = w
	r.wg.Add(1)
	r.pmu.Unlock()
	panics.Go(r.a.log, "watching the config file", func() {
		defer r.wg.Done()
		r.watchLoop(w, base)
	}, nil)
	return nil
}

// watchLoop turns w's events into scheduled reloads until w is closed. A
// watcher error (such as a queue overflow) may have lost events, so it
// schedules a reload too.
func (r *Reloader) watchLoop(w *fsnotify.Watcher, base string) {
	for {
		select {
		case ev, ok := <-w.Events:
			if !ok {
				return
			}
			if name := filepath.Base(ev.Name); name == base || name == configMapData {
				if ev.Op != fsnotify.Chmod {
					r.schedule(false)
				}
			}
		case err, ok := <-w.Errors:
			if !ok {
				return
			}
			r.a.log.Warn("watching the config file", "file", r.path, "error", err.Error())
			r.schedule(false)
		}
	}
}
