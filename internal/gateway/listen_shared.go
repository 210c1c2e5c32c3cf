package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"sync"

	"github.com/mcpgw/mcpgw/internal/mcp"
	"github.com/mcpgw/mcpgw/internal/upstream"
)

// sharedListens holds the modern upstream listens that listens share: one
// upstream subscriptions/listen per upstream client, credentials the
// upstream sees and filter sent, whatever number of listens hear it. An
// entry lives while a listen holds it, and is forgotten when its last
// listen leaves or the upstream ends it.
type sharedListens struct {
	mu sync.Mutex
	m  map[sharedKey]*sharedListen
}

// sharedKey names one shared upstream listen. Listens whose upstream
// credentials differ (headers forwarded or derived for the caller, its
// token) never share one; neither do listens asking the upstream for
// different things, nor listens on different clients (a changed server
// connection is another client).
type sharedKey struct {
	client *upstream.Client
	cred   string // upstream.CredentialKey of the options it was opened with
	filter string // the SubscriptionFilter sent upstream
}

// sharedListen is one upstream subscriptions/listen and the listens hearing
// it.
type sharedListen struct {
	key    sharedKey
	server string
	cancel context.CancelFunc
	acked  chan struct{} // closed when the upstream acknowledged the listen
	done   chan struct{} // closed when the upstream listen ended
	err    error         // why it ended, set before done closes

	mu    sync.Mutex
	subs  []*listenSub // copied on write: an event reads a snapshot
	ended bool         // the upstream listen ended; no listen may join
}

// listenSub is one listen hearing a shared upstream listen.
type listenSub struct {
	event func(server, method string, params json.RawMessage) // never blocks
	ended func()                                              // the upstream ended the listen
}

// join adds sub to the shared upstream listen t needs with filter,
// opening it when there is none (or the one there ended). The caller
// waits on the returned listen's acked and done, and calls leave.
func (g *Gateway) joinShared(t listenTarget, filter []byte, sub *listenSub) *sharedListen {
	key := sharedKey{client: t.server.Client, cred: upstream.CredentialKey(t.opts), filter: string(filter)}
	sh := &g.ls.shared
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if sl := sh.m[key]; sl != nil && sl.add(sub) {
		return sl
	}
	ctx, cancel := context.WithCancel(context.Background())
	sl := &sharedListen{key: key, server: t.server.Name, cancel: cancel,
		acked: make(chan struct{}), done: make(chan struct{}), subs: []*listenSub{sub}}
	if sh.m == nil {
		sh.m = map[sharedKey]*sharedListen{}
	}
	sh.m[key] = sl
	go g.runShared(ctx, sl, t, filter)
	return sl
}

// add adds sub unless the upstream listen has ended.
func (sl *sharedListen) add(sub *listenSub) bool {
	sl.mu.Lock()
	defer sl.mu.Unlock()
	if sl.ended {
		return false
	}
	sl.subs = append(sl.subs[:len(sl.subs):len(sl.subs)], sub)
	return true
}

// leaveShared removes sub; the last listen to leave closes the upstream
// listen and waits for it to end, so nothing of it outlives its listens.
func (g *Gateway) leaveShared(sl *sharedListen, sub *listenSub) {
	sh := &g.ls.shared
	sh.mu.Lock()
	sl.mu.Lock()
	subs := make([]*listenSub, 0, len(sl.subs))
	for _, s := range sl.subs {
		if s != sub {
			subs = append(subs, s)
		}
	}
	sl.subs = subs
	last := len(subs) == 0
	if last {
		sl.ended = true
		if sh.m[sl.key] == sl {
			delete(sh.m, sl.key)
		}
	}
	sl.mu.Unlock()
	sh.mu.Unlock()
	if last {
		sl.cancel()
		<-sl.done
	}
}

// snapshot returns the listens hearing sl now.
func (sl *sharedListen) snapshot() []*listenSub {
	sl.mu.Lock()
	defer sl.mu.Unlock()
	return sl.subs
}

// runShared runs the upstream listen until ctx ends or the upstream ends
// it, handing each event to every listen hearing it. A list change makes
// the cached lists stale once, for all of them.
func (g *Gateway) runShared(ctx context.Context, sl *sharedListen, t listenTarget, filter []byte) {
	var ackOnce sync.Once
	defer func() {
		g.ls.shared.mu.Lock()
		sl.mu.Lock()
		sl.ended = true
		if g.ls.shared.m[sl.key] == sl {
			delete(g.ls.shared.m, sl.key)
		}
		subs := sl.subs
		sl.mu.Unlock()
		g.ls.shared.mu.Unlock()
		close(sl.done)
		sl.cancel()
		for _, s := range subs { // none when the last listen left
			s.ended()
		}
	}()
	defer g.recovered("upstream listen", sl.cancel)
	// The upstream listen ends when the credential it was opened with is
	// lost (a renewal refused or narrowed), and so ends every listen
	// hearing it (they share that credential).
	lctx, release, err := t.server.Client.FollowContext(ctx, t.opts)
	if err != nil {
		lctx, release = ctx, func() {}
	}
	defer release()
	sl.err = t.server.Client.Listen(lctx, filter, t.opts, func(method string, params json.RawMessage) {
		if method == mcp.NotifSubscriptionsAcknowledged {
			ackOnce.Do(func() { close(sl.acked) })
			return
		}
		if _, ok := listKindOf(method); ok {
			g.ls.currentOr(g).cfg.Catalog.ListChanged(sl.server, method)
		}
		for _, s := range sl.snapshot() {
			s.event(sl.server, method, params)
		}
	})
	if sl.err != nil && !errors.Is(sl.err, context.Canceled) {
		g.cfg.Logger.Warn("upstream listen ended", "server", sl.server, "fault", string(upstream.Classify(sl.err).Fault))
	}
}
