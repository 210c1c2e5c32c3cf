package app

import (
	"context"
	"errors"
	"net/http"
	"path/filepath"
	"slices"
	"time"

	"github.com/mcpgw/mcpgw/internal/config"
	"github.com/mcpgw/mcpgw/internal/front"
	"github.com/mcpgw/mcpgw/internal/gateway"
	"github.com/mcpgw/mcpgw/internal/identity"
	"github.com/mcpgw/mcpgw/internal/store"
)

// stdioLaunchers are the commands a stored stdio server may run (by base name): package
// runners and interpreters, as LiteLLM allows. A file's server may run anything; the API,
// reachable over the network, may not name an arbitrary program.
var stdioLaunchers = []string{"npx", "uvx", "uv", "node", "python", "python3", "deno", "bun", "docker"}

// serverRegistry is front.ServerRegistry over the App: the config file's servers, read-only,
// and the stored ones, each change applied at once (Apply with the stored servers read again).
type serverRegistry struct{ a *App }

// Servers returns the file's servers, then the stored ones (when store_model_in_db).
func (r serverRegistry) Servers(ctx context.Context) ([]front.MCPServerView, error) {
	file := r.a.fileCfg.Load()
	out := make([]front.MCPServerView, 0, len(file.Servers))
	for _, s := range file.Servers {
		out = append(out, fileView(s))
	}
	if !r.a.storedEnabled(file) {
		return out, nil
	}
	rows, err := r.a.store.ListServers(ctx)
	if err != nil {
		return nil, err
	}
	for _, row := range rows {
		out = append(out, storedView(row))
	}
	return out, nil
}

// writable refuses a write when servers are not kept in the store.
func (r serverRegistry) writable() (*config.Config, error) {
	file := r.a.fileCfg.Load()
	switch {
	case r.a.store == nil:
		return nil, &front.ServerError{Status: http.StatusServiceUnavailable,
			Msg: "no store: the gateway was started without a data dir or database"}
	case !file.General.StoreModelInDB:
		return nil, &front.ServerError{Status: http.StatusBadRequest,
			Msg: "mcp servers are kept in the database only with general_settings.store_model_in_db: true"}
	}
	return file, nil
}

// Create validates spec as a file's server, stores it and applies it.
func (r serverRegistry) Create(ctx context.Context, spec front.MCPServerSpec, by string) (front.MCPServerView, error) {
	file, err := r.writable()
	if err != nil {
		return front.MCPServerView{}, err
	}
	row := store.MCPServer{ServerID: spec.ServerID, ServerName: spec.ServerName, CreatedBy: by, UpdatedBy: by}
	if row.ServerName == "" {
		row.ServerName = spec.Alias
	}
	if row.ServerName == "" {
		return front.MCPServerView{}, &front.ServerError{Status: http.StatusBadRequest, Param: "server_name", Msg: "server_name is required"}
	}
	if row.ServerID == "" {
		row.ServerID = store.NewID()
	}
	if err := r.prepare(ctx, file, &row, spec, false); err != nil {
		return front.MCPServerView{}, err
	}
	row, err = r.a.store.CreateServer(ctx, row)
	if err != nil {
		return front.MCPServerView{}, storeError(err)
	}
	return storedView(row), r.apply(ctx)
}

// Update changes the stored server spec.ServerID names and applies it.
func (r serverRegistry) Update(ctx context.Context, spec front.MCPServerSpec, by string) (front.MCPServerView, error) {
	file, err := r.writable()
	if err != nil {
		return front.MCPServerView{}, err
	}
	if err := r.notFromFile(ctx, file, spec.ServerID); err != nil {
		return front.MCPServerView{}, err
	}
	row, err := r.a.store.UpdateServer(ctx, spec.ServerID, func(row *store.MCPServer) error {
		if spec.Present["server_name"] {
			row.ServerName = spec.ServerName
		}
		row.UpdatedBy = by
		return r.prepare(ctx, file, row, spec, true)
	})
	if err != nil {
		return front.MCPServerView{}, storeError(err)
	}
	return storedView(row), r.apply(ctx)
}

// Delete removes the stored server id and applies the change.
func (r serverRegistry) Delete(ctx context.Context, id string) error {
	file, err := r.writable()
	if err != nil {
		return err
	}
	if err := r.notFromFile(ctx, file, id); err != nil {
		return err
	}
	if err := r.a.store.DeleteServer(ctx, id); err != nil {
		return storeError(err)
	}
	return r.apply(ctx)
}

