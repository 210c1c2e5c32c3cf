package gateway

import (
	"context"
	"errors"
	"maps"
	"time"
)

// DefaultListenTokenCheck is how often a held listen compares the caller tokens its upstream
// listeners were opened with to the caller's current ones (Config.ListenTokenCheck).
const DefaultListenTokenCheck = 30 * time.Second

// ErrCallerTokenAbsent is what CallerTokens.Token wraps when the caller holds no token for the
// server (never stored, deleted, or dropped after a refusal), as opposed to failing to read one.
var ErrCallerTokenAbsent = errors.New("gateway: the caller holds no token for the server")

// tokenCheck is what comparing a listen's caller tokens to the current ones found: gone when
// one was deleted; otherwise the tokens that changed (nil when none did).
type tokenCheck struct {
	gone    bool
	changed map[string]string
}

// listenTokenCheck is the interval between two checks of a held listen's caller tokens.
func (g *Gateway) listenTokenCheck() time.Duration {
	if g.cfg.ListenTokenCheck > 0 {
		return g.cfg.ListenTokenCheck
	}
	return DefaultListenTokenCheck
}

// checkCallerTokens compares the tokens targets' listeners were opened with to the vault's
// current ones (Token refreshes a token that is due, so a held listen keeps its token fresh).
// A token the caller presented itself (the client-run flow) is not the vault's and is left
// alone; a failure to read a token keeps the one in use.
func (g *Gateway) checkCallerTokens(ctx context.Context, op *Operation, targets []listenTarget) tokenCheck {
	var out tokenCheck
	if g.cfg.CallerTokens == nil {
		return out
	}
	for _, t := range targets {
		if !t.server.CallerToken || t.opts.Token == "" || t.opts.Token == op.Credentials.Bearer {
			continue
		}
		tok, err := g.cfg.CallerTokens.Token(ctx, op.Caller, t.server.Name)
		switch {
		case errors.Is(err, ErrCallerTokenAbsent):
			return tokenCheck{gone: true}
		case err != nil || tok == "" || tok == t.opts.Token:
		default:
			if out.changed == nil {
				out.changed = map[string]string{}
			}
			out.changed[t.server.Name] = tok
		}
	}
	return out
}

// watchCallerTokens checks targets' caller tokens every listenTokenCheck until ctx ends; the
// first check finding a change is sent on the returned channel and ends the watch. Without
// targets holding a vault token it starts nothing and the channel never receives.
func (g *Gateway) watchCallerTokens(ctx context.Context, op *Operation, targets []listenTarget) <-chan *tokenCheck {
	ch := make(chan *tokenCheck, 1)
	if g.cfg.CallerTokens == nil || !holdsVaultToken(op, targets) {
		return ch
	}
	go func() {
		defer g.recovered("listen token check", nil)
		tick := time.NewTicker(g.listenTokenCheck())
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			if c := g.checkCallerTokens(ctx, op, targets); c.gone || c.changed != nil {
				ch <- &c
				return
			}
		}
	}()
	return ch
}

// holdsVaultToken reports whether any target's listener was opened with a vault token.
func holdsVaultToken(op *Operation, targets []listenTarget) bool {
	for _, t := range targets {
		if t.server.CallerToken && t.opts.Token != "" && t.opts.Token != op.Credentials.Bearer {
			return true
		}
	}
	return false
}

// retoken gives r the changed caller tokens: its targets are described again with them, so
// the next set-up opens its upstream listeners with the new tokens. Under ls.mu, as a config
// change moving r (TakeOver) reads r.op.
func (ls *Listens) retoken(r *listenRun, changed map[string]string) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	tokens := maps.Clone(r.op.callerTokens)
	if tokens == nil {
		tokens = map[string]string{}
	}
	maps.Copy(tokens, changed)
	r.op.callerTokens = tokens
	g, old := r.current()
	multi := len(r.servers) > 1
	targets := make([]listenTarget, len(old))
	for i, t := range old {
		t.opts = g.options(t.server, &r.op, multi)
		targets[i] = t
	}
	r.mu.Lock()
	r.targets = targets
	r.mu.Unlock()
}
