package upstream

import (
	"context"
	"sync"

	"github.com/mcpgw/mcpgw/internal/upstream/auth"
)

// credentialWatch renews a client's minted credential while anything
// follows the upstream, and ends the follows the credential no longer
// covers. One runs per Client; its watcher goroutine runs only while there
// are followers.
type credentialWatch struct {
	env  *env
	mint *auth.ClientCredentials // nil: a static credential, nothing to watch

	mu        sync.Mutex
	followers map[*credentialFollower]struct{}
	stop      context.CancelFunc // ends the watcher; nil when none runs
	done      chan struct{}      // closed when the watcher returned
	closed    bool
}

// credentialFollower is one follow depending on the minted credential.
type credentialFollower struct {
	since uint64 // the mint attempts completed when it started
	full  bool   // the token it started with had every requested scope
	lose  func()
}

// hold registers a follow that ends (lose) when the credential is lost
// after it started: a later renewal refused by the token endpoint, one that
// leaves no unexpired token, or, when the follow started with every
// requested scope, one that grants fewer. The first follower starts the
// watcher; unhold lets go, and the last to leave stops it.
func (w *credentialWatch) hold(lose func()) (unhold func()) {
	if w.mint == nil {
		return func() {}
	}
	gen, narrowed := w.mint.Grant()
	f := &credentialFollower{since: gen, full: !narrowed, lose: lose}
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return func() {}
	}
	if w.followers == nil {
		w.followers = map[*credentialFollower]struct{}{}
	}
	w.followers[f] = struct{}{}
	if w.stop == nil {
		ctx, stop := context.WithCancel(context.Background())
		done := make(chan struct{})
		w.stop, w.done = stop, done
		go func() {
			defer close(done)
			defer w.env.recoverPanic("credential watch", nil)
			w.mint.Watch(ctx, w.report)
		}()
	}
	w.mu.Unlock()
	var once sync.Once
	return func() { once.Do(func() { w.unhold(f) }) }
}

// unhold removes f; the last follower stops the watcher and waits for it.
func (w *credentialWatch) unhold(f *credentialFollower) {
	w.mu.Lock()
	delete(w.followers, f)
	var stop context.CancelFunc
	var done chan struct{}
	if len(w.followers) == 0 && w.stop != nil {
		stop, done = w.stop, w.done
		w.stop, w.done = nil, nil
	}
	w.mu.Unlock()
	if stop != nil {
		stop()
		<-done
	}
}

// report handles a problem the watcher found: every follow it concerns
// ends.
func (w *credentialWatch) report(p auth.Problem) {
	fatal := p.Fatal()
	w.env.log.Warn("upstream credential renewal problem", "problem", p.Kind.String(), "ends_follows", fatal)
	if !fatal {
		return
	}
	var lost []func()
	w.mu.Lock()
	for f := range w.followers {
		if p.Gen > f.since && (p.Kind != auth.ProblemScopeNarrowed || f.full) {
			lost = append(lost, f.lose)
		}
	}
	w.mu.Unlock()
	for _, lose := range lost {
		lose()
	}
}

// close stops the watcher for good and waits for it.
func (w *credentialWatch) close() {
	w.mu.Lock()
	w.closed = true
	stop, done := w.stop, w.done
	w.stop, w.done = nil, nil
	w.mu.Unlock()
	if stop != nil {
		stop()
		<-done
	}
}