// notFromFile refuses a change of a config file's server (one not stored under that id).
func (r serverRegistry) notFromFile(ctx context.Context, file *config.Config, id string) error {
	if _, err := r.a.store.GetServer(ctx, id); err == nil || !errors.Is(err, store.ErrNotFound) {
		return storeError(err)
	}
	if _, ok := config.Routes(file.Servers)[id]; ok {
		return &front.ServerError{Status: http.StatusConflict, Param: "server_id",
			Msg: "mcp server '" + id + "' is defined in the config file and is read-only through the API; change it in the config file"}
	}
	return nil
}

// prepare applies spec to row (every field when creating, the fields spec sets when
// updating), seals its credentials, and checks it: as a file's server would be checked, its
// name, id and alias free among the file's servers and the other stored ones, a stdio command
// among stdioLaunchers, no spec_path (apiSpecPath).
func (r serverRegistry) prepare(ctx context.Context, file *config.Config, row *store.MCPServer, spec front.MCPServerSpec, update bool) error {
	if err := applySpec(r.a.box, row, spec, update); err != nil {
		return err
	}
	s, msg := r.a.storedServer(file, *row)
	if msg != "" {
		return &front.ServerError{Status: http.StatusBadRequest, Msg: msg}
	}
	if s.Transport == config.TransportStdio && !slices.Contains(stdioLaunchers, filepath.Base(s.Command)) {
		return &front.ServerError{Status: http.StatusBadRequest, Param: "command",
			Msg: "command: a stdio server stored through the API runs one of " + joinComma(stdioLaunchers) + "; other programs go in the config file"}
	}
	if err := apiSpecPath(s); err != nil {
		return err
	}
	normalizeSettings(row, s)
	others := slices.Clone(file.Servers)
	rows, err := r.a.store.ListServers(ctx)
	if err != nil {
		return err
	}
	for _, o := range rows {
		if o.ServerID != row.ServerID {
			others = append(others, config.Server{Name: o.ServerName, ServerID: o.ServerID, Alias: o.Alias})
		}
	}
	if msg := config.RouteConflict(s, others); msg != "" {
		return &front.ServerError{Status: http.StatusBadRequest, Msg: msg}
	}
	return nil
}

// apply has the sync goroutine apply the change and returns once a generation with it
// serves. Writes arriving while an Apply runs share the next one (the sync's one slot), so
// a burst of writes does not start an Apply each. The store has the change already, so a
// failed Apply is a 500 that says so; a caller that stops waiting leaves the Apply to go on.
func (r serverRegistry) apply(ctx context.Context) error {
	a := r.a
	seq := a.storedWrites.Add(1)
	a.localPending.Store(true)
	a.kickSync()
	// The write is stored: waiting for the Apply that serves it must not count among the
	// requests that Apply's retirement of this generation waits for (with other writers
	// waiting on the next Apply, that wait would run to its timeout).
	if s := servedOf(ctx); s != nil {
		s.leave()
	}
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	for a.storedApplied.Load() < seq {
		if a.failedUpTo.Load() >= seq {
			return &front.ServerError{Status: http.StatusInternalServerError,
				Msg: "the change was stored but applying it failed; see the gateway log"}
		}
		select {
		case <-tick.C:
		case <-a.syncDone:
			return nil // closing: the change is stored and the next start applies it
		case <-ctx.Done():
			return nil // the change is stored; the Apply goes on
		}
	}
	return nil
}

// storeError turns the store's refusals into the API's; nil stays nil.
func storeError(err error) error {
	var re *store.RefError
	switch {
	case err == nil:
		return nil
	case errors.Is(err, store.ErrServerExists) && errors.As(err, &re):
		return &front.ServerError{Status: http.StatusBadRequest, Param: re.Field, Msg: re.Msg}
	case errors.Is(err, store.ErrNotFound) && errors.As(err, &re):
		return &front.ServerError{Status: http.StatusNotFound, Param: "server_id", Msg: re.Msg}
	}
	return err
}

func joinComma(s []string) string {
	out := ""
	for i, v := range s {
		if i > 0 {
			out += ", "
		}
		out += v
	}
	return out
}

// serverRoutes configures the /v1/mcp/server routes of one generation: its policy decides
// what a caller sees, its front lists the tools.
func (s *shared) serverRoutes(authn *identity.Authenticator, gw *gateway.Gateway, mcpFront *front.MCP) front.MCPServersConfig {
	return front.MCPServersConfig{
		Auth: authn, Registry: s.servers, Health: s.serverHealth, Logger: s.log, Tools: mcpFront.V1Tools,
		Visible: func(c *identity.Caller) []string { return gw.Visible(gateway.Operation{Caller: c}) },
	}
}
