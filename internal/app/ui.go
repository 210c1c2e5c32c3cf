package app

import (
	"net/http"

	"github.com/mcpgw/mcpgw/internal/identity"
	"github.com/mcpgw/mcpgw/internal/observe"
	"github.com/mcpgw/mcpgw/internal/ui"
)

// uiState is the admin UI's process-wide state: its sessions and the live
// activity sink, kept across generations. Nil when the UI is off.
type uiState struct {
	sessions *ui.Sessions
	live     *ui.Live
	upstream func() ui.Upstream
	sep      string
	sso      *ui.SSO // nil: no sign-in through an OpenID provider
}

// newUIState builds the UI's state unless env turns the UI off; upstream
// reads the upstream sessions and listens open for the servers page.
func newUIState(env Env, upstream func() ui.Upstream) (*uiState, error) {
	if env.DisableUI {
		return nil, nil
	}
	u := &uiState{sessions: ui.NewSessions(0, 0, 0), live: ui.NewLive(0, 0), upstream: upstream, sep: env.Separator}
	if env.UISSO != nil {
		sso, err := ui.NewSSO(*env.UISSO)
		if err != nil {
			return nil, err
		}
		u.sso = sso
	}
	return u, nil
}

// upstreamOpen is what the metrics export as mcpgw_upstream_sessions_open
// and mcpgw_listens_open, read now: the current generation's upstream
// sessions per server and the listens running, in all and per server.
func (a *App) upstreamOpen() ui.Upstream {
	out := ui.Upstream{Sessions: map[string]int{}, ListensByServer: map[string]int{}}
	if g := a.cur.Load(); g != nil {
		for name, cl := range g.clients {
			out.Sessions[name] = cl.OpenSessions()
		}
	}
	if a.listens != nil {
		out.Listens = a.listens.Running()
		out.ListensByServer = a.listens.RunningByServer()
	}
	return out
}

// sink is the UI's observe sink; nil (no sink) when the UI is off.
func (u *uiState) sink() observe.Sink {
	if u == nil {
		return nil
	}
	return u.live
}

// register adds the UI's routes for one generation to mux: its sessions are
// checked with authn (SSO identities with claims), and it drives the
// generation's own routes (api).
func (u *uiState) register(mux *http.ServeMux, authn *identity.Authenticator, api http.Handler, claims ui.ClaimsCaller,
	public func(*http.Request) string) {
	if u == nil {
		return
	}
	c := ui.Config{Sessions: u.sessions, Live: u.live, Upstream: u.upstream, Auth: authn.Authenticate, API: api, Detach: detach, Separator: u.sep}
	if u.sso != nil {
		c.SSO, c.Claims, c.PublicBase = u.sso, claims, public
	}
	ui.New(c).Register(mux)
}

// close ends the activity streams (shutdown).
func (u *uiState) close() {
	if u != nil {
		u.live.Close()
	}
}
